// The runtime against graphs the metakernel module builds (kernels/*.yaml through the C++
// builder): every built-in kernel runs on the naive executor and agrees bitwise with the
// hand-built graphs of kernel_graphs.h (so those graphs' ports and IPFs are the metakernels'),
// and sharding the builder's graphs keeps results bitwise identical.
#include <functional>

#include <gtest/gtest.h>

#include "kernel_graphs.h"
#include "run_helpers.h"
#include "tapestry/ir/dialect.h"
#include "tapestry/metakernel/builder.h"
#include "tapestry/metakernel/builder_ops.h"
#include "tapestry/runtime/compare.h"
#include "tapestry/runtime/input_generation.h"
#include "tapestry/zspace/format.h"

namespace tapestry::runtime {
namespace {

namespace mk = tapestry::metakernel;
using namespace testing;  // NOLINT: test helpers

mk::TensorType f32(Range range) {
  return {mk::DType::kFloat32, std::move(range)};
}

struct Case {
  std::string name;
  std::function<mk::Tensor(mk::Graph&)> build;
  std::function<Built(GraphBuilder&)> hand;
};

std::vector<Case> cases() {
  const Range x_range({-40, 20}, {-34, 27});  // [6, 7]
  return {
      {"linear",
       [=](mk::Graph& g) {
         return mk::linear(g.input("X", f32(x_range)), g.input("W", mk::DType::kFloat32, {5, 7}),
                           g.input("b", mk::DType::kFloat32, {5}));
       },
       [=](GraphBuilder& b) {
         return add_linear(b, b.tensor("X", "float32", x_range),
                           b.tensor("W", "float32", Range::of_shape({5, 7})),
                           b.tensor("b", "float32", Range::of_shape({5})));
       }},
      {"matmul",
       [](mk::Graph& g) {
         return mk::matmul(g.input("A", mk::DType::kFloat32, {2, 1, 3, 4}),
                           g.input("B", mk::DType::kFloat32, {3, 4, 5}));
       },
       [](GraphBuilder& b) {
         return add_matmul(b, b.tensor("A", "float32", Range::of_shape({2, 1, 3, 4})),
                           b.tensor("B", "float32", Range::of_shape({3, 4, 5})), Point{2, 3});
       }},
      {"gelu", [=](mk::Graph& g) { return mk::gelu(g.input("X", f32(x_range))); },
       [=](GraphBuilder& b) { return add_unary(b, "gelu", b.tensor("X", "float32", x_range)); }},
      {"sub broadcast",
       [](mk::Graph& g) {
         return mk::sub(g.input("A", mk::DType::kFloat32, {3, 1, 5}),
                        g.input("B", mk::DType::kFloat32, {4, 5}));
       },
       [](GraphBuilder& b) {
         return add_binary(b, "sub", b.tensor("A", "float32", Range::of_shape({3, 1, 5})),
                           b.tensor("B", "float32", Range::of_shape({4, 5})), Point{3, 4, 5});
       }},
      {"maximum",
       [=](mk::Graph& g) {
         return mk::max(g.input("A", f32(x_range)), g.input("B", mk::DType::kFloat32, {7}));
       },
       [=](GraphBuilder& b) {
         return add_binary(b, "maximum", b.tensor("A", "float32", x_range),
                           b.tensor("B", "float32", Range::of_shape({7})), Point{6, 7});
       }},
      {"bias_add",
       [=](mk::Graph& g) {
         return mk::bias_add(g.input("X", f32(x_range)), g.input("b", mk::DType::kFloat32, {7}));
       },
       [=](GraphBuilder& b) {
         return add_bias_add(b, b.tensor("X", "float32", x_range),
                             b.tensor("b", "float32", Range::of_shape({7})));
       }},
      {"sum over dim 0", [=](mk::Graph& g) { return mk::sum(g.input("X", f32(x_range)), 0); },
       [=](GraphBuilder& b) {
         return add_reduction(b, "sum", b.tensor("X", "float32", x_range), 0);
       }},
      {"max over the last dim",
       [=](mk::Graph& g) { return mk::max(g.input("X", f32(x_range)), -1); },
       [=](GraphBuilder& b) {
         return add_reduction(b, "max", b.tensor("X", "float32", x_range), 1);
       }},
      {"reduce min",
       [=](mk::Graph& g) { return mk::reduce(g.input("X", f32(x_range)), ir::Monoid::kMin); },
       [=](GraphBuilder& b) {
         return add_reduce(b, b.tensor("X", "float32", x_range), ir::Monoid::kMin);
       }},
      {"softmax", [=](mk::Graph& g) { return mk::softmax(g.input("X", f32(x_range))); },
       [=](GraphBuilder& b) { return add_softmax(b, b.tensor("X", "float32", x_range)); }},
      {"transpose", [=](mk::Graph& g) { return mk::transpose(g.input("X", f32(x_range))); },
       [=](GraphBuilder& b) {
         return add_permute(b, "transpose", b.tensor("X", "float32", x_range), {1, 0});
       }},
      {"permute",
       [](mk::Graph& g) {
         return mk::permute(g.input("X", mk::DType::kFloat32, {2, 3, 4}), {2, 0, 1});
       },
       [](GraphBuilder& b) {
         return add_permute(b, "permute", b.tensor("X", "float32", Range::of_shape({2, 3, 4})),
                            {2, 0, 1});
       }},
      {"reshape split",
       [](mk::Graph& g) {
         return mk::reshape(g.input("X", f32(Range({-6}, {6}))), {3, 4});
       },
       [](GraphBuilder& b) {
         return add_reshape(b, b.tensor("X", "float32", Range({-6}, {6})), Point{3, 4}, Point{3, 4},
                            {{4, 1}}, {{1, 0}, {0, 1}});
       }},
      {"pad",
       [](mk::Graph& g) {
         return mk::pad(g.input("X", f32(Range({0, 0, -2, 3}, {2, 3, 2, 8}))), 2, 0.5);
       },
       [](GraphBuilder& b) {
         return add_pad(b, b.tensor("X", "float32", Range({0, 0, -2, 3}, {2, 3, 2, 8})), 2, 0.5);
       }},
      {"conv2d stride 2",
       [](mk::Graph& g) {
         return mk::conv2d(g.input("X", f32(Range({0, 0, -3, -3}, {2, 3, 6, 5}))),
                           g.input("W", mk::DType::kFloat32, {4, 3, 3, 2}), {.stride = 2});
       },
       [](GraphBuilder& b) {
         return add_conv2d(b, b.tensor("X", "float32", Range({0, 0, -3, -3}, {2, 3, 6, 5})),
                           b.tensor("W", "float32", Range::of_shape({4, 3, 3, 2})), 2);
       }},
  };
}

// Applications over a grid of every operation's index: up to 3 parts per non-reduction dim.
void shard_every_operation(ir::Graph& graph) {
  std::vector<ir::OperationId> ops(graph.operations().begin(), graph.operations().end());
  for (ir::OperationId op : ops) {
    const ir::OperationView view = graph.operation(op);
    const Range index = *view.ipf_index();
    std::vector<std::int64_t> parts;
    for (std::size_t d = 0; d < index.rank(); ++d) {
      parts.push_back(view.reduction(d)
                          ? 1
                          : std::max<std::int64_t>(1, std::min<std::int64_t>(index.extent(d), 3)));
    }
    for (const Range& box : index.split_grid(parts)) add_application(graph, op, box);
  }
}

TEST(MetakernelGraphs, NaiveMatchesHandBuiltAndShardsBitwise) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    mk::Graph builder(mk::builtin_signatures(), {.add_application = false});
    const ir::TensorId result = c.build(builder).id();
    ir::Graph graph = builder.take();
    GraphBuilder hand;
    const Built built = c.hand(hand);

    const BufferMap mk_out = NaiveExecutor(graph).run(generate_inputs(graph, {.seed = 4}));
    const BufferMap hand_out =
        NaiveExecutor(hand.graph).run(generate_inputs(hand.graph, {.seed = 4}));
    const BufferComparison same = compare_buffers(mk_out.at(result), hand_out.at(built.result));
    EXPECT_TRUE(same.bitwise_equal) << same.summary();

    shard_every_operation(graph);
    const ir::ValidationReport report = ir::validate(graph, ir::Dialect::application());
    EXPECT_TRUE(report.is_valid())
        << report.issues.size()
        << " issue(s), first: " << (report.issues.empty() ? "" : report.issues[0].summary);
    const BufferMap inputs = generate_inputs(graph, {.seed = 9});
    const TensorsComparison sharded =
        compare_tensors(graph, NaiveExecutor(graph).run(inputs),
                        ApplicationExecutor(graph).run(inputs), std::vector<ir::TensorId>{result});
    EXPECT_TRUE(sharded.all_bitwise_equal()) << sharded.summary();
  }
}

TEST(MetakernelGraphs, PaddedConvChain) {
  // conv2d with padding is sugar for pad + conv2d; then relu. Every op sharded.
  mk::Graph builder(mk::builtin_signatures(), {.add_application = false});
  mk::Tensor x = builder.input("X", mk::DType::kFloat64, {2, 3, 6, 6});
  mk::Tensor w = builder.input("W", mk::DType::kFloat64, {4, 3, 3, 3});
  const ir::TensorId y =
      builder.assign("Y", mk::relu(mk::conv2d(x, w, {.stride = 1, .padding = 1}))).id();
  ir::Graph graph = builder.take();
  EXPECT_EQ(graph.operations().size(), 3u);
  shard_every_operation(graph);
  const BufferMap inputs = generate_inputs(graph, {.seed = 21});
  const BufferMap naive = NaiveExecutor(graph).run(inputs);
  EXPECT_EQ(naive.at(y).range(), Range::of_shape({2, 4, 6, 6}));
  EXPECT_TRUE(compare_tensors(graph, naive, ApplicationExecutor(graph).run(inputs),
                              std::vector<ir::TensorId>{y})
                  .all_bitwise_equal());
}

}  // namespace
}  // namespace tapestry::runtime
