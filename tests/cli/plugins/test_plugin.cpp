// Plugins for tests/cli/plugin_test.sh, one library per case (CMake sets PLUGIN_CASE):
//
//   1 good        kernels `addmul` (a + 2·b: two inputs, a signature file beside the library)
//                 and `explode` (always fails with a message)
//   2 no-entry    no tapestry_plugin_kernels at all
//   3 abi         abi_version 999
//   4 builtin     a signature and kernel named `relu` (a built-in)
//   5 twice       kernel `addmul` listed twice
//   6 bad-yaml    a signature that does not parse
//   7 unsigned    a kernel without a signature
//   8 swish       a second `swish` (the example plugin's name)
#include <tapestry/plugin.h>

#include <cstdio>

namespace {

namespace tp = tapestry::plugin;

template <typename T>
[[maybe_unused]] void addmul(const TapestryKernelCall& call) {
  const tp::Cells<const T> a(call, tp::input(call, "a"));
  const tp::Cells<const T> b(call, tp::input(call, "b"));
  const tp::Cells<T> y(call, tp::output(call, "result"));
  tp::for_each_point(call, [&](const int64_t* i) { *y.at(i) = *a.at(i) + T(2) * *b.at(i); });
}

[[maybe_unused]] int run_addmul(const TapestryKernelCall* call, char* error, size_t error_size) {
  return tp::guard(error, error_size, [&] {
    if (call->outputs[0].dtype == TAPESTRY_FLOAT32) {
      addmul<float>(*call);
    } else {
      addmul<double>(*call);
    }
  });
}

[[maybe_unused]] int explode(const TapestryKernelCall* call, char* error, size_t error_size) {
  std::snprintf(error, error_size, "explode: refused %u index dims", call->index_rank);
  return 1;
}

#if PLUGIN_CASE == 1
const TapestryKernel kKernels[] = {{"addmul", run_addmul, nullptr}, {"explode", nullptr, explode}};
const TapestryPlugin kPlugin = {TAPESTRY_PLUGIN_ABI_VERSION, nullptr, "test_plugin_good.yaml",
                                kKernels, 2};
#elif PLUGIN_CASE == 3
const TapestryPlugin kPlugin = {999, nullptr, nullptr, nullptr, 0};
#elif PLUGIN_CASE == 4
const char kRelu[] = R"yaml(
kernel: relu
types: {T: float}
inputs: {x: {shape: "[$d...]", dtype: T}}
outputs: {result: {shape: "[$d...]", dtype: T}}
index: "[$d...]"
ipfs: {x: "[$d...]", result: "[$d...]"}
)yaml";
const TapestryKernel kKernels[] = {{"relu", run_addmul, nullptr}};
const TapestryPlugin kPlugin = {TAPESTRY_PLUGIN_ABI_VERSION, kRelu, nullptr, kKernels, 1};
#elif PLUGIN_CASE == 5
const char kSig[] = R"yaml(
kernel: addmul
types: {T: float}
inputs: {a: {shape: "[$d...]", dtype: T}, b: {shape: "[$d...]", dtype: T}}
outputs: {result: {shape: "[$d...]", dtype: T}}
index: "[$d...]"
ipfs: {a: "[$d...]", b: "[$d...]", result: "[$d...]"}
)yaml";
const TapestryKernel kKernels[] = {{"addmul", run_addmul, nullptr},
                                   {"addmul", run_addmul, nullptr}};
const TapestryPlugin kPlugin = {TAPESTRY_PLUGIN_ABI_VERSION, kSig, nullptr, kKernels, 2};
#elif PLUGIN_CASE == 6
const char kBad[] = "kernel: broken\ntypes: {T: float}\ninputs: {x: {shape: \"[$d...\"}}\n";
const TapestryKernel kKernels[] = {{"broken", run_addmul, nullptr}};
const TapestryPlugin kPlugin = {TAPESTRY_PLUGIN_ABI_VERSION, kBad, nullptr, kKernels, 1};
#elif PLUGIN_CASE == 7
const TapestryKernel kKernels[] = {{"ghost", run_addmul, nullptr}};
const TapestryPlugin kPlugin = {TAPESTRY_PLUGIN_ABI_VERSION, nullptr, nullptr, kKernels, 1};
#elif PLUGIN_CASE == 8
const char kSwish[] = R"yaml(
kernel: swish
types: {T: float}
inputs: {x: {shape: "[$d...]", dtype: T}}
outputs: {result: {shape: "[$d...]", dtype: T}}
index: "[$d...]"
ipfs: {x: "[$d...]", result: "[$d...]"}
)yaml";
const TapestryKernel kKernels[] = {{"swish", run_addmul, nullptr}};
const TapestryPlugin kPlugin = {TAPESTRY_PLUGIN_ABI_VERSION, kSwish, nullptr, kKernels, 1};
#endif

}  // namespace

#if PLUGIN_CASE != 2
extern "C" TAPESTRY_PLUGIN_EXPORT const TapestryPlugin* tapestry_plugin_kernels(void) {
  return &kPlugin;
}
#else
extern "C" TAPESTRY_PLUGIN_EXPORT int not_a_tapestry_plugin(void) {
  return 0;
}
#endif
