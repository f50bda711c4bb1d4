// Reading and writing loom JSON: round trips, determinism, aliases, extensions, field order.
#include "tapestry/ir/json_io.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "ir_testing.h"
#include "tapestry/ir/dialect.h"

namespace tapestry::ir {
namespace {

using testing::zr;

// write → read → write gives the same text; the graphs are equal node by node.
void expect_round_trip(const Graph& g) {
  std::string first = write_graph_json(g);
  ReadResult read = read_graph_json(first);
  ASSERT_TRUE(read.graph.has_value());
  EXPECT_TRUE(read.issues.empty()) << format_issues_text(read.issues);
  EXPECT_EQ(write_graph_json(*read.graph), first);
  EXPECT_EQ(read.graph->size(), g.size());
  for (TensorId t : g.tensors()) {
    auto other = read.graph->as_tensor(*read.graph->find(g.key(t)));
    ASSERT_TRUE(other);
    EXPECT_EQ(read.graph->tensor(*other).body(), g.tensor(t).body());
  }
}

TEST(JsonIoTest, RoundTripsBuiltGraphs) {
  expect_round_trip(testing::add_graph().g);
  expect_round_trip(testing::linear_relu(0).g);
  expect_round_trip(testing::linear_relu(4).g);
}

TEST(JsonIoTest, RoundTripsCompatFilesByteForByte) {
  for (const char* name : {"application-dialect-example.json", "operation-dialect-example.json"}) {
    std::string text = testing::read_data(std::string("compat/") + name);
    ReadResult read = read_graph_json(text);
    ASSERT_TRUE(read.graph) << name;
    EXPECT_TRUE(read.issues.empty()) << name;
    if (text.back() != '\n') text += '\n';  // ours always end with a newline
    EXPECT_EQ(write_graph_json(*read.graph), text) << name;
  }
}

TEST(JsonIoTest, AcceptsShortTypeAliasesAndWritesFullUrls) {
  std::string text = testing::read_data("compat/loom-minimal-example.json");
  ReadResult read = read_graph_json(text);
  ASSERT_TRUE(read.graph);
  EXPECT_EQ(read.graph->tensors().size(), 3u);
  EXPECT_EQ(read.graph->operations().size(), 1u);
  std::string out = write_graph_json(*read.graph);
  EXPECT_NE(out.find(std::string(kTensorTypeUrl)), std::string::npos);
  std::string short_out = write_graph_json(*read.graph, {.short_type_names = true});
  EXPECT_NE(short_out.find("\"loom:Tensor\""), std::string::npos);
  EXPECT_EQ(write_graph_json(read_graph_json_or_throw(short_out)), out);
}

TEST(JsonIoTest, OutputIsDeterministicAndCompactOnRequest) {
  auto m = testing::linear_relu(2);
  EXPECT_EQ(write_graph_json(m.g), write_graph_json(testing::linear_relu(2).g));
  std::string compact = write_graph_json(m.g, {.indent = -1});
  EXPECT_EQ(compact.find('\n'), std::string::npos);
  EXPECT_EQ(write_graph_json(read_graph_json_or_throw(compact)), write_graph_json(m.g));
}

TEST(JsonIoTest, WritesFieldsInSchemaOrderWithScalarArraysInline) {
  auto a = testing::add_graph();
  std::string out = write_graph_json(a.g);
  EXPECT_NE(out.find(R"("start": [200, 50],)"), std::string::npos) << out;
  EXPECT_LT(out.find("\"kernel\""), out.find("\"inputs\""));
  EXPECT_LT(out.find("\"inputs\""), out.find("\"outputs\""));
  EXPECT_NE(out.find("\"projection\": [\n"), std::string::npos);
}

TEST(JsonIoTest, ExtensionFieldsSurviveARoundTrip) {
  std::string text = R"({"nodes": [
    {"id": "t", "type": "loom:Tensor",
     "body": {"dtype": "int32", "range": {"start": [0], "end": [2]}, "layout": {"order": [0]}}},
    {"id": "o", "type": "loom:Operation",
     "body": {"kernel": "k", "params": {"alpha": 0.5}, "zz_custom": [1, "two"]}}]})";
  Graph g = read_graph_json_or_throw(text);
  EXPECT_EQ(g.node(*g.find("t")).extensions()["layout"]["order"][0], 0);
  EXPECT_EQ(g.operation(*g.as_operation(*g.find("o"))).params()["alpha"], 0.5);
  Graph again = read_graph_json_or_throw(write_graph_json(g));
  EXPECT_EQ(again.node(*again.find("o")).extensions()["zz_custom"][1], "two");
  EXPECT_EQ(write_graph_json(again), write_graph_json(g));
}

TEST(JsonIoTest, TapestryExtensionFieldsAreTyped) {
  auto m = testing::linear_relu(0);
  std::string out = write_graph_json(m.g);
  EXPECT_NE(out.find(R"("indexNames": ["batch", "out", "in"])"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("in": "sum")"), std::string::npos);
  Graph again = read_graph_json_or_throw(out);
  EXPECT_EQ(again.operation(*again.as_operation(*again.find(m.g.key(m.linear)))).reduction(2),
            Monoid::kSum);
}

TEST(JsonIoTest, FieldsMayComeInAnyOrder) {
  std::string text = R"({"nodes": [
    {"body": {"kernel": "k", "inputs": {"x": [{"range": {"end": [2], "start": [0]}, "tensorId": "t"}]}},
     "tags": {"loom:IPFIndex": {"start": [0], "end": [2]}},
     "type": "loom:Operation", "id": "o"},
    {"type": "loom:Tensor", "label": "T", "body": {"range": {"start": [0], "end": [2]}, "dtype": "int32"}, "id": "t"}],
    "id": "g"})";
  Graph g = read_graph_json_or_throw(text);
  OperationId op = *g.as_operation(*g.find("o"));
  EXPECT_EQ(g.operation(op).inputs().list("x")[0].tensor, *g.as_tensor(*g.find("t")));
  EXPECT_EQ(*g.node(op).ipf_index(), zr("zr[0:2]"));
  EXPECT_EQ(g.node(*g.find("t")).label(), "T");
  EXPECT_EQ(g.graph_key(), "g");
  EXPECT_TRUE(g.unresolved_references().empty());
}

TEST(JsonIoTest, UnknownNodesAndTagsAreKeptVerbatim) {
  std::string text = R"({"nodes": [
    {"id": "n", "type": "urn:example:Widget", "body": {"size": 3}, "tags": {"urn:tag": [1, 2]}},
    {"id": "t", "type": "loom:Tensor", "body": {"dtype": "int32", "range": {"start": [0], "end": [1]}},
     "tags": {"urn:tag": {"a": null}}}]})";
  ReadResult r = read_graph_json(text);
  ASSERT_TRUE(r.graph);
  EXPECT_TRUE(r.issues.empty());
  NodeId n = *r.graph->find("n");
  EXPECT_EQ(r.graph->kind(n), NodeKind::kOpaque);
  EXPECT_EQ(r.graph->opaque(n).type, "urn:example:Widget");
  EXPECT_EQ(r.graph->node(n).other_tags()["urn:tag"][1], 2);
  Graph again = read_graph_json_or_throw(write_graph_json(*r.graph));
  EXPECT_EQ(again.opaque(*again.find("n")).body["size"], 3);
}

TEST(JsonIoTest, UnresolvedReferencesAreKeptAndWrittenBack) {
  std::string text = R"({"nodes": [
    {"id": "o", "type": "loom:Operation",
     "body": {"kernel": "k", "outputs": {"y": [{"tensorId": "missing", "range": {"start": [0], "end": [1]}}]}}},
    {"id": "a", "type": "loom:Application", "body": {"operationId": "o2"}}]})";
  ReadResult r = read_graph_json(text);
  ASSERT_TRUE(r.graph);
  ASSERT_EQ(r.graph->unresolved_references().size(), 2u);
  EXPECT_EQ(r.graph->unresolved_references()[0].key, "missing");
  EXPECT_EQ(r.graph->unresolved_references()[0].json_path, ".outputs.y[0].tensorId");
  std::string out = write_graph_json(*r.graph);
  EXPECT_NE(out.find("\"missing\""), std::string::npos);
  EXPECT_NE(out.find("\"o2\""), std::string::npos);
}

TEST(JsonIoTest, StringsWithEscapesAndUnicode) {
  std::string text = R"({"nodes": [{"id": "n\u00e9\"q", "type": "loom:Note", "label": "tab\there",
    "body": {"message": "snow \u2603 and \ud83d\ude00"}}]})";
  Graph g = read_graph_json_or_throw(text);
  NodeId n = *g.find("n\xc3\xa9\"q");
  EXPECT_EQ(g.note(*g.as_note(n)).message(), "snow \xe2\x98\x83 and \xf0\x9f\x98\x80");
  EXPECT_EQ(g.node(n).label(), "tab\there");
  Graph again = read_graph_json_or_throw(write_graph_json(g));
  EXPECT_EQ(write_graph_json(again), write_graph_json(g));
}

TEST(JsonIoTest, FilesAreWrittenAtomicallyAndReadBack) {
  auto a = testing::add_graph();
  auto path = std::filesystem::temp_directory_path() / "tapestry_ir_json_io_test.json";
  write_graph_file(a.g, path);
  ReadResult r = read_graph_file(path);
  ASSERT_TRUE(r.graph);
  EXPECT_EQ(write_graph_json(*r.graph), write_graph_json(a.g));
  std::filesystem::remove(path);
  ReadResult missing = read_graph_file(path);
  EXPECT_FALSE(missing.graph);
  EXPECT_EQ(testing::types_of(missing.issues), std::vector<std::string>{"io-error"});
}

TEST(JsonIoTest, NodeToJson) {
  auto a = testing::add_graph();
  nlohmann::json j = node_to_json(a.g, a.x);
  EXPECT_EQ(j["label"], "X");
  EXPECT_EQ(j["body"]["dtype"], "int32");
}

// `V1 = sub(I0, S)` with S a rank-0 tensor: S's IPF has no rows, written `"projection": []`,
// which does not say its input rank; the reader restores it from the operation's index.
TEST(JsonIoTest, RowlessIpfsGetTheOperationIndexRankBack) {
  const std::filesystem::path file =
      std::filesystem::path(TAPESTRY_TEST_DATA) / "ir" / "scalar_broadcast.json";
  ReadResult read = read_graph_file(file);
  ASSERT_TRUE(read.graph.has_value());
  const Graph& g = *read.graph;
  ASSERT_EQ(g.operations().size(), 1u);
  const OperationView op = g.operation(g.operations().front());
  const zspace::IndexProjection& scalar = op.ipf_signature()->inputs.list("b")[0];
  EXPECT_EQ(scalar.map().in_rank(), 2u);
  EXPECT_EQ(scalar.map().out_rank(), 0u);
  EXPECT_TRUE(validate(g, Dialect::application()).is_valid());
  const ReadResult again = read_graph_json(write_graph_json(g));
  ASSERT_TRUE(again.graph.has_value());
  EXPECT_EQ(write_graph_json(*again.graph), write_graph_json(g));
}

// Keys of the generated shape counting up (as Tapestry writes them) skip the key index when read
// (Graph::serial_runs_); lookups, duplicates, references and later generated keys must not see a
// difference. Serials 1, 2, 3 count up, 9 leaves a gap, 5 goes below, 2 again is a duplicate,
// and an application refers to them before (8) and after being defined.
TEST(JsonIoTest, KeysCountingUpAreFoundLikeAnyOther) {
  auto key = [](int n) { return fmt::format("00000000-0000-4000-8000-{:012x}", n); };
  auto note = [&](int n) {
    return fmt::format(R"({{"id": "{}", "type": "loom:Note", "body": {{"message": "m{}"}}}})",
                       key(n), n);
  };
  auto tensor = [&](int n) {
    return fmt::format(
        R"({{"id": "{}", "type": "loom:Tensor", "body": {{"dtype": "int32", "range": {{"start": [0], "end": [2]}}}}}})",
        key(n));
  };
  const std::string text = fmt::format(
      R"({{"nodes": [{}, {}, {}, {}, {}, {}, {}, {}]}})", note(1), tensor(2), note(3), tensor(9),
      note(5), note(2),
      fmt::format(
          R"({{"id": "x", "type": "loom:Operation", "body": {{"kernel": "k", "inputs": {{"a": [{{"tensorId": "{}", "range": {{"start": [0], "end": [2]}}}}]}}, "outputs": {{"b": [{{"tensorId": "{}", "range": {{"start": [0], "end": [2]}}}}]}}}}}})",
          key(2), key(8)),
      tensor(8));
  ReadResult read = read_graph_json(text);
  ASSERT_TRUE(read.graph.has_value());
  ASSERT_EQ(read.issues.size(), 1u) << format_issues_text(read.issues);
  EXPECT_EQ(read.issues[0].type, "duplicate-node-id");
  EXPECT_EQ(read.issues[0].contexts.at(0).jsonpath, "$.nodes[5]");
  Graph& g = *read.graph;
  EXPECT_EQ(g.size(), 7u);
  for (int n : {1, 2, 3, 5, 8, 9}) {
    ASSERT_TRUE(g.find(key(n))) << n;
    EXPECT_EQ(g.key(*g.find(key(n))), key(n));
  }
  EXPECT_EQ(g.find(key(4)), std::nullopt);
  EXPECT_EQ(g.find(key(10)), std::nullopt);
  const OperationView op = g.operation(g.operations().front());
  EXPECT_EQ(op.body().inputs.list("a")[0].tensor, g.as_tensor(*g.find(key(2))));
  EXPECT_EQ(op.body().outputs.list("b")[0].tensor, g.as_tensor(*g.find(key(8))));
  EXPECT_TRUE(g.unresolved_references().empty());
  // Generated keys take the free serials: 4, 6, 7, then above 9.
  std::vector<std::string> generated;
  for (int i = 0; i < 4; ++i) generated.emplace_back(g.key(g.add_note("generated")));
  EXPECT_EQ(generated, (std::vector<std::string>{key(4), key(6), key(7), key(10)}));
  EXPECT_EQ(write_graph_json(*read_graph_json(write_graph_json(g)).graph), write_graph_json(g));
}

// The reader's fast paths (an expected key or type recognised by its text, compact integer
// arrays) and its checked paths must read the same graph. Each variant spells the compact
// original differently — spaces, escapes, another key order, numbers the fast path leaves to the
// checked one — and must read back to the same text.
TEST(JsonIoTest, FastAndCheckedPathsReadTheSameGraph) {
  const std::string app =
      R"({"id":"a1","type":"loom:Application","body":{"operationId":"o","inputs":{"x":[{"tensorId":"t","range":{"start":[0],"end":[2]}}]},"outputs":{"y":[{"tensorId":"u","range":{"start":[-0],"end":[123456789012345678]}}]}},"tags":{"loom:IPFIndex":{"start":[0],"end":[2]}}})";
  const std::string head =
      R"({"nodes":[{"id":"t","type":"loom:Tensor","body":{"dtype":"int32","range":{"start":[0],"end":[2]}}},)"
      R"({"id":"u","type":"loom:Tensor","body":{"dtype":"int32","range":{"start":[0],"end":[123456789012345678]}}},)"
      R"({"id":"o","type":"loom:Operation","body":{"kernel":"k"}},)";
  auto doc = [&](const std::string& second) {
    std::string a2 = app;
    a2.replace(a2.find("a1"), 2, "a2");
    return head + app + "," + (second.empty() ? a2 : second) + "]}";
  };
  const std::string canonical = write_graph_json(read_graph_json_or_throw(doc("")));
  auto variant = [&](std::string from, std::string to) {
    std::string second = app;
    second.replace(second.find("a1"), 2, "a2");
    const std::size_t at = second.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) second.replace(at, from.size(), to);
    return doc(second);
  };
  const std::pair<const char*, const char*> variants[] = {
      {R"("start":[0],"end":[2]}}]})", R"("start" : [ 0 ] ,"end":[2 ]}}]})"},
      {R"({"start":[0],"end":[2]}}]})", R"({"st\u0061rt":[0],"\u0065nd":[2]}}]})"},
      {R"({"start":[0],"end":[2]}}]})", R"({"end":[2],"start":[0]}}]})"},
      {R"("tensorId":"t","range":{"start":[0],"end":[2]}})",
       R"("range":{"start":[0],"end":[2]},"tensorId":"t"})"},
      {R"("tensorId":"t","range":{"start":[0],"end":[2]}})",
       R"("tensorId":"t","range":{"start":[0],"end":[2]},"_":0})"},
      {R"("type":"loom:Application")", R"("type":"loom:\u0041pplication")"},
      {R"("type":"loom:Application")",
       R"("type":"http://tensortapestry.org/schemas/loom/2024-01/node_types.jsd#/nodes/Application")"},
      {R"({"loom:IPFIndex")", R"({"loom:IPF\u0049ndex")"},
      {R"("operationId":"o",)", R"("operationId" :"o" ,)"},
      {"[123456789012345678]", "[000000000000000000123456789012345678]"},
      {"[123456789012345678]", "[1234567890123456789]"},
      {"[-0]", "[0e0]"},
  };
  for (const auto& [from, to] : variants) {
    ReadResult read = read_graph_json(variant(from, to));
    SCOPED_TRACE(to);
    if (std::string_view(to).find("000000000000000000123") != std::string_view::npos) {
      ASSERT_FALSE(read.graph.has_value());  // leading zeros are a syntax error
      EXPECT_NE(read.issues.at(0).message.find("leading zeros"), std::string::npos);
      continue;
    }
    ASSERT_TRUE(read.graph.has_value()) << format_issues_text(read.issues);
    if (std::string_view(to).find("1234567890123456789") != std::string_view::npos ||
        std::string_view(to).find("0e0") != std::string_view::npos) {
      // 19 digits and an exponent are read by the checked path: a different value or an
      // opaque body, but read, not misread as the value before.
      EXPECT_NE(write_graph_json(*read.graph), canonical);
      continue;
    }
    std::string expected = canonical;
    if (std::string_view(to).find("\"_\"") != std::string_view::npos) {
      // An unknown selection field: the body is kept verbatim (reported by validation).
      EXPECT_EQ(read.graph->kind(*read.graph->find("a2")), NodeKind::kOpaque);
      EXPECT_EQ(read.graph->kind(*read.graph->find("a1")), NodeKind::kApplication);
      continue;
    }
    EXPECT_TRUE(read.issues.empty()) << format_issues_text(read.issues);
    EXPECT_EQ(write_graph_json(*read.graph), expected);
  }
}

}  // namespace
}  // namespace tapestry::ir
