// Graph model: building, typed views, lookup, keys, relations, topological order.
#include "tapestry/ir/graph.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "ir_testing.h"

namespace tapestry::ir {
namespace {

using testing::zr;

TEST(GraphTest, BuildsTensorsAndOperationsWithTypedViews) {
  Graph g;
  TensorId x =
      g.add_tensor({.dtype = DType::kFloat32, .range = zr("zr[0:10, 0:5]")}, {.label = "X"});
  TensorId z =
      g.add_tensor({.dtype = DType::kFloat32, .range = zr("zr[0:10, 0:5]")}, {.label = "Z"});
  OperationBody body{.kernel = "relu"};
  body.inputs.append("x", {x, zr("zr[0:10, 0:5]")});
  body.outputs.append("y", {z, zr("zr[0:10, 0:5]")});
  OperationId op = g.add_operation(std::move(body), {.label = "relu"});

  EXPECT_EQ(g.size(), 3u);
  EXPECT_EQ(g.tensor(x).dtype(), DType::kFloat32);
  EXPECT_EQ(g.tensor(x).range(), zr("zr[0:10, 0:5]"));
  EXPECT_EQ(g.tensor(x).label(), "X");
  EXPECT_EQ(g.operation(op).kernel(), "relu");
  ASSERT_EQ(g.operation(op).inputs().list("x").size(), 1u);
  EXPECT_EQ(g.operation(op).inputs().list("x")[0].tensor, x);
  EXPECT_EQ(g.kind(op), NodeKind::kOperation);
  EXPECT_EQ(g.node(op).type(), kOperationTypeUrl);
}

// The name users see is the label, else the key; find_named finds a node of one kind by it, and
// a label two nodes of that kind share finds none (the count says why).
TEST(GraphTest, DisplayNamesAndFindingByThem) {
  Graph g;
  const auto range = zr("zr[0:4]");
  const TensorId x = g.add_tensor({.dtype = DType::kFloat32, .range = range}, {.label = "Y"});
  const TensorId y = g.add_tensor({.dtype = DType::kFloat32, .range = range}, {.label = "Y"});
  const TensorId bare = g.add_tensor({.dtype = DType::kFloat32, .range = range});
  OperationBody body{.kernel = "relu"};
  body.inputs.append("x", {x, range});
  body.outputs.append("result", {y, range});
  const OperationId op = g.add_operation(std::move(body), {.label = "Y"});

  EXPECT_EQ(g.display_name(op), "Y");
  EXPECT_EQ(g.node(bare).display_name(), g.key(bare));
  EXPECT_EQ(g.display_name(bare), std::string(g.key(bare)));

  const Graph::Named named_op = g.find_named(NodeKind::kOperation, "Y");
  EXPECT_EQ(named_op.node, NodeId(op));  // the tensors labelled Y are of another kind
  EXPECT_EQ(named_op.labelled, 1u);
  const Graph::Named twice = g.find_named(NodeKind::kTensor, "Y");
  EXPECT_EQ(twice.node, std::nullopt);
  EXPECT_EQ(twice.labelled, 2u);
  EXPECT_EQ(g.find_named(NodeKind::kTensor, g.key(bare)).node, NodeId(bare));     // by key
  EXPECT_EQ(g.find_named(NodeKind::kOperation, g.key(bare)).node, std::nullopt);  // wrong kind
  EXPECT_EQ(g.find_named(NodeKind::kTensor, "Z").node, std::nullopt);
  const NodeId removed[] = {op};
  g.remove(removed);
  EXPECT_EQ(g.find_named(NodeKind::kOperation, "Y").node, std::nullopt);
  EXPECT_EQ(g.find_named(NodeKind::kOperation, g.key(op)).node, std::nullopt);
}

TEST(GraphTest, CheckedNarrowingOfIds) {
  auto a = testing::add_graph();
  NodeId any = a.op;
  EXPECT_EQ(a.g.as_operation(any), a.op);
  EXPECT_EQ(a.g.as_tensor(any), std::nullopt);
  EXPECT_EQ(a.g.as_tensor(a.x), a.x);
  EXPECT_EQ(a.g.as_application(any), std::nullopt);
  EXPECT_EQ(a.g.as_note(NodeId(999)), std::nullopt);  // not a node of this graph
}

TEST(GraphTest, GeneratedKeysAreDeterministicUuidShapes) {
  Graph a;
  Graph b;
  TensorId ta = a.add_tensor({.dtype = DType::kInt32, .range = zr("zr[0:1]")});
  TensorId tb = b.add_tensor({.dtype = DType::kInt32, .range = zr("zr[0:1]")});
  EXPECT_EQ(a.key(ta), b.key(tb));
  EXPECT_EQ(a.key(ta), "00000000-0000-4000-8000-000000000001");
  EXPECT_EQ(a.key(ta).size(), 36u);
}

TEST(GraphTest, GeneratedKeysSkipTakenOnes) {
  Graph g;
  g.add_tensor({.dtype = DType::kInt32, .range = zr("zr[0:1]")},
               {.key = "00000000-0000-4000-8000-000000000001"});
  TensorId t = g.add_tensor({.dtype = DType::kInt32, .range = zr("zr[0:1]")});
  EXPECT_EQ(g.key(t), "00000000-0000-4000-8000-000000000002");
}

// Generated keys above every given key of their shape skip the key index; find() must still
// see every key, and the sequence of generated keys must not change.
TEST(GraphTest, FindsGeneratedAndGivenKeysAlike) {
  Graph g;
  auto key = [](std::uint64_t n) { return fmt::format("00000000-0000-4000-8000-{:012x}", n); };
  const NodeId five = g.add_note("given", {.key = key(5)});
  const NodeId two = g.add_note("given", {.key = key(2)});
  // Near misses of the generated shape: an upper-case digit, a high part no serial has.
  const NodeId upper = g.add_note("given", {.key = "00000000-0000-4000-8000-00000000000A"});
  const NodeId high = g.add_note("given", {.key = "00010000-0000-4000-8000-000000000001"});
  std::vector<NodeId> generated;
  for (int i = 0; i < 300; ++i) generated.push_back(g.add_note("generated"));
  EXPECT_EQ(g.key(generated[0]), key(1));
  EXPECT_EQ(g.key(generated[1]), key(3));  // 2 is taken
  EXPECT_EQ(g.key(generated[2]), key(4));
  EXPECT_EQ(g.key(generated[3]), key(6));  // 5 is taken; from here on above every given key
  EXPECT_EQ(g.key(generated[299]), key(302));
  for (NodeId id : generated) EXPECT_EQ(g.find(g.key(id)), id);
  EXPECT_EQ(g.find(key(5)), five);
  EXPECT_EQ(g.find(key(2)), two);
  EXPECT_EQ(g.find("00000000-0000-4000-8000-00000000000A"), upper);
  EXPECT_EQ(g.find(key(10)), generated[7]);  // the lower-case one is generated
  EXPECT_EQ(g.find("00010000-0000-4000-8000-000000000001"), high);
  EXPECT_EQ(g.find(key(303)), std::nullopt);
  EXPECT_EQ(g.find(key(0)), std::nullopt);
  const NodeId given_after = g.add_note("given", {.key = key(400)});
  EXPECT_EQ(g.find(key(400)), given_after);
  EXPECT_EQ(g.key(g.add_note("generated")), key(303));
}

#if defined(TAPESTRY_ENABLE_ASSERTIONS)
TEST(GraphDeathTest, AGivenKeyCannotTakeAGeneratedOne) {
  Graph g;
  for (int i = 0; i < 3; ++i) g.add_note("generated");  // serials 1, 2, 3, outside the index
  EXPECT_DEATH(g.add_note("given", {.key = "00000000-0000-4000-8000-000000000002"}),
               "node key already taken");
}
#endif

TEST(GraphTest, FindsNodesByKey) {
  Graph g;
  TensorId t = g.add_tensor({.dtype = DType::kInt32, .range = zr("zr[0:1]")}, {.key = "my-tensor"});
  EXPECT_EQ(g.find("my-tensor"), NodeId(t));
  EXPECT_EQ(g.find("other"), std::nullopt);
  for (int i = 0; i < 1000; ++i) g.add_note("n");  // forces the key index to grow
  EXPECT_EQ(g.find("my-tensor"), NodeId(t));
  EXPECT_EQ(g.notes().size(), 1000u);
}

TEST(GraphTest, ProducersConsumersAndApplications) {
  auto m = testing::linear_relu(4);
  const Graph& g = m.g;
  ASSERT_EQ(g.producers(m.z).size(), 1u);
  EXPECT_EQ(g.producers(m.z)[0], m.linear);
  ASSERT_EQ(g.consumers(m.z).size(), 1u);
  EXPECT_EQ(g.consumers(m.z)[0], m.relu);
  EXPECT_TRUE(g.producers(m.x).empty());
  EXPECT_EQ(g.applications_of(m.linear).size(), 4u);
  EXPECT_EQ(g.operation(m.relu).applications().size(), 4u);
  EXPECT_EQ(g.applications().size(), 8u);
}

TEST(GraphTest, AnOperationReadingATensorTwiceIsOneConsumer) {
  Graph g;
  TensorId x = g.add_tensor({.dtype = DType::kInt32, .range = zr("zr[0:4]")});
  TensorId y = g.add_tensor({.dtype = DType::kInt32, .range = zr("zr[0:4]")});
  OperationBody body{.kernel = "mul"};
  body.inputs.append("a", {x, zr("zr[0:4]")});
  body.inputs.append("b", {x, zr("zr[0:4]")});
  body.outputs.append("c", {y, zr("zr[0:4]")});
  g.add_operation(std::move(body));
  EXPECT_EQ(g.consumers(x).size(), 1u);
}

TEST(GraphTest, TopologicalOrderPutsProducersFirst) {
  auto m = testing::linear_relu(0);
  TopologicalOrder order = m.g.topological_order();
  ASSERT_TRUE(order.cycle.empty());
  auto pos = [&](NodeId n) {
    return std::find(order.order.begin(), order.order.end(), n) - order.order.begin();
  };
  EXPECT_EQ(order.order.size(), 7u);
  EXPECT_LT(pos(m.x), pos(m.linear));
  EXPECT_LT(pos(m.linear), pos(m.z));
  EXPECT_LT(pos(m.z), pos(m.relu));
  EXPECT_LT(pos(m.relu), pos(m.y));
}

TEST(GraphTest, TopologicalOrderReportsACycle) {
  Graph g;
  TensorId a = g.add_tensor({.dtype = DType::kInt32, .range = zr("zr[0:4]")}, {.label = "A"});
  TensorId b = g.add_tensor({.dtype = DType::kInt32, .range = zr("zr[0:4]")}, {.label = "B"});
  OperationBody f{.kernel = "f"};
  f.inputs.append("x", {a, zr("zr[0:4]")});
  f.outputs.append("y", {b, zr("zr[0:4]")});
  OperationId fo = g.add_operation(std::move(f));
  OperationBody h{.kernel = "h"};
  h.inputs.append("x", {b, zr("zr[0:4]")});
  h.outputs.append("y", {a, zr("zr[0:4]")});
  OperationId ho = g.add_operation(std::move(h));
  TopologicalOrder order = g.topological_order();
  EXPECT_EQ(order.cycle, (std::vector<NodeId>{a, fo, b, ho}));
}

// IPFIndex boxes are stored packed: replaced in place, or re-appended for another rank; a rank
// too large for the record's 16 bits keeps its rank beside the coordinates.
TEST(GraphTest, RemoveTakesNodesOutOfListsAndRelationsButKeepsIds) {
  auto a = testing::add_graph();
  Graph& g = a.g;
  const TensorId w =
      g.add_tensor({.dtype = DType::kInt32, .range = zr("zr[0:10, 0:5]")}, {.label = "W"});
  OperationBody body{.kernel = "neg"};
  body.inputs.append("x", {a.z, zr("zr[0:10, 0:5]")});
  body.outputs.append("result", {w, zr("zr[0:10, 0:5]")});
  const OperationId neg = g.add_operation(std::move(body), {.label = "neg"});
  ASSERT_EQ(g.consumers(a.z).size(), 1u);

  const NodeId gone[] = {neg, w};
  g.remove(gone);
  EXPECT_EQ(g.size(), 6u);  // ids are dense: nothing moves
  EXPECT_TRUE(g.is_removed(neg));
  EXPECT_TRUE(g.is_removed(w));
  EXPECT_FALSE(g.is_removed(a.op));
  EXPECT_EQ(std::vector<OperationId>(g.operations().begin(), g.operations().end()),
            std::vector<OperationId>{a.op});
  EXPECT_EQ(std::vector<TensorId>(g.tensors().begin(), g.tensors().end()),
            (std::vector<TensorId>{a.x, a.y, a.z}));
  EXPECT_TRUE(g.consumers(a.z).empty());  // the removed neg no longer reads Z
  EXPECT_EQ(g.node_ids(), (std::vector<NodeId>{a.x, a.y, a.z, a.op}));
  // The removed nodes stay readable, and keep their keys.
  EXPECT_EQ(g.operation(neg).kernel(), "neg");
  EXPECT_EQ(g.find(g.key(neg)), NodeId(neg));
  EXPECT_TRUE(g.topological_order().cycle.empty());
  EXPECT_EQ(g.topological_order().order.size(), 4u);
  g.remove(gone);  // removing twice changes nothing
  EXPECT_EQ(g.operations().size(), 1u);
}

#if defined(TAPESTRY_ENABLE_ASSERTIONS)
TEST(GraphDeathTest, RemoveRefusesATensorStillReadAndAnApplication) {
  auto a = testing::add_graph();
  const NodeId read[] = {a.x};
  EXPECT_DEATH(a.g.remove(read), "still produced or consumed");
  ApplicationBody app{.operation = a.op};
  const ApplicationId id = a.g.add_application(std::move(app));
  const NodeId application[] = {id};
  EXPECT_DEATH(a.g.remove(application), "only Operations and Tensors");
  const NodeId sharded[] = {a.op};
  EXPECT_DEATH(a.g.remove(sharded), "the operation has Applications");
}
#endif

TEST(GraphTest, IpfIndexesReadBackAsSet) {
  auto a = testing::add_graph();
  const ApplicationId app = a.g.add_application(ApplicationBody{.operation = a.op});
  EXPECT_FALSE(a.g.node(app).has_ipf_index());
  a.g.set_ipf_index(app, zr("zr[0:5, 0:5]"));
  a.g.set_ipf_index(a.op, zr("zr[1:10, 2:5]"));  // replaced in place
  EXPECT_EQ(*a.g.node(app).ipf_index(), zr("zr[0:5, 0:5]"));
  EXPECT_EQ(*a.g.node(a.op).ipf_index(), zr("zr[1:10, 2:5]"));
  a.g.set_ipf_index(a.op, zr("zr[0:2, 0:3, 4:6]"));  // another rank
  EXPECT_EQ(*a.g.node(a.op).ipf_index(), zr("zr[0:2, 0:3, 4:6]"));
  EXPECT_EQ(a.g.operation(a.op).index_rank(), 3u);
  EXPECT_EQ(*a.g.node(app).ipf_index(), zr("zr[0:5, 0:5]"));
  a.g.set_ipf_index(app, zspace::Range());  // rank 0
  EXPECT_EQ(*a.g.node(app).ipf_index(), zspace::Range());

  const std::size_t huge = 70000;
  std::vector<std::int64_t> start(huge, 0), end(huge, 1);
  end.back() = 7;
  const zspace::Range big{zspace::Point(std::span<const std::int64_t>(start)),
                          zspace::Point(std::span<const std::int64_t>(end))};
  a.g.set_ipf_index(a.x, big);
  EXPECT_EQ(*a.g.node(a.x).ipf_index(), big);
  EXPECT_EQ(*a.g.node(a.op).ipf_index(), zr("zr[0:2, 0:3, 4:6]"));
  a.g.set_ipf_index(a.x, zr("zr[3:4]"));
  EXPECT_EQ(*a.g.node(a.x).ipf_index(), zr("zr[3:4]"));
}

TEST(GraphTest, TagsLabelsAndExtensions) {
  auto a = testing::add_graph();
  EXPECT_EQ(*a.g.node(a.op).ipf_index(), zr("zr[0:10, 0:5]"));
  EXPECT_NE(a.g.node(a.op).ipf_signature(), nullptr);
  EXPECT_EQ(a.g.node(a.x).ipf_index(), std::nullopt);
  EXPECT_FALSE(a.g.node(a.x).has_ipf_index());
  a.g.set_io_sequence_point(a.op, true);
  EXPECT_TRUE(a.g.node(a.op).has_io_sequence_point());
  a.g.set_other_tag(a.op, "urn:x", 3);
  EXPECT_EQ(a.g.node(a.op).other_tags()["urn:x"], 3);
  a.g.set_other_tag(a.op, "urn:x", nullptr);
  EXPECT_TRUE(a.g.node(a.op).other_tags().is_null());
  a.g.set_extensions(a.x, {{"layout", "row-major"}});
  EXPECT_EQ(a.g.node(a.x).extensions()["layout"], "row-major");
  a.g.set_label(a.x, "renamed");
  EXPECT_EQ(a.g.node(a.x).label(), "renamed");
}

TEST(GraphTest, OperationIndexNamesAndReductions) {
  auto m = testing::linear_relu(0);
  OperationView lin = m.g.operation(m.linear);
  EXPECT_EQ(lin.index_rank(), 3u);
  EXPECT_EQ(lin.index_names(), (std::vector<std::string>{"batch", "out", "in"}));
  EXPECT_EQ(lin.index_dim("out"), 1u);
  EXPECT_EQ(lin.reduction(2), Monoid::kSum);
  EXPECT_EQ(lin.reduction(0), std::nullopt);
  auto a = testing::add_graph();
  EXPECT_EQ(a.g.operation(a.op).index_names(), (std::vector<std::string>{"d0", "d1"}));
}

TEST(GraphTest, CopiesAreIndependent) {
  auto a = testing::add_graph();
  Graph copy = a.g;
  copy.set_label(a.x, "changed");
  EXPECT_EQ(a.g.node(a.x).label(), "X");
  EXPECT_EQ(copy.find(a.g.key(a.x)), NodeId(a.x));
}

}  // namespace
}  // namespace tapestry::ir
