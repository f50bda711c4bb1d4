#!/usr/bin/env bash
# Packs what scripts/gpu-check.sh needs on a GPU machine that has CUDA but none of our Debian
# libraries (docs/gpu.md, "The one-command check"): the `tapestry` binary, the GPU test binaries
# and every shared library they load that the GPU machine cannot be expected to have, as one xz
# tarball, .devpack/tapestry-devpack.tar.xz (gitignored), with a MANIFEST. Runs HERE, on the
# build machine; the repository working tree plus .devpack travel to the GPU machine.
#
#   scripts/gpu-pack.sh                 # from build/ci
#   scripts/gpu-pack.sh build/release   # another build directory
#
# Packed: bin/tapestry, tests/<every executable of BUILD/tests/gpu>, lib/<every library `ldd`
# resolves for them>, except
#   - the CUDA libraries (libcuda, libcudart, libcublas*, libcudnn*, libnccl, libnvrtc, …): the GPU
#     machine's driver and toolkit (or its PyTorch wheels) provide them, and they must match its
#     driver; gpu-check.sh finds them there;
#   - glibc (libc, libm, ld-linux, libpthread, libdl, librt, …) and the compiler runtime libstdc++
#     and libgcc_s: the GPU machine's are newer (Ubuntu 24.04), hence compatible, and a second
#     copy of them in one process breaks the first one loaded.
# The Python module is not packed: it is built for this machine's Python (3.11), which the GPU
# machine does not have.
# Exit: 0 packed (its size printed; a warning above 40 MiB), 1 a binary is missing or a library
# does not resolve here.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-build/ci}
[[ $build = /* ]] || build=$root/$build
out_dir=$root/.devpack
tarball=$out_dir/tapestry-devpack.tar.xz
limit_mib=40

die() { echo "gpu-pack: $*" >&2; exit 1; }
[[ -d $build ]] || die "no build directory $build (cmake --preset ci && cmake --build build/ci)"
[[ -x $build/src/cli/tapestry ]] || die "$build/src/cli/tapestry is missing: build the 'tapestry' target"

binaries=("$build/src/cli/tapestry")
tests=()
if [[ -d $build/tests/gpu ]]; then
  while IFS= read -r -d '' t; do tests+=("$t"); done < <(
    find "$build/tests/gpu" -maxdepth 1 -type f -perm -u+x -name '*test*' -print0 | sort -z)
fi
[[ ${#tests[@]} -gt 0 ]] || echo "gpu-pack: warning: no GPU test binaries in $build/tests/gpu" >&2

# Libraries the GPU machine provides itself (see above): matched on the soname.
provided='^(linux-vdso|ld-linux|libc|libm|libpthread|libdl|librt|libutil|libresolv|libmvec|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libcudnn[a-z_]*|libnccl|libnvrtc|libnvJitLink|libnvrtc-builtins|libcufft|libcurand|libcusparse|libcusolver|libnvToolsExt|libcupti|libnvidia-[a-z-]*)\.so'

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
pack=$stage/devpack
mkdir -p "$pack/bin" "$pack/tests" "$pack/lib"
cp "${binaries[@]}" "$pack/bin/"
[[ ${#tests[@]} -eq 0 ]] || cp "${tests[@]}" "$pack/tests/"

declare -A libs=() cuda_needed=()
for exe in "${binaries[@]}" "${tests[@]}"; do
  # ldd lists the whole closure; "not found" here means the binary would not run here either.
  while read -r name arrow path _; do
    [[ $arrow == "=>" ]] || continue
    if [[ $path == "not" ]]; then
      if [[ $name =~ $provided ]]; then cuda_needed[$name]=1; continue; fi
      die "$(basename "$exe") needs $name, which does not resolve here"
    fi
    if [[ $name =~ $provided ]]; then
      [[ $name =~ ^(libcu|libnccl|libnv) ]] && cuda_needed[$name]=1
      continue
    fi
    [[ $path == /usr/local/cuda* ]] && { cuda_needed[$name]=1; continue; }
    libs[$name]=$path
  done < <(ldd "$exe")
done
for name in "${!libs[@]}"; do cp -L "${libs[$name]}" "$pack/lib/$name"; done

# Open MPI loads its components (mca_*.so) from its install prefix at MPI_Init; the GPU machine
# has none, so nothing packed here may call MPI_Init there (the NCCL test bootstraps without MPI).
{
  echo "packed_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(
    git -C "$root" diff --quiet HEAD 2>/dev/null || echo +dirty)"
  echo "source_dir=$root"
  echo "build_dir=$build"
  echo "binaries=$(cd "$pack" && shopt -s nullglob && echo bin/* tests/*)"
  echo "cuda_libraries=$(printf '%s\n' "${!cuda_needed[@]}" | sort | tr '\n' ' ')"
} >"$pack/MANIFEST"

mkdir -p "$out_dir"
rm -f "$tarball"
unpacked=$(du -sm "$pack" | cut -f1)
XZ_OPT="-6 -T2" nice -n 19 tar -C "$stage" -cJf "$tarball" devpack
size=$(stat -c %s "$tarball")
mib=$(awk -v s="$size" 'BEGIN { printf "%.1f", s / 1048576 }')
echo "gpu-pack: $tarball: $mib MiB (${unpacked} MiB unpacked): ${#binaries[@]} binary, ${#tests[@]} GPU test binaries, ${#libs[@]} libraries"
echo "gpu-pack: CUDA libraries the GPU machine must provide: $(printf '%s\n' "${!cuda_needed[@]}" | sort | tr '\n' ' ')"
if awk -v s="$size" -v l="$limit_mib" 'BEGIN { exit !(s > l * 1048576) }'; then
  echo "gpu-pack: warning: above $limit_mib MiB; the working tree and .devpack travel together (≤ 64 MiB)" >&2
fi
