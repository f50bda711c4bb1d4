// Kernel files: what the template language accepts, and every kind of mistake reported at its
// line and column (each case puts the expected diagnostic next to the bad kernel text).
#include <gmock/gmock.h>

#include "support/diagnostic_testing.h"
#include "tapestry/metakernel/kernel_body.h"
#include "tapestry/metakernel/loader.h"
#include "test_util.h"

namespace tapestry::metakernel {
namespace {

using namespace testing;  // NOLINT
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::vector<Metakernel> parse(const std::string& text, const KernelFinder& find = {}) {
  return parse_kernels(std::make_shared<const SourceFile>("k.yaml", text), find);
}

std::string parse_error(const std::string& text) {
  try {
    parse(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// A small valid kernel the cases below break one piece at a time.
const char* kScale = R"(kernel: scale
types: {T: float}
inputs:
  x: {shape: "[$d...]", dtype: T}
params:
  factor: {type: float, default: 2}
outputs:
  result: {shape: "[$d...]", dtype: T}
index: "[$d...]"
ipfs:
  x: "[$d...]"
  result: "[$d...]"
)";

TEST(Loader, ReadsAValidKernel) {
  std::vector<Metakernel> ks = parse(kScale);
  ASSERT_EQ(ks.size(), 1u);
  const Metakernel& k = ks[0];
  EXPECT_EQ(k.name, "scale");
  EXPECT_EQ(k.call_form(), "scale(x, factor=2.0)");
  EXPECT_EQ(k.pos, (SourcePos{1, 9}));
  EXPECT_EQ(k.inputs.at(0).pos, (SourcePos{4, 3}));
  Signature sig = evaluate_signature(k, std::vector<Argument>{{"X", tt("f32[3, 4]")}}, {});
  EXPECT_EQ(sig.params, (nlohmann::json{{"factor", 2.0}}));
  EXPECT_EQ(sig.outputs[0].type.to_string(), "f32[3, 4]");
}

TEST(Loader, ExtendsOverridesFieldsAndFlowListsWork) {
  std::vector<Metakernel> ks = parse(std::string(kScale) + R"(---
kernel: scale_int
extends: scale
types: {T: int}
params:
  factor: int
---
kernel: window_sum
summary: "a 1-d stencil with overlapping windows"
types: {T: any}
inputs: {x: {shape: [$n], dtype: T}}
params: {width: {type: int, min: 1, default: 3}}
let: {m: "$n - width + 1"}
checks:
  - "$n >= width"
outputs: {result: {shape: [$m], dtype: T}}
index: [$m]
ipfs:
  x: "[$m : width]"
  result: [$m]
)");
  ASSERT_EQ(ks.size(), 3u);
  EXPECT_EQ(ks[1].call_form(), "scale_int(x, factor=int)");
  EXPECT_EQ(ks[1].types.at(0).second, (std::vector<DType>{DType::kInt32, DType::kInt64}));
  EXPECT_EQ(ks[1].outputs.size(), 1u);  // inherited
  Signature sig = evaluate_signature(ks[2], std::vector<Argument>{{"V", tt("f32[10]")}}, {});
  EXPECT_EQ(sig.outputs[0].type.to_string(), "f32[8]");
  EXPECT_EQ(sig.inputs[0].ipf.apply(zr("zr[2:4]")), zr("zr[2:6]"));  // windows overlap
  EXPECT_THAT(
      [&] {
        evaluate_signature(ks[2], std::vector<Argument>{{"V", tt("f32[2]")}}, {});
      },
      ::testing::ThrowsMessage<Error>(::testing::StrEq("window_sum: check failed: $n >= width")));
}

struct BadKernel {
  const char* name;
  std::string text;
  const char* expected;  // the first line of the error: file:line:col: error: message
};

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

class LoaderInvalid : public ::testing::TestWithParam<BadKernel> {};

TEST_P(LoaderInvalid, PointsAtTheMistake) {
  const std::string error = parse_error(GetParam().text);
  EXPECT_EQ(error.substr(0, error.find('\n')), GetParam().expected) << error;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, LoaderInvalid,
    ::testing::Values(
        BadKernel{"yaml_syntax", "kernel: [a\n",
                  "k.yaml:2:1: error: end of sequence flow not found"},
        BadKernel{"unknown_key", replace(kScale, "index:", "indx:"),
                  "k.yaml:9:1: error: unknown key 'indx' (kernel keys: kernel, extends, aliases, "
                  "summary, doc, "
                  "types, inputs, params, group_ranks, broadcast, let, checks, outputs, index, "
                  "reductions, ipfs, "
                  "sugar, hook, body, facts, vjp)"},
        // VJPs (autodiff.h): ports, names and derived values checked at their column.
        BadKernel{"vjp_unknown_port", std::string(kScale) + "vjp:\n  y: \"d_result\"\n",
                  "k.yaml:14:3: error: vjp: 'y' is not an input of scale (inputs: x)"},
        BadKernel{"vjp_missing_port", std::string(kScale) + "vjp: {}\n",
                  "k.yaml:13:6: error: vjp: the gradient of input x is missing (write `x: none` "
                  "for an input without one)"},
        BadKernel{"vjp_unknown_tensor",
                  std::string(kScale) + "vjp:\n  x: \"mul_scalar(d_out, factor=factor)\"\n",
                  "k.yaml:14:18: error: vjp: 'd_out' is not a tensor of scale (a gradient uses x "
                  "result d_result)"},
        BadKernel{"vjp_bad_derived",
                  std::string(kScale) + "vjp:\n  x: \"reshape(d_result, shape=x.size)\"\n",
                  "k.yaml:14:31: error: vjp: 'x.size' is not a value a gradient can use "
                  "(<port>.shape, <port>.shape.<axis param>, <port>.dtype, <ints param>.inverse)"},
        BadKernel{"vjp_syntax", std::string(kScale) + "vjp:\n  x: \"neg(d_result\"\n",
                  "k.yaml:14:19: error: expected ')' to close the arguments of neg, found the end "
                  "of the file"},
        // Bodies (kernel_body.h): checked against the kernel's inputs and numeric params.
        BadKernel{"body_syntax", std::string(kScale) + "body: \"x * (factor\"\n",
                  "k.yaml:13:7: error: body: column 12: expected ')' to close the parenthesis"},
        BadKernel{"body_unknown_name", std::string(kScale) + "body: \"x * y\"\n",
                  "k.yaml:13:7: error: body: 'y' is neither an input nor a param (a body uses "
                  "the inputs and the int or float params: x factor)"},
        BadKernel{"body_unknown_function", std::string(kScale) + "body: \"sqr(x)\"\n",
                  "k.yaml:13:7: error: body: column 1: unknown function 'sqr' (functions: exp "
                  "tanh sigmoid relu gelu neg max min)"},
        BadKernel{"body_arity", std::string(kScale) + "body: \"max(x)\"\n",
                  "k.yaml:13:7: error: body: column 1: max takes 2 arguments, got 1"},
        BadKernel{"body_trailing", std::string(kScale) + "body: \"x x\"\n",
                  "k.yaml:13:7: error: body: column 3: unexpected 'x'"},
        BadKernel{
            "body_two_outputs",
            replace(kScale, "outputs:\n", "outputs:\n  other: {shape: \"[$d...]\", dtype: T}\n") +
                "body: \"x\"\n",
            "k.yaml:14:7: error: body: a kernel with a body has one output, scale has 2"},
        BadKernel{"no_name", replace(kScale, "kernel: scale\n", ""),
                  "k.yaml:1:1: error: a kernel document needs a 'kernel: <name>' key"},
        BadKernel{"bad_name", replace(kScale, "kernel: scale", "kernel: sc-ale"),
                  "k.yaml:1:9: error: the kernel name must be an identifier "
                  "([A-Za-z_][A-Za-z0-9_]*), got 'sc-ale'"},
        BadKernel{"bad_dtype_set", replace(kScale, "{T: float}", "{T: floaty}"),
                  "k.yaml:2:12: error: unknown dtype or dtype set 'floaty' (sets: any, float, int; "
                  "dtypes: f32 f64 "
                  "i32 i64 bf16 f16)"},
        BadKernel{"loom_only_dtype", replace(kScale, "{T: float}", "{T: [f32, uint8]}"),
                  "k.yaml:2:12: error: unknown dtype or dtype set 'uint8' (sets: any, float, int; "
                  "dtypes: f32 f64 i32 i64 bf16 f16)"},
        BadKernel{"pattern_syntax",
                  replace(kScale, "x: {shape: \"[$d...]\"", "x: {shape: \"[$d... $e]\""),
                  "k.yaml:4:22: error: expected ',' or ']' after a list entry, found '$'"},
        BadKernel{"input_expression",
                  replace(kScale, "x: {shape: \"[$d...]\"", "x: {shape: \"[$d..., $a + 1]\""),
                  "k.yaml:4:23: error: scale: an input shape admits only $name, $group... and "
                  "integer literals"},
        BadKernel{"unbound_dim",
                  replace(kScale, "result: {shape: \"[$d...]\"", "result: {shape: \"[$d..., $q]\""),
                  "k.yaml:8:28: error: scale: unknown dimension $q in an output shape"},
        BadKernel{"group_without_dots",
                  replace(kScale, "result: {shape: \"[$d...]\"", "result: {shape: \"[$d]\""),
                  "k.yaml:8:21: error: scale: unknown dimension $d in an output shape (it is a "
                  "group: write $d...)"},
        BadKernel{
            "unknown_param",
            replace(kScale, "result: {shape: \"[$d...]\"", "result: {shape: \"[$d..., factr]\""),
            "k.yaml:8:28: error: scale: unknown parameter 'factr' in an output shape"},
        BadKernel{"missing_ipf", replace(kScale, "  x: \"[$d...]\"\n", ""),
                  "k.yaml:4:3: error: scale: input x has no IPF (add it under 'ipfs')"},
        BadKernel{
            "ipf_for_nothing",
            replace(kScale, "  x: \"[$d...]\"\n", "  x: \"[$d...]\"\n  y: \"[$d...]\"\n"),
            "k.yaml:12:8: error: scale: ipfs names y, which is neither an input nor an output"},
        BadKernel{"ipf_offset_not_index", std::string(kScale) + "let: {k: \"2\"}\n", "(no error)"},
        BadKernel{"reduction_not_in_index", std::string(kScale) + "reductions: {e: sum}\n",
                  "k.yaml:13:14: error: scale: reduction e is not in the index"},
        BadKernel{
            "output_moves_along_reduction", std::string(kScale) + "reductions: {d: sum}\n",
            "k.yaml:12:13: error: scale: an output IPF must not move along the reduction $d..."},
        BadKernel{"bad_monoid", std::string(kScale) + "reductions: {d: mean}\n",
                  "k.yaml:13:14: error: scale: reduction d: 'mean' is neither a monoid (sum, max, "
                  "min, prod) nor a "
                  "monoid parameter"},
        BadKernel{"unknown_hook", std::string(kScale) + "hook: flip\n",
                  "k.yaml:1:9: error: scale: unknown hook 'flip' (hooks: reshape, permute, sum_to, "
                  "arg_extreme)"},
        BadKernel{"hook_with_index", std::string(kScale) + "hook: reshape\n",
                  "k.yaml:1:9: error: scale: a hook kernel gets its index, reductions and IPFs "
                  "from the hook; "
                  "remove them"},
        BadKernel{"undeclared_type", replace(kScale, "{T: float}", "{U: float}"),
                  "k.yaml:4:32: error: scale: type variable T is not declared in 'types'"},
        BadKernel{"output_type_unbound",
                  replace(replace(kScale, "{T: float}", "{T: float, U: int}"),
                          "result: {shape: \"[$d...]\", dtype: T",
                          "result: {shape: \"[$d...]\", dtype: U"),
                  "k.yaml:8:37: error: scale: output type U is not the type of any input"},
        BadKernel{"param_type", replace(kScale, "type: float", "type: double"),
                  "k.yaml:6:18: error: unknown parameter type 'double' (int, ints, bool, float, "
                  "str, axis, monoid)"},
        BadKernel{"param_default",
                  replace(kScale, "type: float, default: 2", "type: int, default: two"),
                  "k.yaml:6:32: error: the default of factor must be an integer, got 'two'"},
        BadKernel{
            "axis_without_of", replace(kScale, "type: float, default: 2", "type: axis"),
            "k.yaml:6:3: error: scale: axis parameter factor needs 'of: <input>' naming an input"},
        BadKernel{
            "extends_unknown", "kernel: k2\nextends: nothing\n",
            "k.yaml:2:10: error: extends 'nothing': no such kernel is loaded before this one"},
        BadKernel{
            "sugar_syntax",
            std::string(kScale) + "sugar: {when: \"factor != 2\", call: \"scale(x, factor=)\"}\n",
            "k.yaml:13:53: error: expected a parameter value (a number, a string, a name or a "
            "[list]), found ')'"},
        BadKernel{"duplicate_port", replace(kScale, "  result: {shape", "  x: {shape"),
                  "k.yaml:8:3: error: scale: x is both an input and an output, or declared twice"},
        BadKernel{"let_redefines", std::string(kScale) + "let: {d: \"2\"}\n",
                  "k.yaml:13:11: error: scale: let d redefines a pattern dimension"},
        BadKernel{"not_a_mapping", "- a\n- b\n",
                  "k.yaml:1:1: error: a kernel document must be a mapping, found a list"},
        // Facts (kernel_facts.h): every key checked, located at its value.
        BadKernel{"facts_unknown_key",
                  std::string(kScale) +
                      "facts: {class: elementwise, flops: 1, error_rule: elementwise, flop: 2}\n",
                  "k.yaml:13:64: error: unknown facts key 'flop' (class, flops, per_point, "
                  "error_rule, exact)"},
        BadKernel{
            "facts_class",
            std::string(kScale) + "facts: {class: pointwise, flops: 1, error_rule: elementwise}\n",
            "k.yaml:13:16: error: unknown kernel class 'pointwise' (elementwise, "
            "contraction, reduction, window, normalization, layout)"},
        BadKernel{
            "facts_flops",
            std::string(kScale) + "facts: {class: elementwise, flops: -1, error_rule: move}\n",
            "k.yaml:13:36: error: flops must be a number of FLOPs per index point (0 or "
            "more), got '-1'"},
        BadKernel{
            "facts_rule",
            std::string(kScale) + "facts: {class: elementwise, flops: 1, error_rule: fallback}\n",
            "k.yaml:13:51: error: unknown error rule 'fallback' (bilinear, additive, "
            "product, selection, elementwise, softmax, average, variance, move, index, "
            "decision, choice, monoid, worst_case)"},
        BadKernel{"facts_exact",
                  std::string(kScale) + "facts: {class: elementwise, flops: 1, error_rule: move, "
                                        "exact: yes}\n",
                  "k.yaml:13:64: error: exact must be true or false, got 'yes'"},
        BadKernel{"facts_required", std::string(kScale) + "facts: {class: elementwise, flops: 1}\n",
                  "k.yaml:13:8: error: facts of scale need 'error_rule' (class, flops and "
                  "error_rule are required unless the kernel extends one with facts)"},
        BadKernel{"facts_port",
                  std::string(kScale) +
                      "facts: {class: window, flops: 1, per_point: w, error_rule: "
                      "average}\n",
                  "k.yaml:13:45: error: per_point 'w' is not an input or output of scale"},
        BadKernel{"no_outputs", "kernel: k\ninputs: {}\n",
                  "k.yaml:1:9: error: k: a kernel needs at least one output"}),
    [](const ::testing::TestParamInfo<BadKernel>& info) { return std::string(info.param.name); });

// `facts:` reads into KernelFacts; a kernel that extends one inherits them and overrides keys.
// An int param's default may be an expression over the input sizes, evaluated once they are
// bound; a given value wins; the expression's names are checked when the file loads.
TEST(Loader, AnIntDefaultMayBeASizeExpression) {
  const std::string kernel = R"(kernel: mean_all
types: {T: float}
inputs:
  x: {shape: "[$n, $f]", dtype: T}
params:
  count: {type: int, min: 1, default: "$n * $f"}
outputs:
  result: {shape: "[]", dtype: T}
index: "[$n]"
reductions: {n: sum}
ipfs:
  x: "[$n, *]"
  result: "[]"
)";
  std::vector<Metakernel> ks = parse(kernel);
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].call_form(), "mean_all(x, count=$n * $f)");
  const std::vector<Argument> x = {{"X", tt("f32[4, 3]")}};
  EXPECT_EQ(evaluate_signature(ks[0], x, {}).params, (nlohmann::json{{"count", 12}}));
  EXPECT_EQ(evaluate_signature(ks[0], x, {{"count", 5}}).params, (nlohmann::json{{"count", 5}}));
  EXPECT_EQ(resolve_parameters(ks[0], x, {}), (nlohmann::json{{"count", 12}}));
  const std::vector<Argument> empty = {{"X", tt("f32[0, 3]")}};
  EXPECT_THAT([&] { (void)evaluate_signature(ks[0], empty, {}); },
              ::testing::ThrowsMessage<Error>(HasSubstr("count")));

  std::string bad = kernel;
  bad.replace(bad.find("$n * $f"), 7, "$n * $q");
  EXPECT_THAT(parse_error(bad), HasSubstr("unknown dimension $q in a parameter's default"));
}

TEST(Loader, FactsAreReadAndInherited) {
  std::vector<Metakernel> ks = parse(std::string(kScale) +
                                     "facts: {class: window, flops: 3, per_point: x, error_rule: "
                                     "average}\n---\nkernel: scale2\nextends: scale\n"
                                     "facts: {flops: 0.5, exact: true}\n---\nkernel: scale3\n"
                                     "extends: scale2\n");
  ASSERT_EQ(ks.size(), 3u);
  ASSERT_TRUE(ks[0].facts);
  EXPECT_EQ(ks[0].facts->kind, KernelClass::kWindow);
  EXPECT_EQ(ks[0].facts->flops, 3);
  EXPECT_EQ(ks[0].facts->per_point, "x");
  EXPECT_EQ(ks[0].facts->error_rule, ErrorRule::kAverage);
  EXPECT_FALSE(ks[0].facts->exact);
  EXPECT_TRUE(ks[0].facts->declared);
  KernelFacts child = *ks[0].facts;
  child.flops = 0.5;
  child.exact = true;
  EXPECT_EQ(ks[1].facts, child);
  EXPECT_EQ(ks[2].facts, child);
  EXPECT_FALSE(parse(kScale)[0].facts);  // none declared: an unknown kernel
}

// The kernel files' dtype sets, from the dtype table: every .tap dtype, its floats, its integers.
TEST(Loader, DTypeSetsComeFromTheTable) {
  using ir::DType;
  EXPECT_EQ(dtype_set("any"),
            (std::vector<DType>{DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64,
                                DType::kBFloat16, DType::kFloat16}));
  EXPECT_EQ(dtype_set("float"), (std::vector<DType>{DType::kFloat32, DType::kFloat64,
                                                    DType::kBFloat16, DType::kFloat16}));
  EXPECT_EQ(dtype_set("int"), (std::vector<DType>{DType::kInt32, DType::kInt64}));
  for (std::string_view name : {"", "f32", "float32", "Float", "ints", "bool"}) {
    EXPECT_EQ(dtype_set(name), std::nullopt) << name;
  }
  EXPECT_EQ(tap_dtype_names(" "), "f32 f64 i32 i64 bf16 f16");
  // Long names are accepted in kernel files too, and mean the same dtype.
  const auto ks = parse(replace(kScale, "{T: float}", "{T: [float64, i32]}"));
  EXPECT_EQ(ks[0].types.at(0).second, (std::vector<DType>{DType::kFloat64, DType::kInt32}));
}

TEST(Loader, ErrorsQuoteTheLineWithACaret) {
  const std::string error =
      parse_error(replace(kScale, "x: {shape: \"[$d...]\"", "x: {shape: \"[$d... $e]\""));
  EXPECT_EQ(error,
            "k.yaml:4:22: error: expected ',' or ']' after a list entry, found '$'\n"
            "    x: {shape: \"[$d... $e]\", dtype: T}\n"
            "                       ^");
  // The same error as data: the file, line and column, and the text it quotes.
  const support::Diagnostic d = support::testing::thrown_diagnostic(
      [] { (void)parse(replace(kScale, "x: {shape: \"[$d...]\"", "x: {shape: \"[$d... $e]\"")); });
  EXPECT_EQ(d.where.file, "k.yaml");
  EXPECT_EQ(d.where.pos, (SourcePos{4, 22}));
  ASSERT_NE(d.source, nullptr);
  EXPECT_EQ(d.source->name(), "k.yaml");
}

TEST(Loader, EvaluationCatchesNonAffineIpfs) {
  std::vector<Metakernel> ks = parse(R"(kernel: outer
types: {T: any}
inputs:
  a: {shape: "[$i]", dtype: T}
  b: {shape: "[$j]", dtype: T}
outputs:
  result: {shape: "[$i, $j]", dtype: T}
index: "[$i, $j]"
ipfs:
  a: "[$i * $j]"
  b: "[$j]"
  result: "[$i, $j]"
)");
  const std::vector<Argument> args{{"A", tt("f32[3]")}, {"B", tt("f32[4]")}};
  EXPECT_THAT(
      [&] { evaluate_signature(ks[0], args, {}); },
      ::testing::ThrowsMessage<Error>(HasSubstr("outer: IPF of a: `$i * $j` is not affine")));
}

TEST(Loader, SelfCheckCatchesIpfsOutsideTheirTensors) {
  std::vector<Metakernel> ks = parse(replace(kScale, "  x: \"[$d...]\"", "  x: \"[$d..., 0]\""));
  EXPECT_THAT(
      [&] {
        evaluate_signature(ks[0], std::vector<Argument>{{"X", tt("f32[3]")}}, {});
      },
      ::testing::ThrowsMessage<Error>(HasSubstr("the IPF of x gives 2 dims but x has rank 1")));
}

}  // namespace
}  // namespace tapestry::metakernel

namespace tapestry::metakernel {
namespace {

// Bodies parse with the usual precedence, left-associative, unary minus binding tightest.
TEST(KernelBody, ParsesWithPrecedence) {
  const std::pair<const char*, const char*> cases[] = {{"x * 2 + 1", "(x * 2) + 1"},
                                                       {"1 + x * 2", "1 + (x * 2)"},
                                                       {"a - b - c", "(a - b) - c"},
                                                       {"a / b * c", "(a / b) * c"},
                                                       {"-(x * x) / (1 + s)", "-(x * x) / (1 + s)"},
                                                       {"--x", "--x"},
                                                       {" max( x , 0.5 )", "max(x, 0.5)"},
                                                       {"sigmoid(x) * x", "sigmoid(x) * x"},
                                                       {"1e-3 * x", "0.001 * x"}};
  for (const auto& [text, want] : cases) EXPECT_EQ(parse_body(text).to_string(), want) << text;
  EXPECT_EQ(body_names(parse_body("x * y + x / s")), (std::vector<std::string>{"x", "y", "s"}));
  for (const char* bad : {"", "x +", "(x", "x)", "max(x,)", "3x", "x $ y", "exp x"})
    EXPECT_THROW(parse_body(bad), Error) << bad;
}

}  // namespace
}  // namespace tapestry::metakernel
