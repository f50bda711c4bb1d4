// Plugin kernels (runtime/plugins.h, tapestry/plugin.h) without a shared library: a C kernel
// written with the header's helpers, run through plugin_kernel, must address cells as the
// built-in kernels do — through a transposing IPF, on tensors that start at negative
// coordinates, on whole operations and on shards — and its errors must name the operation and
// the library. (Loading real libraries, and every load error: tests/cli/plugin_test.sh.)
#include <gmock/gmock.h>

#include "tapestry/metakernel/builder.h"
#include "tapestry/metakernel/loader.h"
#include "tapestry/plugin.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/runtime/application_executor.h"
#include "tapestry/runtime/compare.h"
#include "tapestry/runtime/input_generation.h"
#include "tapestry/runtime/naive_executor.h"
#include "tapestry/runtime/plugins.h"
#include "tapestry/runtime/tensor_map.h"
#include "tapestry/support/error.h"

namespace tapestry::runtime {
namespace {

namespace mk = tapestry::metakernel;
namespace tp = tapestry::plugin;
using ::testing::HasSubstr;

// `swap(x)`: result[i, j] = x[j, i], the IPF of x transposing the index.
const char kSwap[] = R"yaml(
kernel: swap
types: {T: any}
inputs: {x: {shape: "[$a, $b]", dtype: T}}
outputs: {result: {shape: "[$b, $a]", dtype: T}}
index: "[$b, $a]"
ipfs: {x: "[$a, $b]", result: "[$b, $a]"}
)yaml";

template <typename T>
void swap_points(const TapestryKernelCall& call) {
  const tp::Cells<const T> x(call, tp::input(call, "x"));
  const tp::Cells<T> y(call, tp::output(call, "result"));
  tp::for_each_point(call, [&](const int64_t* i) { *y.at(i) = *x.at(i); });
}

// The same by rows, walking with step() (x's step along the last index dim is a row of x).
template <typename T>
void swap_rows(const TapestryKernelCall& call) {
  const tp::Cells<const T> x(call, tp::input(call, "x"));
  const tp::Cells<T> y(call, tp::output(call, "result"));
  const int64_t n = call.index_end[1] - call.index_start[1];
  tp::for_each_row(call, [&](const int64_t* i) {
    const T* in = x.at(i);
    T* out = y.at(i);
    for (int64_t k = 0; k < n; ++k) out[k * y.step(1)] = in[k * x.step(1)];
  });
}

template <void (*F32)(const TapestryKernelCall&), void (*F64)(const TapestryKernelCall&)>
int run_swap(const TapestryKernelCall* call, char* error, size_t error_size) {
  return tp::guard(error, error_size, [&] {
    if (call->inputs[0].dtype == TAPESTRY_FLOAT32) {
      F32(*call);
    } else if (call->inputs[0].dtype == TAPESTRY_FLOAT64) {
      F64(*call);
    } else {
      throw std::invalid_argument("swap: a float dtype, please");
    }
  });
}

mk::SignatureRegistry signatures() {
  mk::SignatureRegistry r = mk::SignatureRegistry::with_builtins();
  for (mk::Metakernel& k :
       mk::parse_kernels(std::make_shared<const mk::SourceFile>("swap.yaml", kSwap), {})) {
    r.add(std::move(k));
  }
  return r;
}

// X at [-3:5, 2:9] (shape 8 × 7), Y = swap(X), and the same by the built-in transpose.
struct Graphs {
  ir::Graph swap, transpose;
};

Graphs graphs(const mk::SignatureRegistry& s, ir::DType dtype) {
  const mk::TensorType t{dtype, Range({-3, 2}, {5, 9})};
  mk::Graph a(s), b(s);
  a.output(a.assign("Y", a.call("swap", {a.input("X", t)})));
  b.output(b.assign("Y", b.call("transpose", {b.input("X", t)})));
  return {a.take(), b.take()};
}

Buffer output_of(const ir::Graph& g, const BufferMap& values) {
  return values.at(find_tensor(g, "Y"));
}

TEST(PluginKernels, AddressCellsThroughTheIpfsLikeTheBuiltIns) {
  const mk::SignatureRegistry s = signatures();
  for (ir::DType dtype : {ir::DType::kFloat32, ir::DType::kFloat64}) {
    const Graphs g = graphs(s, dtype);
    const BufferMap in = generate_inputs(g.swap, {.seed = 3});
    const Buffer want = output_of(
        g.transpose,
        NaiveExecutor(g.transpose, ExecutableKernels::reference())
            .run(BufferMap{{find_tensor(g.transpose, "X"), in.at(find_tensor(g.swap, "X"))}}));
    for (TapestryKernelFn fn : {&run_swap<swap_points<float>, swap_points<double>>,
                                &run_swap<swap_rows<float>, swap_rows<double>>}) {
      ExecutableKernels kernels = ExecutableKernels::reference();
      kernels.add("swap", plugin_kernel(fn, "libswap.so"));
      // The whole operation, then 2 × 3 shards (sub-boxes of both tensors).
      const Buffer whole = output_of(g.swap, NaiveExecutor(g.swap, kernels).run(in));
      EXPECT_TRUE(compare_buffers(want, whole).bitwise_equal) << ir::dtype_name(dtype);
      rewrite::Plan plan;
      rewrite::add_split_shorthand(plan, "Y.b=2");
      rewrite::add_split_shorthand(plan, "Y.a=3");
      const rewrite::LowerResult lowered =
          rewrite::lower(g.swap, plan, {.driver = {}, .validate = true, .signatures = &s});
      ASSERT_EQ(lowered.graph.applications().size(), 6u);
      BufferMap shard_in{{find_tensor(lowered.graph, "X"), in.at(find_tensor(g.swap, "X"))}};
      const Buffer sharded = output_of(
          lowered.graph, ApplicationExecutor(lowered.graph, kernels).run(std::move(shard_in)));
      EXPECT_TRUE(compare_buffers(want, sharded).bitwise_equal) << ir::dtype_name(dtype);
    }
  }
}

TEST(PluginKernels, AKernelsErrorNamesTheOperationAndTheLibrary) {
  const mk::SignatureRegistry s = signatures();
  const Graphs g = graphs(s, ir::DType::kInt32);  // swap refuses ints
  ExecutableKernels kernels = ExecutableKernels::reference();
  kernels.add("swap", plugin_kernel(&run_swap<swap_points<float>, swap_points<double>>,
                                    "plugins/libswap.so"));
  try {
    (void)NaiveExecutor(g.swap, kernels).run(generate_inputs(g.swap, {.seed = 1}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("(kernel swap): swap: a float dtype, please (plugin "
                                    "plugins/libswap.so)"));
  }
}

TEST(PluginKernels, ForEachPointVisitsEveryPointOnceAndEmptyBoxesNone) {
  const int64_t start[] = {-1, 4, 0}, end[] = {1, 7, 2}, empty_end[] = {1, 4, 2};
  TapestryKernelCall call{};
  call.index_rank = 3;
  call.index_start = start;
  call.index_end = end;
  std::vector<std::vector<int64_t>> seen;
  tp::for_each_point(call, [&](const int64_t* i) { seen.push_back({i[0], i[1], i[2]}); });
  ASSERT_EQ(seen.size(), 12u);
  EXPECT_EQ(seen.front(), (std::vector<int64_t>{-1, 4, 0}));
  EXPECT_EQ(seen[1], (std::vector<int64_t>{-1, 4, 1}));
  EXPECT_EQ(seen.back(), (std::vector<int64_t>{0, 6, 1}));
  int rows = 0;
  tp::for_each_row(call, [&](const int64_t* i) { rows += i[2] == 0 ? 1 : 100; });
  EXPECT_EQ(rows, 6);
  call.index_end = empty_end;
  int calls = 0;
  tp::for_each_point(call, [&](const int64_t*) { ++calls; });
  tp::for_each_row(call, [&](const int64_t*) { ++calls; });
  EXPECT_EQ(calls, 0);
  call.index_rank = 0;  // a scalar: one point
  tp::for_each_point(call, [&](const int64_t*) { ++calls; });
  tp::for_each_row(call, [&](const int64_t*) { ++calls; });
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace tapestry::runtime
