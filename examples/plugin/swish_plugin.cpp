// A kernel plugin (tapestry/plugin.h): `swish(x) = x · sigmoid(x) = x / (1 + e^−x)`, elementwise.
//
//   c++ -std=c++17 -O2 -shared -fPIC -I include examples/plugin/swish_plugin.cpp -o libswish.so
//   tapestry run examples/plugin/swish.tap --plugin ./libswish.so --verify
//
// CMake builds it as build/<preset>/examples/libswish.so (a MODULE library). The kernel has two
// functions: the reference one locates every point's cell through the IPFs, the fast one walks
// each row of the index box by pointer (a contiguous row is a plain loop). Both evaluate the same
// expression in the same type, so they give the same bits.
#include <tapestry/plugin.h>

#include <cmath>
#include <stdexcept>

namespace {

namespace tp = tapestry::plugin;

// The signature: the YAML a kernel file holds (docs/metakernels.md). Any rank, float dtypes.
const char kSignature[] = R"yaml(
kernel: swish
summary: "x · sigmoid(x), elementwise (a plugin: examples/plugin/swish_plugin.cpp)"
types: {T: float}
inputs:
  x: {shape: "[$d...]", dtype: T}
outputs:
  result: {shape: "[$d...]", dtype: T}
index: "[$d...]"
ipfs: {x: "[$d...]", result: "[$d...]"}
)yaml";

template <typename T>
T swish(T v) {
  return v / (T(1) + std::exp(-v));
}

template <typename T>
void reference(const TapestryKernelCall& call) {
  const tp::Cells<const T> x(call, tp::input(call, "x"));
  const tp::Cells<T> y(call, tp::output(call, "result"));
  tp::for_each_point(call, [&](const int64_t* i) { *y.at(i) = swish(*x.at(i)); });
}

template <typename T>
void fast(const TapestryKernelCall& call) {
  const tp::Cells<const T> x(call, tp::input(call, "x"));
  const tp::Cells<T> y(call, tp::output(call, "result"));
  const uint32_t last = call.index_rank == 0 ? 0 : call.index_rank - 1;
  const int64_t n = call.index_rank == 0 ? 1 : call.index_end[last] - call.index_start[last];
  const int64_t sx = call.index_rank == 0 ? 0 : x.step(last);
  const int64_t sy = call.index_rank == 0 ? 0 : y.step(last);
  tp::for_each_row(call, [&](const int64_t* i) {
    const T* in = x.at(i);
    T* out = y.at(i);
    if (sx == 1 && sy == 1) {
      for (int64_t k = 0; k < n; ++k) out[k] = swish(in[k]);
    } else {
      for (int64_t k = 0; k < n; ++k) out[k * sy] = swish(in[k * sx]);
    }
  });
}

// One entry per kernel set; float64 too: --verify's oracle runs every kernel in float64.
template <void (*F32)(const TapestryKernelCall&), void (*F64)(const TapestryKernelCall&)>
int run(const TapestryKernelCall* call, char* error, size_t error_size) {
  return tp::guard(error, error_size, [&] {
    switch (tp::output(*call, "result").dtype) {
      case TAPESTRY_FLOAT32:
        return F32(*call);
      case TAPESTRY_FLOAT64:
        return F64(*call);
      default:
        throw std::invalid_argument("swish: expected float32 or float64");
    }
  });
}

const TapestryKernel kKernels[] = {
    {"swish", run<reference<float>, reference<double>>, run<fast<float>, fast<double>>}};

}  // namespace

extern "C" TAPESTRY_PLUGIN_EXPORT const TapestryPlugin* tapestry_plugin_kernels(void) {
  static const TapestryPlugin plugin = {TAPESTRY_PLUGIN_ABI_VERSION, kSignature, nullptr, kKernels,
                                        sizeof kKernels / sizeof kKernels[0]};
  return &plugin;
}
