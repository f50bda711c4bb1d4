#!/usr/bin/env bash
# `make lint`: clang-format check on every tracked C++ file, then clang-tidy (checks in
# .clang-tidy) on the library and CLI sources, using the build's compile_commands.json.
set -uo pipefail
build=${1:?usage: lint.sh BUILD_DIR}
cd "$(dirname "$0")/.."
status=0

mapfile -t files < <(git ls-files '*.h' '*.cpp')
if ! clang-format --dry-run --Werror "${files[@]}"; then
  echo "lint: clang-format would change the files above (run: make format)" >&2
  status=1
fi

mapfile -t sources < <(git ls-files 'src/*.cpp')
if ! clang-tidy -p "$build" --quiet "${sources[@]}" 2>/dev/null | grep -E 'warning:|error:' ; then
  echo "lint: clang-tidy clean (${#sources[@]} files)"
else
  echo "lint: clang-tidy found the problems above" >&2
  status=1
fi
exit $status
