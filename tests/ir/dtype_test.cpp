// The dtype table: every name round-trips through the enum (both spellings), sizes and classes
// are right, unknown names are rejected; LoomDType keeps unknown spellings of a loom file.
#include "tapestry/ir/dtype.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "ir_testing.h"
#include "tapestry/ir/json_io.h"

namespace tapestry::ir {
namespace {

// What the table must say, written out independently of it.
struct Expected {
  DType dtype;
  std::string_view name;
  std::string_view short_name;  // "" when .tap cannot declare it
  std::size_t size;
  bool is_float;
  bool is_executable;
};

constexpr Expected kExpected[] = {
    {DType::kFloat32, "float32", "f32", sizeof(float), true, true},
    {DType::kFloat64, "float64", "f64", sizeof(double), true, true},
    {DType::kInt32, "int32", "i32", sizeof(std::int32_t), false, true},
    {DType::kInt64, "int64", "i64", sizeof(std::int64_t), false, true},
    {DType::kBFloat16, "bfloat16", "bf16", 2, true, true},
    {DType::kFloat16, "float16", "f16", 2, true, true},
    {DType::kBool, "bool", "", 1, false, false},
    {DType::kInt8, "int8", "", sizeof(std::int8_t), false, false},
    {DType::kInt16, "int16", "", sizeof(std::int16_t), false, false},
    {DType::kUInt8, "uint8", "", sizeof(std::uint8_t), false, false},
};

TEST(DTypeTable, EveryDTypeHasItsRowInOrder) {
  const std::span<const DType> all = all_dtypes();
  ASSERT_EQ(all.size(), std::size(kExpected));
  for (std::size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i], kExpected[i].dtype) << i;
    EXPECT_EQ(dtype_info(all[i]).dtype, all[i]) << i;
  }
}

TEST(DTypeTable, NamesSizesAndClassesAreRight) {
  for (const Expected& e : kExpected) {
    SCOPED_TRACE(std::string(e.name));
    EXPECT_EQ(dtype_name(e.dtype), e.name);
    EXPECT_EQ(dtype_short_name(e.dtype), e.short_name.empty() ? e.name : e.short_name);
    EXPECT_EQ(dtype_size_bytes(e.dtype), e.size);
    EXPECT_EQ(is_float(e.dtype), e.is_float);
    EXPECT_EQ(is_executable(e.dtype), e.is_executable);
    EXPECT_EQ(is_tap_dtype(e.dtype), !e.short_name.empty());
  }
}

TEST(DTypeTable, LoomNamesRoundTrip) {
  for (DType d : all_dtypes()) {
    EXPECT_EQ(parse_dtype(dtype_name(d)), d) << dtype_name(d);
  }
}

TEST(DTypeTable, TapNamesRoundTripInBothSpellings) {
  for (DType d : all_dtypes()) {
    SCOPED_TRACE(std::string(dtype_name(d)));
    if (is_tap_dtype(d)) {
      EXPECT_EQ(parse_tap_dtype(dtype_short_name(d)), d);
      EXPECT_EQ(parse_tap_dtype(dtype_name(d)), d);
    } else {
      EXPECT_EQ(parse_tap_dtype(dtype_name(d)), std::nullopt);  // .tap cannot declare it
    }
  }
}

TEST(DTypeTable, NamesAreUnambiguous) {
  std::set<std::string_view> seen;
  for (DType d : all_dtypes()) {
    EXPECT_TRUE(seen.insert(dtype_name(d)).second) << dtype_name(d);
    if (is_tap_dtype(d)) {
      EXPECT_TRUE(seen.insert(dtype_info(d).short_name).second) << dtype_info(d).short_name;
    }
  }
}

TEST(DTypeTable, RejectsUnknownNames) {
  // Loom files use the canonical names only: short names, other cases and padding are unknown.
  for (std::string_view name : {"", "f32", "i64", "bf16", "Float32", "FLOAT32", " float32",
                                "float32 ", "float", "boolean", "float128", "uint16", "int"}) {
    EXPECT_EQ(parse_dtype(name), std::nullopt) << '"' << name << '"';
  }
  EXPECT_EQ(parse_dtype(std::string_view("float32\0", 8)), std::nullopt);  // no prefix matches
  for (std::string_view name :
       {"", "f33", "F32", "fp32", "float", "i8", "u8", "bool", "int8", "uint8", "boolean"}) {
    EXPECT_EQ(parse_tap_dtype(name), std::nullopt) << '"' << name << '"';
  }
}

TEST(DTypeTable, PrintsItsLoomName) {
  EXPECT_EQ(fmt::format("{}", DType::kBFloat16), "bfloat16");
  std::ostringstream os;
  os << DType::kUInt8;
  EXPECT_EQ(os.str(), "uint8");
}

TEST(LoomDType, KnownSpellingsBecomeTheDType) {
  for (DType d : all_dtypes()) {
    const LoomDType parsed = LoomDType::parse(dtype_name(d));
    EXPECT_EQ(parsed.known(), d);
    EXPECT_EQ(parsed, LoomDType(d));
    EXPECT_EQ(parsed.name(), dtype_name(d));
  }
  EXPECT_EQ(LoomDType().known(), DType::kFloat32);
}

TEST(LoomDType, UnknownSpellingsAreKeptVerbatim) {
  for (std::string_view spelling : {"boolean", "f32", "Float32", ""}) {
    const LoomDType parsed = LoomDType::parse(spelling);
    EXPECT_EQ(parsed.known(), std::nullopt) << spelling;
    EXPECT_EQ(parsed.name(), spelling);
    EXPECT_EQ(fmt::format("{}", parsed), spelling);
  }
  EXPECT_EQ(LoomDType::parse("f32"), LoomDType::parse("f32"));
  EXPECT_NE(LoomDType::parse("f32"), LoomDType(DType::kFloat32));
  EXPECT_NE(LoomDType::parse("boolean"), LoomDType::parse("bool"));
}

// The file format: a loom file with an unknown dtype loads, writes back as read, and the
// dialect's tensor-dtype constraint (not the reader) reports it.
TEST(LoomDType, UnknownDTypeInALoomFileLoadsAndIsReportedByTheDialect) {
  const std::string text = R"({"nodes": [
    {"id": "a", "type": "loom:Tensor", "label": "A",
     "body": {"dtype": "f32", "range": {"start": [0], "end": [2]}}},
    {"id": "b", "type": "loom:Tensor", "label": "B",
     "body": {"dtype": "int8", "range": {"start": [0], "end": [2]}}}]})";
  const Graph g = read_graph_json_or_throw(text);
  const TensorId a = *g.as_tensor(*g.find("a"));
  const TensorId b = *g.as_tensor(*g.find("b"));
  EXPECT_EQ(g.tensor(a).dtype().known(), std::nullopt);
  EXPECT_EQ(g.tensor(a).dtype().name(), "f32");
  EXPECT_EQ(g.tensor(b).dtype(), DType::kInt8);

  const nlohmann::json written = nlohmann::json::parse(write_graph_json(g));
  EXPECT_EQ(written["nodes"][0]["body"]["dtype"], "f32");
  EXPECT_EQ(written["nodes"][1]["body"]["dtype"], "int8");
  EXPECT_EQ(write_graph_json(read_graph_json_or_throw(write_graph_json(g))), write_graph_json(g));

  const ValidationReport report = validate(g, Dialect::operation());
  std::vector<std::string> dtypes;
  for (const Issue& issue : report.issues) {
    if (issue.type == "tensor-dtype") dtypes.push_back(issue.params["dtype"]);
  }
  EXPECT_EQ(dtypes, std::vector<std::string>{"f32"});
  EXPECT_FALSE(report.is_valid());
}

}  // namespace
}  // namespace tapestry::ir
