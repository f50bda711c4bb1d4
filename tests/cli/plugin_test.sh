#!/usr/bin/env bash
# End-to-end tests of kernel plugins (`--plugin FILE`, $TAPESTRY_PLUGINS; include/tapestry/plugin.h).
#
#   plugin_test.sh TAPESTRY SOURCE_DIR SWISH_PLUGIN TEST_PLUGIN_DIR
#
# 1. The example plugin (examples/plugin): swish.tap runs with --verify on both kernel sets,
#    unsharded and sharded, and its output matches an independent NumPy float64 evaluation.
# 2. Every command that reads kernels takes --plugin; $TAPESTRY_PLUGINS too.
# 3. A test plugin with a signature file beside it runs; a plugin kernel's error names the
#    operation and the library.
# 4. Every load error — missing file, not a shared library, no entry point, another ABI, a name
#    taken (built-in or other plugin), a kernel listed twice, a signature that does not parse, a
#    kernel without a signature — exits 2 naming the library.
set -uo pipefail
tapestry=$1
src=$2
swish=$3
plugins=$4
source "$(dirname "$0")/cli_testing.sh"
python=/usr/bin/python3
graph=$src/examples/plugin/swish.tap
unset TAPESTRY_PLUGINS TAPESTRY_KERNELS

# succeeds NAME PATTERN -- CMD…: CMD exits 0 and its stdout matches PATTERN (grep -E).
succeeds() {
  local name=$1 pattern=$2
  shift 3
  timeout 120 "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [[ $rc -eq 0 ]] && grep -qE -- "$pattern" "$tmp/out"
  check "$name (rc=$rc, stdout /$pattern/)" $?
}

# matches_numpy NAME DIR: DIR/Y.npy equals swish(X·Wᵀ + b) in float64 on $tmp/in within float32
# rounding (the oracle is NumPy's, independent of Tapestry's).
matches_numpy() {
  "$python" - "$tmp/in" "$2" >"$tmp/log" 2>&1 <<'PY'
import sys, numpy as np
i, o = sys.argv[1], sys.argv[2]
x, w, b = (np.load(f"{i}/{n}.npy").astype(np.float64) for n in "XWb")
z = x @ w.T + b
want = z / (1 + np.exp(-z))
got = np.load(f"{o}/Y.npy")
assert got.dtype == np.float32 and got.shape == want.shape, (got.dtype, got.shape)
err = np.abs(got - want).max()
print("max |err|", err)
assert err < 1e-5 * max(1.0, np.abs(want).max()), err
assert np.abs(want).max() > 1  # the data is not trivial
PY
  check "$1 matches NumPy float64" $?
}

[[ -f $swish ]] || { echo "FAIL: no plugin at $swish"; exit 1; }
"$python" - "$tmp/in" <<'PY' || { echo "FAIL: numpy inputs"; exit 1; }
import sys, os, numpy as np
d = sys.argv[1]; os.makedirs(d)
r = np.random.default_rng(7)
np.save(f"{d}/X.npy", r.uniform(-2, 2, (64, 32)).astype(np.float32))
np.save(f"{d}/W.npy", r.uniform(-0.5, 0.5, (48, 32)).astype(np.float32))
np.save(f"{d}/b.npy", r.uniform(-1, 1, 48).astype(np.float32))
PY

# 1. Run, verify, compare with NumPy: fast and reference kernels, unsharded and sharded.
succeeds "run --plugin --verify (fast)" "^PASS   Y" -- \
  "$tapestry" run "$graph" --plugin "$swish" --inputs "$tmp/in" --outputs "$tmp/fast" --verify --quiet
matches_numpy "fast run" "$tmp/fast"
succeeds "run --plugin --verify (reference: bitwise)" "^PASS   Y: bitwise" -- \
  "$tapestry" run "$graph" --plugin "$swish" --inputs "$tmp/in" --outputs "$tmp/ref" --verify \
  --kernels reference --quiet
matches_numpy "reference run" "$tmp/ref"
succeeds "sharded run --verify" "^ran 5 applications of 2 operations" -- \
  "$tapestry" run "$graph" --plugin "$swish" --split Y/linear.batch=2 --split Y.batch=3 \
  --inputs "$tmp/in" --outputs "$tmp/sharded" --verify
grep -q "^PASS   Y" "$tmp/out"; check "sharded run passes --verify" $?
matches_numpy "sharded run" "$tmp/sharded"
succeeds "sharded reference run is bitwise" "^PASS   Y: bitwise" -- \
  "$tapestry" run "$graph" --plugin "$swish" --split Y.batch=2 --split Y.out=2 --kernels reference \
  --inputs "$tmp/in" --outputs "$tmp/sharded_ref" --verify --quiet
cmp -s "$tmp/ref/Y.npy" "$tmp/sharded_ref/Y.npy"; check "sharded reference run equals unsharded bitwise" $?
succeeds "a plugin kernel's path is plugin" "^Y +swish +1 .* plugin$" -- \
  "$tapestry" run "$graph" --plugin "$swish" --inputs "$tmp/in" --metrics "$tmp/paths.json"
python3 -c "
import json, sys
m = json.load(open(sys.argv[1]))
op = {o['operation']: o for o in m['operations']}
assert op['Y']['paths'] == {'plugin': 1} and op['Y']['fallbacks'] == 0, op['Y']
assert m['paths'].get('plugin') == 1 and 'reference' not in m['paths'], m['paths']
" "$tmp/paths.json" >"$tmp/out" 2>"$tmp/err"
check "--metrics counts the plugin's application as plugin" $?
succeeds "verify --plugin" "^PASS   Y" -- \
  "$tapestry" verify "$graph" --plugin "$swish" --inputs "$tmp/in" --outputs "$tmp/sharded"

# 2. Every command that reads kernels; without the plugin the kernel is unknown.
succeeds "kernels --plugin" "^swish +swish\(x\) +x · sigmoid" -- "$tapestry" kernels --plugin "$swish"
succeeds "kernels swish --plugin" "defined in .*\(signatures\)" -- "$tapestry" kernels swish --plugin "$swish"
succeeds "build --plugin" '"kernel": "swish"' -- "$tapestry" build "$graph" --plugin "$swish"
succeeds "shard --plugin" "Y" -- "$tapestry" shard "$graph" --plugin "$swish" --split Y.batch=2
succeeds "plan --plugin" "^Y +swish" -- "$tapestry" plan "$graph" --plugin "$swish"
succeeds "cost --plugin" "." -- "$tapestry" cost "$graph" --plugin "$swish" --target cpu-local --split Y.batch=2
succeeds "explain --plugin" "." -- "$tapestry" explain "$graph" --plugin "$swish" --target cpu-local
succeeds "validate --plugin" "." -- "$tapestry" validate "$graph" --plugin "$swish"
succeeds "print --plugin" "swish" -- "$tapestry" print "$graph" --plugin "$swish"
succeeds "optimize --plugin" "best" -- "$tapestry" optimize "$graph" --plugin "$swish" --target cpu-local \
  --max-evals 20 --quiet
# swish's YAML declares no facts: priced by the stated default, and said once on stderr.
for cmd in "cost --target cpu-local --split Y.batch=2" "run --verify --quiet"; do
  # shellcheck disable=SC2086  # ${cmd%% *} is the command, ${cmd#* } its flags
  "$tapestry" ${cmd%% *} "$graph" --plugin "$swish" ${cmd#* } >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [[ $rc -eq 0 && $(grep -c "swish.tap: warning\[kernel-facts-missing\]: Kernel swish declares no facts" "$tmp/err") -eq 1 ]]
  check "a kernel without facts is a warning, once ($cmd, rc=$rc)" $?
done
TAPESTRY_PLUGINS=":$swish:" "$tapestry" run "$graph" --verify --quiet >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 0 ]] && grep -q "^PASS   Y" "$tmp/out"; check "\$TAPESTRY_PLUGINS loads the plugin" $?
TAPESTRY_PLUGINS="$swish" "$tapestry" kernels swish --plugin "$swish" >"$tmp/out" 2>"$tmp/err"
check "the same library from \$TAPESTRY_PLUGINS and --plugin loads once (rc=$?)" $?
expect "without --plugin the kernel is unknown" 2 "unknown kernel 'swish'" -- "$tapestry" run "$graph"
succeeds "--plugin takes one value (the graph is not swallowed)" '"kernel": "swish"' -- \
  "$tapestry" build --plugin "$swish" "$graph"

# 3. A signature file beside the library; a kernel's own error.
printf 'A: f32[3, 5]\nB: f32[3, 5]\nC = addmul(A, B)\noutput C\n' >"$tmp/addmul.tap"
"$python" - "$tmp/ain" <<'PY'
import sys, os, numpy as np
d = sys.argv[1]; os.makedirs(d)
np.save(f"{d}/A.npy", np.arange(15, dtype=np.float32).reshape(3, 5))
np.save(f"{d}/B.npy", -np.arange(15, dtype=np.float32).reshape(3, 5) / 4)
PY
succeeds "signature file beside the library" "^PASS   C" -- "$tapestry" run "$tmp/addmul.tap" \
  --plugin "$plugins/test_plugin_good.so" --inputs "$tmp/ain" --outputs "$tmp/aout" --verify --split C.d0=3
"$python" -c "
import numpy as np, sys
a = np.arange(15, dtype=np.float32).reshape(3, 5); b = -a / 4
sys.exit(0 if (np.load('$tmp/aout/C.npy') == a + 2 * b).all() else 1)"
check "addmul computes a + 2·b" $?
printf 'A: f32[3, 5]\nB: f32[3, 5]\nC = explode(A, B)\noutput C\n' >"$tmp/explode.tap"
expect "a kernel's error names the operation, its message and the library" 2 \
  "operation 'C' \(kernel explode\): explode: refused 2 index dims \(plugin .*test_plugin_good.so\)" -- \
  "$tapestry" run "$tmp/explode.tap" --plugin "$plugins/test_plugin_good.so"

# 4. Load errors: exit 2, the library named.
echo "not a library" >"$tmp/text.so"
expect "missing file" 2 "plugin $tmp/none.so: no such file" -- \
  "$tapestry" kernels --plugin "$tmp/none.so"
expect "not a shared library" 2 "plugin $tmp/text.so: not a loadable shared library" -- \
  "$tapestry" kernels --plugin "$tmp/text.so"
expect "no entry point" 2 "plugin $plugins/test_plugin_no-entry.so: no entry point tapestry_plugin_kernels" -- \
  "$tapestry" kernels --plugin "$plugins/test_plugin_no-entry.so"
expect "ABI mismatch" 2 "plugin $plugins/test_plugin_abi.so: built against plugin ABI version 999, this tapestry loads version 1" -- \
  "$tapestry" run "$graph" --plugin "$plugins/test_plugin_abi.so"
expect "clash with a built-in" 2 "plugin $plugins/test_plugin_builtin.so: kernel relu .* is already defined" -- \
  "$tapestry" build "$graph" --plugin "$plugins/test_plugin_builtin.so"
expect "a kernel listed twice" 2 "plugin $plugins/test_plugin_twice.so: kernel addmul is registered twice" -- \
  "$tapestry" kernels --plugin "$plugins/test_plugin_twice.so"
expect "a signature that does not parse" 2 "plugin $plugins/test_plugin_bad-yaml.so: $plugins/test_plugin_bad-yaml.so \(signatures\):[0-9]+:[0-9]+: error" -- \
  "$tapestry" kernels --plugin "$plugins/test_plugin_bad-yaml.so"
expect "a kernel without a signature" 2 "plugin $plugins/test_plugin_unsigned.so: kernel ghost has no signature in the plugin" -- \
  "$tapestry" kernels --plugin "$plugins/test_plugin_unsigned.so"
expect "two plugins, one kernel name" 2 "plugin $plugins/test_plugin_swish.so: kernel swish .* is already defined" -- \
  "$tapestry" shard "$graph" --plugin "$swish" --plugin "$plugins/test_plugin_swish.so"
expect "\$TAPESTRY_PLUGINS errors name the library too" 2 "plugin $tmp/none.so: no such file" -- \
  env TAPESTRY_PLUGINS="$tmp/none.so" "$tapestry" plan "$graph"

finish
