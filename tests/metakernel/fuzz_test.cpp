// Robustness (labelled slow): random garbage, random mutations and truncations of real .tap and
// kernel files never crash the parsers, the loader or the front end — every failure is an Error
// or a diagnostic. rapidcheck drives the inputs; RC_PARAMS="max_success=N" runs longer.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tapestry/metakernel/loader.h"
#include "tapestry/metakernel/tap_frontend.h"
#include "test_util.h"

namespace tapestry::metakernel {
namespace {

using testing::signatures;
using testing::tt;

std::vector<std::string> read_all(const std::filesystem::path& dir, const std::string& ext) {
  std::vector<std::string> texts;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ext) continue;
    std::ifstream in(entry.path());
    std::ostringstream text;
    text << in.rdbuf();
    texts.push_back(text.str());
  }
  return texts;
}

const std::vector<std::string>& tap_corpus() {
  static const std::vector<std::string> corpus = read_all(TAPESTRY_EXAMPLES_DIR, ".tap");
  return corpus;
}

const std::vector<std::string>& yaml_corpus() {
  static const std::vector<std::string> corpus = read_all(TAPESTRY_KERNELS_SOURCE_DIR, ".yaml");
  return corpus;
}

// Characters that matter to the two languages, so mutations reach deep into the parsers.
const std::string kAlphabet = "[]():=,.-+*/%$#!&|<>\"'\n\t {}01239azAZ_fi...:";

// A mutation of `text`: truncate, delete, duplicate or insert at random places.
rc::Gen<std::string> mutated(const std::vector<std::string>& corpus) {
  return rc::gen::exec([&corpus] {
    std::string text = *rc::gen::elementOf(corpus);
    const int edits = *rc::gen::inRange(1, 8);
    for (int i = 0; i < edits && !text.empty(); ++i) {
      const std::size_t at = *rc::gen::inRange<std::size_t>(0, text.size());
      switch (*rc::gen::inRange(0, 4)) {
        case 0:
          text.resize(at);
          break;
        case 1:
          text.erase(at, *rc::gen::inRange<std::size_t>(1, 20));
          break;
        case 2:
          text.insert(at, text.substr(at, *rc::gen::inRange<std::size_t>(1, 40)));
          break;
        default:
          text.insert(at, 1, kAlphabet[*rc::gen::inRange<std::size_t>(0, kAlphabet.size())]);
          break;
      }
    }
    return text;
  });
}

void build_never_crashes(const std::string& text) {
  BuildResult r = build_tap(std::make_shared<const SourceFile>("fuzz.tap", text), signatures());
  for (const support::Diagnostic& d : r.diagnostics) (void)support::format_diagnostic(d);
  if (r.ok()) (void)validate_built_graph(*r.graph);
}

void load_never_crashes(const std::string& text) {
  try {
    std::vector<Metakernel> ks =
        parse_kernels(std::make_shared<const SourceFile>("fuzz.yaml", text),
                      [](std::string_view name) { return signatures().find(name); });
    // Evaluate what loaded on a few shapes: errors are fine, crashes are not.
    for (const Metakernel& k : ks) {
      for (const char* type : {"f32[3, 4]", "f32[2, 3, 4, 5]", "f32[]"}) {
        std::vector<Argument> args(k.inputs.size(), Argument{"A", tt(type)});
        try {
          (void)evaluate_signature(k, args, {});
        } catch (const Error&) {
        }
      }
    }
  } catch (const Error&) {
  }
}

RC_GTEST_PROP(Fuzz, GarbageTapNeverCrashes, ()) {
  const std::string text = *rc::gen::container<std::string>(rc::gen::elementOf(kAlphabet));
  build_never_crashes(text);
}

// Each run checks a batch of mutations, so the default 100 runs cover thousands of inputs.
constexpr std::size_t kBatch = 20;

RC_GTEST_PROP(Fuzz, MutatedExamplesNeverCrash, ()) {
  for (const std::string& text :
       *rc::gen::container<std::vector<std::string>>(kBatch, mutated(tap_corpus()))) {
    build_never_crashes(text);
  }
}

RC_GTEST_PROP(Fuzz, MutatedKernelFilesNeverCrash, ()) {
  for (const std::string& text :
       *rc::gen::container<std::vector<std::string>>(kBatch, mutated(yaml_corpus()))) {
    load_never_crashes(text);
  }
}

RC_GTEST_PROP(Fuzz, GarbageYamlNeverCrashes, ()) {
  load_never_crashes(*rc::gen::container<std::string>(rc::gen::elementOf(kAlphabet)));
}

TEST(Fuzz, EveryTruncationOfEveryExampleAndKernelFile) {
  for (const std::string& text : tap_corpus()) {
    for (std::size_t n = 0; n <= text.size(); ++n) build_never_crashes(text.substr(0, n));
  }
  for (const std::string& text : yaml_corpus()) {
    for (std::size_t n = 0; n <= text.size(); n += 3) load_never_crashes(text.substr(0, n));
  }
}

}  // namespace
}  // namespace tapestry::metakernel
