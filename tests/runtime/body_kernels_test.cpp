// Kernels from kernel-file bodies (runtime/body_kernels.h): both evaluations give the same bits
// as each other and as the built-in kernel with the same formula, on whole operations and
// shards, with params, broadcasting IPFs and reductions; what a body cannot run fails naming
// the operation.
#include <gmock/gmock.h>

#include "run_helpers.h"
#include "tapestry/metakernel/builder.h"
#include "tapestry/metakernel/loader.h"
#include "tapestry/runtime/body_kernels.h"
#include "tapestry/runtime/compare.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/input_generation.h"
#include "tapestry/runtime/naive_executor.h"

namespace tapestry::runtime {
namespace {

namespace mk = tapestry::metakernel;
using ::testing::HasSubstr;

// The built-in signatures plus the kernels of `yaml`.
mk::SignatureRegistry registry(const std::string& yaml) {
  mk::SignatureRegistry r = mk::SignatureRegistry::with_builtins();
  for (mk::Metakernel& k :
       mk::parse_kernels(std::make_shared<const mk::SourceFile>("user.yaml", yaml),
                         [&](std::string_view n) { return r.find(n); }))
    r.add(std::move(k));
  return r;
}

const char* kUnary = R"(kernel: KERNEL
types: {T: any}
inputs:
  x: {shape: "[$d...]", dtype: T}
params:
  slope: {type: float, default: 0.25}
outputs:
  result: {shape: "[$d...]", dtype: T}
index: "[$d...]"
ipfs:
  x: "[$d...]"
  result: "[$d...]"
body: "BODY"
)";

std::string unary(const std::string& name, const std::string& body) {
  std::string text = kUnary;
  text.replace(text.find("KERNEL"), 6, name);
  text.replace(text.find("BODY"), 4, body);
  return text;
}

// A dot product along the last dim: index [$rows..., k], k summed away.
const char* kDot = R"(kernel: rowdot
types: {T: any}
inputs:
  x: {shape: "[$rows..., $k]", dtype: T}
  y: {shape: "[$rows..., $k]", dtype: T}
outputs:
  result: {shape: "[$rows...]", dtype: T}
index: "[$rows..., $k]"
reductions: {k: sum}
ipfs:
  x: "[$rows..., $k]"
  y: "[$rows..., $k]"
  result: "[$rows...]"
body: "x * y"
)";

struct Result {
  BufferMap values;
  ir::TensorId result;
  std::vector<Buffer> inputs;  // in argument order

  template <typename T>
  [[nodiscard]] T in(std::size_t i, std::int64_t at) const {
    return inputs[i].values<T>()[static_cast<std::size_t>(at)];
  }
  template <typename T>
  [[nodiscard]] T out(std::int64_t at) const {
    return values.at(result).values<T>()[static_cast<std::size_t>(at)];
  }
};

// Builds `kernel(inputs…, params)` over inputs of the given types and runs it with `kernels`.
Result run(const mk::SignatureRegistry& signatures, const std::string& kernel,
           const std::vector<mk::TensorType>& types, const nlohmann::json& params,
           const ExecutableKernels& kernels) {
  mk::Graph g(signatures);
  std::vector<mk::Tensor> inputs;
  for (std::size_t i = 0; i < types.size(); ++i)
    inputs.push_back(g.input(fmt::format("I{}", i), types[i]));
  const ir::TensorId result = g.call(kernel, inputs, params).id();
  ir::Graph graph = g.take();
  BufferMap in = generate_inputs(graph, {.seed = 7});
  std::vector<Buffer> given;
  for (const mk::Tensor& t : inputs) given.push_back(in.at(t.id()));
  return {NaiveExecutor(graph, kernels).run(std::move(in)), result, std::move(given)};
}

ExecutableKernels reference_with(const mk::SignatureRegistry& s) {
  return with_body_kernels(ExecutableKernels::reference(), s, BodyEvaluation::kReference);
}
ExecutableKernels fast_with(const mk::SignatureRegistry& s) {
  return with_body_kernels(fast_kernels(), s, BodyEvaluation::kFast);
}

bool same(const Result& a, const Result& b) {
  return compare_buffers(a.values.at(a.result), b.values.at(b.result)).bitwise_equal;
}

mk::TensorType type(DType dtype, std::vector<std::int64_t> shape) {
  return {dtype, Range::of_shape(Point(shape))};
}

// The same formula as a body and as built-in kernels: the same bits, in both kernel sets.
TEST(BodyKernels, MatchTheBuiltInFormulasBitwise) {
  const mk::SignatureRegistry s =
      registry(unary("b_gelu", "gelu(x)") + "---\n" + unary("b_sigmoid", "sigmoid(x)") + "---\n" +
               unary("b_relu", "relu(x)"));
  const ExecutableKernels reference = reference_with(s), fast = fast_with(s);
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    for (const char* name : {"gelu", "sigmoid", "relu"}) {
      // 3 × 700: rows longer than one fast run (256), so runs are split.
      const auto t = type(dtype, {3, 700});
      const Result builtin = run(s, name, {t}, nlohmann::json::object(), reference);
      for (const ExecutableKernels* set : {&reference, &fast}) {
        const Result body = run(s, std::string("b_") + name, {t}, nlohmann::json::object(), *set);
        EXPECT_TRUE(same(builtin, body)) << name << " " << ir::dtype_name(dtype);
      }
    }
  }
}

TEST(BodyKernels, FastAndReferenceAgreeOnExpressionsWithParams) {
  const std::string body = "-(x * x) / (1 + slope) + max(x, 0.5) - min(exp(x), tanh(x)) * 3";
  const mk::SignatureRegistry s = registry(unary("f", body));
  const ExecutableKernels reference = reference_with(s), fast = fast_with(s);
  for (const nlohmann::json& params : {nlohmann::json::object(), nlohmann::json{{"slope", 3}}}) {
    const auto t = type(DType::kFloat32, {5, 300});
    const Result a = run(s, "f", {t}, params, reference);
    const Result b = run(s, "f", {t}, params, fast);
    EXPECT_TRUE(same(a, b)) << params.dump();
    // One cell by hand: the default slope is 0.25.
    const float x = a.in<float>(0, 0);
    const float slope = params.empty() ? 0.25F : 3.0F;
    const float want = -(x * x) / (1 + slope) + std::max(x, 0.5F) -
                       std::min(std::exp(x), static_cast<float>(std::tanh(double{x}))) * 3;
    EXPECT_EQ(a.out<float>(0), want);
  }
}

TEST(BodyKernels, ReductionsFoldWithTheMonoidInOrder) {
  const mk::SignatureRegistry s = registry(kDot);
  const ExecutableKernels reference = reference_with(s), fast = fast_with(s);
  for (std::int64_t k : {1, 7, 600}) {
    const auto t = type(DType::kFloat64, {4, k});
    const Result a = run(s, "rowdot", {t, t}, nlohmann::json::object(), reference);
    const Result b = run(s, "rowdot", {t, t}, nlohmann::json::object(), fast);
    ASSERT_TRUE(same(a, b)) << k;
    for (std::int64_t row = 0; row < 4; ++row) {
      double acc = 0;
      for (std::int64_t j = 0; j < k; ++j) {
        const double v = a.in<double>(0, row * k + j) * a.in<double>(1, row * k + j);
        acc = j == 0 ? v : acc + v;
      }
      EXPECT_EQ(a.out<double>(row), acc) << row;
    }
  }
}

TEST(BodyKernels, IntegersRunAndDivisionByZeroFailsNamingTheOperation) {
  const mk::SignatureRegistry s = registry(
      unary("half", "x / 0") + "---\n" + unary("tw", "x * 2 + 1") + "---\n" + unary("e", "exp(x)"));
  const ExecutableKernels fast = fast_with(s);
  const Result r = run(s, "tw", {type(DType::kInt32, {3})}, nlohmann::json::object(), fast);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(r.out<std::int32_t>(i), r.in<std::int32_t>(0, i) * 2 + 1);
  EXPECT_THAT(testing::error_of([&] {
                run(s, "half", {type(DType::kInt64, {3})}, nlohmann::json::object(), fast);
              }),
              HasSubstr("operation 'half' (kernel half): integer division by zero"));
  EXPECT_THAT(testing::error_of(
                  [&] { run(s, "e", {type(DType::kInt32, {3})}, nlohmann::json::object(), fast); }),
              HasSubstr("operation 'e'"));
}

TEST(BodyKernels, ABuiltInKeepsItsOwnKernel) {
  const mk::SignatureRegistry s = registry(unary("sq", "x * x"));
  const ExecutableKernels fast = fast_with(s);
  EXPECT_NE(fast.find("sq"), nullptr);
  EXPECT_EQ(fast.names().size(), fast_kernels().names().size() + 1);
  EXPECT_EQ(fast_kernels().find("sq"), nullptr);
}

// What a generated C++ program carries of a kernel file's kernel (codegen --to cpp): its body
// source compiles to a kernel with the same bits as the file's, params' defaults included.
TEST(BodyKernels, ABodySourceRunsAsItsKernelFileDoes) {
  const std::string body = "-(x * x) / (1 + slope) + max(x, 0.5) - min(exp(x), tanh(x)) * 3";
  const mk::SignatureRegistry s = registry(unary("f", body) + "---\n" + kDot);
  for (const char* name : {"f", "rowdot"}) {
    const BodySource source = body_source(s.get(name));
    EXPECT_EQ(source.name, name);
    for (BodyEvaluation e : {BodyEvaluation::kReference, BodyEvaluation::kFast}) {
      const ExecutableKernels from_file = with_body_kernels(
          e == BodyEvaluation::kFast ? fast_kernels() : ExecutableKernels::reference(), s, e);
      ExecutableKernels from_source =
          e == BodyEvaluation::kFast ? fast_kernels() : ExecutableKernels::reference();
      from_source.add(name, body_kernel(source, e));
      const auto t = type(DType::kFloat32, {5, 300});
      const std::vector<mk::TensorType> types =
          std::string(name) == "f" ? std::vector{t} : std::vector{t, t};
      for (const nlohmann::json& params :
           {nlohmann::json::object(),
            std::string(name) == "f" ? nlohmann::json{{"slope", 3}} : nlohmann::json::object()}) {
        EXPECT_TRUE(
            same(run(s, name, types, params, from_file), run(s, name, types, params, from_source)))
            << name << " " << params.dump();
      }
    }
  }
  // The default travels: without it the param is required.
  EXPECT_EQ(body_source(s.get("f")).params,
            (std::vector<std::pair<std::string, std::string>>{{"slope", "0.25"}}));
  EXPECT_THAT(testing::error_of([&] {
                body_kernel(BodySource{.name = "g", .body = "x +", .inputs = {"x"}},
                            BodyEvaluation::kFast);
              }),
              HasSubstr("kernel 'g': body: column"));
  EXPECT_THAT(testing::error_of([&] {
                body_kernel(BodySource{.name = "g", .body = "x + bias", .inputs = {"x"}},
                            BodyEvaluation::kFast);
              }),
              HasSubstr("kernel 'g': body: 'bias' is neither an input nor a param"));
}

}  // namespace
}  // namespace tapestry::runtime
