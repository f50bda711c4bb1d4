// The VJPs of the kernel files (`vjp:`, metakernel/autodiff.h) against an independent oracle:
// float64 central finite differences. For every kernel with a VJP, on random small shapes and
// params: Y = kernel(inputs), L = Σ Y·R with a fixed random R, the gradients from grad() run by the
// naive executor (reference kernels, float64), each cell compared with (L(x + h) − L(x − h)) / 2h.
// Inputs are drawn away from the kernels' kinks (relu at 0, maximum's ties, sqrt and div near 0,
// distinct cells for max, max pooling and reduce's max/min), so the difference quotient is of a
// smooth function. A wrong VJP fails: MutatedVjpsAreCaught
// copies kernels/ with one expression changed and expects the check to report it.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "tapestry/metakernel/autodiff.h"
#include "tapestry/metakernel/builder.h"
#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/naive_executor.h"
#include "tapestry/runtime/tensor_map.h"

namespace tapestry::runtime {
namespace {

namespace mk = tapestry::metakernel;
namespace fs = std::filesystem;
using Shape = std::vector<std::int64_t>;

// How an input's values are drawn.
enum class Draw { kUniform, kAwayFromZero, kPositive };

struct InputCase {
  std::string name;
  Shape shape;
  Draw draw = Draw::kUniform;
  /// Nonzero: integer class labels (i64) in 0..classes-1, not differentiated.
  std::int64_t classes = 0;
};

struct Case {
  std::string kernel;
  std::vector<InputCase> inputs;
  nlohmann::json params = nlohmann::json::object();
  /// maximum: b = a + an offset of at least 0.1 in size (no ties), needs a's values.
  bool no_ties = false;
};

Shape to_shape(const zspace::Point& p) {
  return Shape(p.begin(), p.end());
}

std::int64_t numel(const Shape& s) {
  std::int64_t n = 1;
  for (std::int64_t e : s) n *= e;
  return n;
}

class Cases {
 public:
  explicit Cases(std::uint64_t seed) : rng_(seed) {}

  std::int64_t pick(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_);
  }
  Shape shape(std::size_t rank) {
    Shape s;
    for (std::size_t i = 0; i < rank; ++i) s.push_back(pick(1, 4));
    return s;
  }
  // A shape that broadcasts to `full`: a suffix, some dims set to 1.
  Shape broadcastable(const Shape& full) {
    const auto drop = static_cast<std::size_t>(pick(0, static_cast<std::int64_t>(full.size())));
    Shape s(full.begin() + static_cast<std::ptrdiff_t>(drop), full.end());
    for (std::int64_t& e : s) {
      if (pick(0, 2) == 0) e = 1;
    }
    return s;
  }

  std::vector<Case> for_kernel(const std::string& k) {
    std::vector<Case> out;
    const int trials = k == "reduce" ? 4 : 3;  // reduce: one case per monoid
    for (int trial = 0; trial < trials; ++trial) out.push_back(one(k));
    return out;
  }

 private:
  Case one(const std::string& k) {
    // The masks (kernels/masks.yaml) pass no gradient to their operands: a comparison of
    // uniform draws is never within the differences' step of a tie, a logical operand away from
    // 0 never changes its truth.
    const std::set<std::string> binary = {
        "add",        "sub",     "mul",           "div",         "maximum",    "equal",      "less",
        "less_equal", "greater", "greater_equal", "logical_and", "logical_or", "logical_xor"};
    const std::set<std::string> unary = {"relu",       "neg",   "exp",  "tanh",      "sigmoid",
                                         "gelu",       "sqrt",  "log",  "ones_like", "zeros_like",
                                         "mul_scalar", "floor", "ceil", "round",     "logical_not"};
    Case c{k, {}, nlohmann::json::object(), false};
    if (binary.count(k)) {
      Shape full = shape(static_cast<std::size_t>(pick(1, 3)));
      Shape a = full, b = broadcastable(full);
      if (pick(0, 1) == 0) std::swap(a, b);
      const bool logical = k.starts_with("logical_");
      c.inputs = {{"A", a, logical ? Draw::kAwayFromZero : Draw::kUniform},
                  {"B", b, k == "div" || logical ? Draw::kAwayFromZero : Draw::kUniform}};
      c.no_ties = k == "maximum";
    } else if (k == "where") {  // d_result to a where cond holds, to b elsewhere; none to cond
      Shape full = shape(static_cast<std::size_t>(pick(1, 3)));
      Shape cond = broadcastable(full), a = full, b = broadcastable(full);
      if (pick(0, 1) == 0) std::swap(a, b);
      c.inputs = {
          {"C", cond, Draw::kAwayFromZero}, {"A", a, Draw::kUniform}, {"B", b, Draw::kUniform}};
    } else if (unary.count(k)) {
      // floor, ceil, round: steps at integers and halves; ±[0.1, 1) meets neither 0 nor ±1
      // (and a half only within the differences' step, with a negligible chance).
      const bool step = k == "floor" || k == "ceil" || k == "round";
      const Draw draw = k == "relu" || step || k == "logical_not" ? Draw::kAwayFromZero
                        : k == "sqrt" || k == "log"               ? Draw::kPositive
                                                                  : Draw::kUniform;
      c.inputs = {{"X", shape(static_cast<std::size_t>(pick(1, 3))), draw}};
      if (k == "mul_scalar") c.params = {{"factor", 1.5}, {"divisor", pick(1, 5)}};
    } else if (k == "cast") {  // to the same dtype: the VJP's cast back reads x.dtype
      c.inputs = {{"X", shape(static_cast<std::size_t>(pick(1, 3)))}};
      c.params = {{"to", "f64"}};
    } else if (k == "bias_add") {
      Shape x = shape(static_cast<std::size_t>(pick(1, 3)));
      c.inputs = {{"X", x}, {"bias", {x.back()}}};
    } else if (k == "linear" || k == "linear_nobias") {
      Shape x = shape(static_cast<std::size_t>(pick(1, 3)));
      const std::int64_t out = pick(1, 4);
      c.inputs = {{"X", x}, {"W", {out, x.back()}}};
      if (k == "linear") c.inputs.push_back({"b", {out}});
    } else if (k == "matmul") {
      const std::int64_t m = pick(1, 3), kk = pick(1, 3), n = pick(1, 3);
      Shape batch = shape(static_cast<std::size_t>(pick(0, 2)));
      Shape a = batch, b = broadcastable(batch);
      a.insert(a.end(), {m, kk});
      b.insert(b.end(), {kk, n});
      c.inputs = {{"A", a}, {"B", b}};
    } else if (k == "transpose") {
      c.inputs = {{"X", shape(static_cast<std::size_t>(pick(2, 3)))}};
    } else if (k == "permute") {
      Shape x = shape(3);
      std::vector<std::int64_t> perm = {0, 1, 2};
      std::shuffle(perm.begin(), perm.end(), rng_);
      c.inputs = {{"X", x}};
      c.params = {{"perm", perm}};
    } else if (k == "reshape") {
      const std::int64_t p = pick(1, 3), q = pick(1, 3), r = pick(1, 3);
      c.inputs = {{"X", {p, q, r}}};
      const int form = static_cast<int>(pick(0, 2));
      c.params = {{"shape", form == 0   ? Shape{p * q, r}
                            : form == 1 ? Shape{p, q * r}
                                        : Shape{p * q * r}}};
    } else if (k == "slice") {
      Shape x = shape(static_cast<std::size_t>(pick(1, 3)));
      const auto dim = static_cast<std::size_t>(pick(0, static_cast<std::int64_t>(x.size()) - 1));
      x[dim] = pick(2, 5);
      const std::int64_t start = pick(0, x[dim] - 1), end = pick(start + 1, x[dim]);
      c.inputs = {{"X", x}};
      c.params = {{"dim", dim}, {"start", start}, {"end", end}};
    } else if (k == "softmax") {
      c.inputs = {{"X", shape(static_cast<std::size_t>(pick(1, 3)))}};
    } else if (k == "sum" || k == "mean" || k == "max") {
      Shape x = shape(static_cast<std::size_t>(pick(1, 3)));
      c.inputs = {{"X", x}};
      c.no_ties = k == "max";
      c.params = {{"dim", pick(-static_cast<std::int64_t>(x.size()), x.size() - 1)}};
    } else if (k == "mse") {
      const Shape x = {pick(1, 4), pick(1, 4)};
      c.inputs = {{"P", x}, {"T", x}};
    } else if (k == "cross_entropy") {
      const std::int64_t n = pick(1, 4), classes = pick(1, 4);
      c.inputs = {{"Z", {n, classes}, Draw::kUniform}, {"Y", {n}, Draw::kUniform, classes}};
    } else if (k == "broadcast") {
      Shape x = shape(static_cast<std::size_t>(pick(0, 2)));
      c.inputs = {{"X", x}};
      c.params = {{"dim", pick(0, static_cast<std::int64_t>(x.size()))}, {"size", pick(1, 4)}};
    } else if (k == "conv2d") {  // stride and padding (pad + conv2d: pad's VJP too)
      const std::int64_t kh = pick(1, 3), kw = pick(1, 3), padding = pick(0, 2);
      const std::int64_t ih = std::max<std::int64_t>(kh - 2 * padding, 1) + pick(0, 3);
      const std::int64_t iw = std::max<std::int64_t>(kw - 2 * padding, 1) + pick(0, 3);
      const std::int64_t cin = pick(1, 3);
      c.inputs = {{"X", {pick(1, 2), cin, ih, iw}}, {"W", {pick(1, 3), cin, kh, kw}}};
      c.params = {{"stride", pick(1, 3)}, {"padding", padding}};
    } else if (k == "pad" || k == "unpad") {
      const std::int64_t padding = pick(0, 2);
      Shape x = shape(static_cast<std::size_t>(pick(2, 4)));
      if (k == "unpad") {
        x[x.size() - 2] += 2 * padding;
        x[x.size() - 1] += 2 * padding;
      }
      c.inputs = {{"X", x}};
      c.params = {{"padding", padding}};
      if (k == "pad") c.params["value"] = 0.75;  // a constant border: no gradient reaches it
    } else if (k == "max_pool2d" || k == "avg_pool2d") {
      const std::int64_t kernel = pick(1, 3);
      c.inputs = {{"X", {pick(1, 2), pick(1, 2), kernel + pick(0, 3), kernel + pick(0, 3)}}};
      c.params = {{"kernel", kernel}, {"stride", pick(1, 3)}};
      c.no_ties = k == "max_pool2d";
    } else if (k == "variance") {
      Shape x = shape(static_cast<std::size_t>(pick(1, 3)));
      c.inputs = {{"X", x}};
      c.params = {{"dim", pick(-static_cast<std::int64_t>(x.size()), x.size() - 1)}};
    } else if (k == "reduce") {  // the blocks of a split reduction, combined by each monoid
      const std::vector<std::string> ops = {"sum", "max", "min", "prod"};
      const std::string op = ops[reduce_cases_++ % ops.size()];
      Shape x = shape(static_cast<std::size_t>(pick(1, 3)));
      x[0] = pick(2, 4);  // at least two blocks: with one, every monoid's gradient is d_result
      c.inputs = {{"X", x}};
      c.params = {{"op", op}};
      c.no_ties = op == "max" || op == "min";
    } else {
      ADD_FAILURE() << "autodiff_fd_test has no case for kernel " << k
                    << " (it has a VJP: add a case)";
    }
    return c;
  }

  std::mt19937_64 rng_;
  std::size_t reduce_cases_ = 0;
};

Buffer random_buffer(const Shape& shape, Draw draw, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0), mag(0.1, 1.0), pos(0.5, 2.0);
  std::vector<double> v(static_cast<std::size_t>(numel(shape)));
  for (double& x : v) {
    switch (draw) {
      case Draw::kUniform:
        x = u(rng);
        break;
      case Draw::kAwayFromZero:
        x = (u(rng) < 0 ? -1.0 : 1.0) * mag(rng);
        break;
      case Draw::kPositive:
        x = pos(rng);
        break;
    }
  }
  return Buffer::from_values<double>(zspace::Range::of_shape(zspace::Point(shape)), v);
}

// Runs the FD check of one case with `signatures`; returns the mismatches (empty when it holds).
std::string check_case(const Case& c, const mk::SignatureRegistry& signatures, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  mk::Graph g(signatures);
  std::vector<mk::Tensor> inputs, wrt;
  std::vector<const InputCase*> wrt_cases;
  for (const InputCase& in : c.inputs) {
    inputs.push_back(
        g.input(in.name, in.classes ? ir::DType::kInt64 : ir::DType::kFloat64, in.shape));
    if (in.classes == 0) {
      wrt.push_back(inputs.back());
      wrt_cases.push_back(&in);
    }
  }
  const mk::Tensor y = g.call(c.kernel, inputs, c.params);
  const mk::Tensor r = g.input("R", ir::DType::kFloat64, to_shape(y.type().shape()));
  mk::Tensor loss = g.call("mul", {y, r});
  while (loss.type().rank() > 0) loss = g.call("sum", {loss}, {{"dim", 0}});
  loss = g.assign("L", loss);
  std::vector<ir::Issue> issues;
  mk::GradOptions options;
  options.issues = &issues;
  const std::vector<mk::Tensor> grads = g.grad(loss, wrt, options);
  g.output(loss);
  for (const mk::Tensor& d : grads) g.output(d);
  std::vector<std::string> grad_names;
  for (const mk::Tensor& d : grads) grad_names.push_back(d.name());
  const std::string loss_name = loss.name();
  const Shape y_shape = to_shape(y.type().shape());
  const ir::Graph graph = g.take();

  std::map<std::string, Buffer> values;
  for (const InputCase& in : c.inputs) {
    if (in.classes == 0) {
      values[in.name] = random_buffer(in.shape, in.draw, rng);
      continue;
    }
    std::vector<std::int64_t> labels(static_cast<std::size_t>(numel(in.shape)));
    for (std::int64_t& l : labels) {
      l = std::uniform_int_distribution<std::int64_t>(0, in.classes - 1)(rng);
    }
    values[in.name] =
        Buffer::from_values<std::int64_t>(zspace::Range::of_shape(zspace::Point(in.shape)), labels);
  }
  if (c.no_ties && values.contains("X")) {  // max: distinct cells 0.2 apart, shuffled
    auto xv = values["X"].values<double>();
    for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = 0.2 * static_cast<double>(i) - 0.5;
    std::shuffle(xv.begin(), xv.end(), rng);
  } else if (c.no_ties) {  // b = a + offset, |offset| ≥ 0.1, where the shapes agree cell by cell
    Buffer& a = values["A"];
    Buffer& b = values["B"];
    std::uniform_real_distribution<double> mag(0.1, 0.5);
    if (a.range() == b.range()) {
      auto av = a.values<double>();
      auto bv = b.values<double>();
      for (std::size_t i = 0; i < av.size(); ++i) {
        bv[i] = av[i] + (rng() % 2 ? 1.0 : -1.0) * mag(rng);
      }
    } else {  // broadcast: spread the values of each so that no pair is within 0.05
      auto av = a.values<double>();
      auto bv = b.values<double>();
      for (std::size_t i = 0; i < av.size(); ++i) av[i] = 0.2 * static_cast<double>(i) + 0.05;
      for (std::size_t i = 0; i < bv.size(); ++i) bv[i] = 0.2 * static_cast<double>(i) + 0.15;
    }
  }
  values["R"] = random_buffer(y_shape, Draw::kUniform, rng);

  const NaiveExecutor naive(graph);
  auto run = [&](const std::map<std::string, Buffer>& in) {
    return naive.run(bind_by_name(graph, in));
  };
  auto find = [&](const std::string& name) {
    return *graph.as_tensor(*graph.find_named(ir::NodeKind::kTensor, name).node);
  };
  const BufferMap base = run(values);
  const double l0 = base.at(find(loss_name)).values<double>()[0];

  std::string failures;
  for (std::size_t i = 0; i < wrt_cases.size(); ++i) {
    const std::string& name = wrt_cases[i]->name;
    const auto analytic = base.at(find(grad_names[i])).values<double>();
    const auto n = static_cast<std::size_t>(numel(wrt_cases[i]->shape));
    if (analytic.size() != n)
      return fmt::format("d{}: {} cells, expected {}", name, analytic.size(), n);
    for (std::size_t j = 0; j < n; ++j) {
      std::map<std::string, Buffer> plus = values, minus = values;
      const double x = values.at(name).values<double>()[j];
      const double h = 1e-6 * std::max(1.0, std::fabs(x));
      plus.at(name).values<double>()[j] = x + h;
      minus.at(name).values<double>()[j] = x - h;
      const double lp = run(plus).at(find(loss_name)).values<double>()[0];
      const double lm = run(minus).at(find(loss_name)).values<double>()[0];
      const double fd = (lp - lm) / (2 * h);
      const double tol =
          1e-6 * std::max(std::fabs(fd), std::fabs(analytic[j])) + 1e-8 * (1.0 + std::fabs(l0));
      if (!(std::fabs(fd - analytic[j]) <= tol)) {
        failures += fmt::format("  d{}[{}]: grad {:.10g}, finite difference {:.10g}\n", name, j,
                                analytic[j], fd);
      }
    }
  }
  return failures;
}

std::string describe(const Case& c) {
  std::string out = c.kernel + "(";
  for (const InputCase& in : c.inputs) {
    out +=
        fmt::format("{}{}[{}]", out.back() == '(' ? "" : ", ", in.name, fmt::join(in.shape, ","));
  }
  return out + ") " + c.params.dump();
}

TEST(AutodiffFiniteDifferences, EveryKernelWithAVjpAgreesWithFloat64CentralDifferences) {
  const mk::SignatureRegistry& signatures = mk::builtin_signatures();
  const mk::VjpCoverage coverage = mk::vjp_coverage(signatures);
  ASSERT_GE(coverage.with_vjp.size(), 25u);
  Cases cases(20261127);
  std::uint64_t seed = 1;
  for (const std::string& kernel : coverage.with_vjp) {
    for (const Case& c : cases.for_kernel(kernel)) {
      SCOPED_TRACE(describe(c));
      const std::string failures = check_case(c, signatures, ++seed);
      EXPECT_EQ(failures, "") << describe(c);
    }
  }
}

// Two or more reads of one tensor: the cotangents are summed (y = x·x + exp(x), dy/dx = 2x + eˣ).
TEST(AutodiffFiniteDifferences, ATensorReadSeveralTimesGetsTheSumOfItsCotangents) {
  mk::Graph g;
  const mk::Tensor x = g.input("X", ir::DType::kFloat64, {3});
  const mk::Tensor y = g.call("add", {g.call("mul", {x, x}), g.call("exp", {x})});
  const mk::Tensor l = g.assign("L", g.call("sum", {y}));
  const std::vector<mk::Tensor> grads = g.grad(l, std::vector<mk::Tensor>{x});
  g.output(grads[0]);
  const ir::Graph graph = g.take();
  const NaiveExecutor naive(graph);
  const std::vector<double> xs = {-0.5, 0.25, 2.0};
  const BufferMap out = naive.run(
      bind_by_name(graph, {{"X", Buffer::from_values<double>(zspace::Range::of_shape({3}), xs)}}));
  const auto d = out.at(*graph.as_tensor(*graph.find_named(ir::NodeKind::kTensor, "dX").node))
                     .values<double>();
  for (std::size_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(d[i], 2 * xs[i] + std::exp(xs[i]));
}

// The check is not vacuous: kernels/ copied with one VJP expression wrong, the check of that
// kernel reports mismatches. Mutations: tanh's gradient taken as sigmoid's (right shape, wrong
// derivative); mul's b gradient read from b instead of a; linear's w gradient transposed input
// (x read where the cotangent goes); conv2d's input and filter gradients scaled (the padded
// cases also run pad's VJP); max pooling's gradient spread as average pooling's; variance
// without its factor 2; reduce's gradient taken as sum's for every monoid. sum's broadcast along
// the wrong dim is a shape error caught by grad itself, so it is left out.
TEST(AutodiffFiniteDifferences, MutatedVjpsAreCaught) {
  struct Mutation {
    std::string kernel, file, from, to;
  };
  const std::vector<Mutation> mutations = {
      {"tanh", "elementwise_unary.yaml", "tanh_grad(result, d_result)",
       "sigmoid_grad(result, d_result)"},
      {"mul", "elementwise_binary.yaml", "mul(d_result, a)", "mul(d_result, b)"},
      {"linear", "linear.yaml", "w: \"linear_grad_w(x, d_result)\"",
       "w: \"mul_scalar(linear_grad_w(x, d_result), factor=1.001)\""},
      {"gelu", "elementwise_unary.yaml", "gelu_grad(x, d_result)", "relu_grad(x, d_result)"},
      {"conv2d", "conv.yaml", "conv2d_grad_input(x, w, d_result, stride=stride)",
       "mul_scalar(conv2d_grad_input(x, w, d_result, stride=stride), factor=1.001)"},
      {"conv2d", "conv.yaml",
       "conv2d_grad_weight(x, d_result, kh=w.shape.2, kw=w.shape.3, stride=stride)",
       "mul_scalar(conv2d_grad_weight(x, d_result, kh=w.shape.2, kw=w.shape.3, stride=stride), "
       "factor=0.999)"},
      {"max_pool2d", "pool.yaml", "x: \"max_pool2d_grad(", "x: \"avg_pool2d_grad("},
      {"variance", "reductions.yaml", "factor=2.0, divisor=x.shape.dim", "divisor=x.shape.dim"},
      {"reduce", "reductions.yaml", "reduce_grad(x, result, d_result, op=op)",
       "broadcast(d_result, dim=0, size=x.shape.0)"},
  };
  for (const Mutation& m : mutations) {
    SCOPED_TRACE(m.kernel);
    const fs::path dir =
        fs::temp_directory_path() / fmt::format("tapestry_vjp_{}_{}", m.kernel, ::getpid());
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (const fs::directory_entry& e : fs::directory_iterator(TAPESTRY_KERNELS_SOURCE_DIR)) {
      std::ifstream in(e.path());
      std::stringstream text;
      text << in.rdbuf();
      std::string s = text.str();
      if (e.path().filename() == m.file) {
        const std::size_t at = s.find(m.from);
        ASSERT_NE(at, std::string::npos) << m.from;
        s.replace(at, m.from.size(), m.to);
      }
      std::ofstream(dir / e.path().filename()) << s;
    }
    const mk::SignatureRegistry mutated = mk::SignatureRegistry::from_directory(dir);
    Cases cases(7);
    bool caught = false;
    std::uint64_t seed = 100;
    for (const Case& c : cases.for_kernel(m.kernel)) {
      caught = caught || !check_case(c, mutated, ++seed).empty();
      EXPECT_EQ(check_case(c, mk::builtin_signatures(), seed), "") << describe(c);
    }
    EXPECT_TRUE(caught) << "the mutated VJP of " << m.kernel << " passed the check";
    fs::remove_all(dir);
  }
}

// The fast kernels of kernels/autodiff.yaml against the reference ones, float32: bitwise where
// they evaluate the same formulas in the same order, within float32 rounding for the GEMM; the
// fast bodies of unslice, unpad, mul_scalar and maximum's masks run without a fallback.
TEST(AutodiffFastKernels, AgreeWithTheReference) {
  struct One {
    std::string kernel;
    std::vector<Shape> shapes;
    nlohmann::json params;
    bool bitwise;
  };
  const std::vector<One> cases = {
      {"sum_to", {{6, 5, 7}}, {{"shape", {5, 1}}}, true},
      {"sum_to", {{9, 33}}, {{"shape", {33}}}, true},
      {"relu_grad", {{4, 33}, {4, 33}}, {}, true},
      {"gelu_grad", {{4, 33}, {4, 33}}, {}, true},
      {"tanh_grad", {{4, 33}, {4, 33}}, {}, true},
      {"sigmoid_grad", {{4, 33}, {4, 33}}, {}, true},
      {"sqrt_grad", {{4, 33}, {4, 33}}, {}, true},
      {"broadcast", {{4, 5}}, {{"dim", 1}, {"size", 3}}, true},
      {"expand", {{4, 1, 5}}, {{"dim", 1}, {"size", 3}}, true},
      {"linear_grad_w", {{40, 12}, {40, 9}}, {}, false},
      {"mul_scalar", {{4, 33}}, {{"factor", 1.5}, {"divisor", 7}}, true},
      {"maximum_grad_a", {{4, 33}, {33}, {4, 33}}, {}, true},
      {"maximum_grad_b", {{4, 1, 5}, {3, 5}, {4, 3, 5}}, {}, true},
      {"unslice", {{4, 3, 5}}, {{"dim", 1}, {"start", 2}, {"size", 7}}, true},
      {"unslice", {{6, 5}}, {{"dim", 1}, {"start", 0}, {"size", 5}}, true},
      {"unpad", {{2, 3, 7, 9}}, {{"padding", 2}}, true},
  };
  // The kernels whose fast body must run (not fall back to the reference) on these shapes.
  const std::set<std::string> no_fallback = {"mul_scalar", "maximum_grad_a", "maximum_grad_b",
                                             "unslice",    "unpad",          "relu_grad",
                                             "broadcast",  "linear_grad_w"};
  std::mt19937_64 rng(11);
  for (const One& c : cases) {
    SCOPED_TRACE(c.kernel);
    mk::Graph g;
    std::vector<mk::Tensor> in;
    std::map<std::string, Buffer> values;
    for (std::size_t i = 0; i < c.shapes.size(); ++i) {
      const std::string name = fmt::format("I{}", i);
      in.push_back(g.input(name, ir::DType::kFloat32, c.shapes[i]));
      std::uniform_real_distribution<float> u(c.kernel == "sqrt_grad" ? 0.5F : -2.0F, 2.0F);
      std::vector<float> v(static_cast<std::size_t>(numel(c.shapes[i])));
      for (float& x : v) x = u(rng);
      values[name] =
          Buffer::from_values<float>(zspace::Range::of_shape(zspace::Point(c.shapes[i])), v);
    }
    g.output(g.assign("R", g.call(c.kernel, in, c.params)));
    const ir::Graph graph = g.take();
    const ir::TensorId r = *graph.as_tensor(*graph.find_named(ir::NodeKind::kTensor, "R").node);
    const Buffer ref = NaiveExecutor(graph).run(bind_by_name(graph, values)).at(r);
    reset_fast_kernel_counts();
    const Buffer fast = NaiveExecutor(graph, fast_kernels()).run(bind_by_name(graph, values)).at(r);
    if (no_fallback.contains(c.kernel)) {
      EXPECT_EQ(fast_kernel_counts().fallback_calls, 0u) << "the fast body fell back";
      EXPECT_GE(fast_kernel_counts().fast_calls, 1u);
    }
    const auto a = ref.values<float>();
    const auto b = fast.values<float>();
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (c.bitwise) {
        EXPECT_EQ(a[i], b[i]) << i;
      } else {
        EXPECT_NEAR(a[i], b[i], 1e-5 * 40) << i;
      }
    }
  }
}

}  // namespace
}  // namespace tapestry::runtime
