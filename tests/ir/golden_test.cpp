// Golden tests: loom JSON in (tests/data/ir/golden/*.json) → the exact issue text out
// (*.issues.txt) and, for a few, the issue JSON (*.issues.json). Also the compat graphs from
// Tapestry, and the generated example graphs kept under tests/data/ir.
//
// To refresh the expected files after an intended change of wording:
//   TAPESTRY_UPDATE_GOLDEN=1 ./ir_test --gtest_filter='Golden*'
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "ir_testing.h"
#include "tapestry/ir/dialect.h"
#include "tapestry/ir/json_io.h"

namespace tapestry::ir {
namespace {

namespace fs = std::filesystem;

const fs::path kData = TAPESTRY_TEST_DATA;

bool updating() {
  return std::getenv("TAPESTRY_UPDATE_GOLDEN") != nullptr;
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// Reading issues, then validation issues in the dialect the file name asks for
// ("*.operation.json" → operation, else application).
std::vector<Issue> issues_for(const fs::path& file) {
  ReadResult r = read_graph_file(file);
  std::vector<Issue> issues = std::move(r.issues);
  if (r.graph) {
    bool op = file.stem().extension() == ".operation";
    const Dialect& d = op ? Dialect::operation() : Dialect::application();
    for (Issue& i : validate(*r.graph, d).issues) issues.push_back(std::move(i));
  }
  return issues;
}

// Issue text mentions the file path; make it relative to the data folder.
std::string relative(std::string text) {
  std::string prefix = kData.string() + "/";
  for (std::size_t at; (at = text.find(prefix)) != std::string::npos;)
    text.erase(at, prefix.size());
  return text;
}

TEST(GoldenTest, IssueTextMatches) {
  std::vector<fs::path> inputs;
  for (const auto& entry : fs::directory_iterator(kData / "ir" / "golden")) {
    if (entry.path().extension() == ".json" &&
        entry.path().string().find(".issues.") == std::string::npos) {
      inputs.push_back(entry.path());
    }
  }
  std::sort(inputs.begin(), inputs.end());
  ASSERT_GE(inputs.size(), 5u);
  for (const fs::path& input : inputs) {
    std::vector<Issue> issues = issues_for(input);
    std::string text = relative(format_issues_text(issues));
    fs::path expected = input;
    expected.replace_extension(".issues.txt");
    if (updating()) write_text(expected, text);
    EXPECT_EQ(text, testing::read_data(fs::relative(expected, kData).string())) << input;
    fs::path expected_json = input;
    expected_json.replace_extension(".issues.json");
    std::string json = relative(format_issues_json(issues));
    if (updating() && fs::exists(expected_json)) write_text(expected_json, json);
    if (fs::exists(expected_json)) {
      EXPECT_EQ(json, testing::read_data(fs::relative(expected_json, kData).string())) << input;
    }
  }
}

TEST(GoldenTest, CompatGraphsLoadAndValidate) {
  auto check = [](const char* name, const Dialect& dialect, std::vector<std::string> types) {
    ReadResult r = read_graph_file(kData / "compat" / name);
    ASSERT_TRUE(r.graph) << name;
    EXPECT_TRUE(r.issues.empty()) << name << format_issues_text(r.issues);
    ValidationReport report = validate(*r.graph, dialect);
    EXPECT_EQ(testing::types_of(report.issues), types) << name << format_issues_text(report.issues);
  };
  check("application-dialect-example.json", Dialect::application(), {});
  check("loom-minimal-example.json", Dialect::operation(), {"operation-ipf-present"});
  // As published, the mask tensor's dtype "boolean" is not a Tapestry dtype (nor was it in the
  // Java dialect, which knew int32 and float32 only); the fixed copy says "bool".
  check("operation-dialect-example.json", Dialect::operation(),
        {"tensor-dtype", "operation-ipf-present"});
  check("operation-dialect-example.fixed.json", Dialect::operation(), {"operation-ipf-present"});
  ValidationReport fixed =
      validate(*read_graph_file(kData / "compat" / "operation-dialect-example.fixed.json").graph,
               Dialect::operation());
  EXPECT_TRUE(fixed.is_valid());  // the remaining issue is a warning
}

TEST(GoldenTest, GeneratedExampleGraphsAreUpToDate) {
  struct Example {
    const char* file;
    std::string text;
  };
  Example examples[] = {
      {"ir/linear_relu_4x.json", write_graph_json(testing::linear_relu(4).g)},
      {"ir/linear_relu.operation.json", write_graph_json(testing::linear_relu(0).g)},
  };
  for (const Example& e : examples) {
    if (updating()) write_text(kData / e.file, e.text);
    EXPECT_EQ(testing::read_data(e.file), e.text) << e.file;
    bool op = std::string(e.file).find(".operation.") != std::string::npos;
    ValidationReport report = validate(read_graph_json_or_throw(e.text),
                                       op ? Dialect::operation() : Dialect::application());
    EXPECT_TRUE(report.issues.empty()) << e.file << format_issues_text(report.issues);
  }
}

}  // namespace
}  // namespace tapestry::ir
