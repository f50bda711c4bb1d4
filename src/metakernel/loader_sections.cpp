// The kernel-file sections with their own small grammars: params (typed, with defaults),
// group_ranks, let, checks, reductions, ipfs and sugar.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "tapestry/metakernel/tap_parser.h"
#include "yaml_reader.h"
#include "yaml_support.h"

namespace tapestry::metakernel::detail {

namespace {

constexpr std::pair<std::string_view, ParamType> kParamTypes[] = {
    {"int", ParamType::kInt},      {"ints", ParamType::kInts}, {"bool", ParamType::kBool},
    {"float", ParamType::kFloat},  {"str", ParamType::kStr},   {"axis", ParamType::kAxis},
    {"monoid", ParamType::kMonoid}};

ParamType param_type(const YAML::Node& node) {
  const std::string text = scalar(node, "a parameter type");
  for (const auto& [name, type] : kParamTypes) {
    if (name == text) return type;
  }
  fail_at(
      node,
      fmt::format("unknown parameter type '{}' (int, ints, bool, float, str, axis, monoid)", text));
}

std::int64_t integer(const YAML::Node& node, std::string_view what) {
  const std::string text = scalar(node, what);
  std::int64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) {
    fail_at(node, fmt::format("{} must be an integer, got '{}'", what, text));
  }
  return value;
}

}  // namespace

std::vector<ParamSpec> KernelReader::params(const YAML::Node& node) {
  expect_map(node, "params");
  std::vector<ParamSpec> out;
  for (const auto& kv : node) out.push_back(param(kv.first, kv.second));
  return out;
}

ParamSpec KernelReader::param(const YAML::Node& key, const YAML::Node& value) {
  ParamSpec spec;
  spec.name = identifier(key, "a parameter name");
  spec.pos = pos_of(key);
  if (value.IsScalar()) {  // shorthand `stride: int` — a required parameter
    spec.type = param_type(value);
    return spec;
  }
  expect_map(value, fmt::format("parameter {}", spec.name));
  const YAML::Node& type = value["type"];
  if (!type) fail_at(key, fmt::format("parameter {} needs a type", spec.name));
  spec.type = param_type(type);
  for (const auto& field : value) {
    const std::string k = scalar(field.first, "a parameter key");
    if (k == "type") continue;
    if (k == "doc") {
      spec.doc = scalar(field.second, "doc");
    } else if (k == "choices") {
      spec.choices = names(field.second, "choices");
    } else if (k == "min") {
      spec.min = integer(field.second, "min");
    } else if (k == "of") {
      spec.axis_of = identifier(field.second, "of (the input an axis refers to)");
    } else if (k == "sugar") {
      spec.sugar = scalar(field.second, "sugar") == "true";
    } else if (k != "default") {
      fail_at(field.first,
              fmt::format(
                  "unknown parameter key '{}' (type, default, choices, min, of, sugar, doc)", k));
    }
  }
  if (const YAML::Node& d = value["default"]) {
    // An int parameter's default may be an expression over the input sizes ("$n * $f").
    const std::string text = d.IsScalar() ? d.Scalar() : "";
    if (spec.type == ParamType::kInt && text.find('$') != std::string::npos) {
      spec.default_expr = expr(d, fmt::format("the default of {}", spec.name));
    } else {
      spec.default_value = param_value(d, spec);
    }
  }
  return spec;
}

nlohmann::json KernelReader::param_value(const YAML::Node& node, const ParamSpec& spec) {
  const std::string what = fmt::format("the default of {}", spec.name);
  switch (spec.type) {
    case ParamType::kInt:
    case ParamType::kAxis:
      return integer(node, what);
    case ParamType::kInts: {
      expect_sequence(node, what);
      nlohmann::json out = nlohmann::json::array();
      for (const YAML::Node& e : node) out.push_back(integer(e, what));
      return out;
    }
    case ParamType::kBool: {
      const std::string text = scalar(node, what);
      if (text != "true" && text != "false") fail_at(node, what + " must be true or false");
      return text == "true";
    }
    case ParamType::kFloat: {
      const std::string text = scalar(node, what);
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      if (text.empty() || end != text.c_str() + text.size())
        fail_at(node, what + " must be a number");
      return v;
    }
    case ParamType::kStr:
    case ParamType::kMonoid:
      return scalar(node, what);
  }
  return nullptr;
}

std::map<std::string, Expr> KernelReader::group_ranks(const YAML::Node& node) {
  expect_map(node, "group_ranks");
  std::map<std::string, Expr> out;
  for (const auto& kv : node) {
    std::vector<std::string> name = names(kv.first, "a group name", true);
    out.emplace(name.front(), expr(kv.second, "a group rank"));
  }
  return out;
}

std::vector<LetSpec> KernelReader::lets(const YAML::Node& node) {
  expect_map(node, "let");
  std::vector<LetSpec> out;
  for (const auto& kv : node) {
    std::vector<std::string> name = names(kv.first, "a let name", true);
    out.push_back(LetSpec{name.front(), expr(kv.second, "a let value")});
  }
  return out;
}

std::vector<CheckSpec> KernelReader::checks(const YAML::Node& node) {
  expect_sequence(node, "checks");
  std::vector<CheckSpec> out;
  for (const YAML::Node& c : node) {
    if (c.IsScalar()) {
      out.push_back(CheckSpec{expr(c, "a check"), ""});
      continue;
    }
    expect_map(c, "a check");
    const YAML::Node& cond = c["assert"];
    if (!cond) fail_at(c, "a check needs 'assert: <condition>' (and optionally 'message')");
    CheckSpec spec{expr(cond, "assert"), ""};
    for (const auto& kv : c) {
      const std::string key = scalar(kv.first, "a check key");
      if (key == "message") {
        spec.message = scalar(kv.second, "message");
      } else if (key != "assert") {
        fail_at(kv.first, fmt::format("unknown check key '{}' (assert, message)", key));
      }
    }
    out.push_back(std::move(spec));
  }
  return out;
}

std::vector<ReductionSpec> KernelReader::reductions(const YAML::Node& node) {
  expect_map(node, "reductions");
  std::vector<ReductionSpec> out;
  for (const auto& kv : node) {
    ReductionSpec r;
    r.dim = names(kv.first, "a reduction dimension", true).front();
    r.pos = pos_of(kv.first);
    const std::string value =
        scalar(kv.second, "a monoid (sum, max, min, prod) or a monoid parameter");
    r.monoid = parse_monoid(value);
    if (!r.monoid)
      r.param = identifier(kv.second, "a monoid (sum, max, min, prod) or a monoid parameter");
    out.push_back(std::move(r));
  }
  return out;
}

std::map<std::string, List> KernelReader::ipfs(const YAML::Node& node) {
  expect_map(node, "ipfs");
  std::map<std::string, List> out;
  for (const auto& kv : node) {
    const std::string port = identifier(kv.first, "an input or output name");
    if (out.count(port)) fail_at(kv.first, fmt::format("the IPF of {} is given twice", port));
    out.emplace(port, list(kv.second, fmt::format("the IPF of {}", port)));
  }
  return out;
}

std::vector<SugarSpec> KernelReader::sugar(const YAML::Node& node) {
  std::vector<SugarSpec> out;
  auto one = [&](const YAML::Node& s) {
    expect_map(s, "a sugar rule");
    const YAML::Node& when = s["when"];
    const YAML::Node& call = s["call"];
    if (!when || !call)
      fail_at(s, "a sugar rule needs 'when: <condition>' and 'call: <kernel call>'");
    for (const auto& kv : s) {
      const std::string key = scalar(kv.first, "a sugar key");
      if (key != "when" && key != "call")
        fail_at(kv.first, fmt::format("unknown sugar key '{}' (when, call)", key));
    }
    const std::string text = scalar(call, "call");
    out.push_back(
        SugarSpec{expr(when, "when"), tap::parse_call(text, content_pos(call, *file_)), text});
  };
  if (node.IsSequence()) {
    for (const YAML::Node& s : node) one(s);
  } else {
    one(node);
  }
  return out;
}

// `facts:` (kernel_facts.h): class, flops, per_point, error_rule, exact. A kernel that extends
// one with facts starts from the parent's and overrides the keys it gives; otherwise class,
// flops and error_rule are required.
void KernelReader::read_facts(const YAML::Node& node, Metakernel& k) {
  expect_map(node, "facts");
  const bool inherited = k.facts.has_value();
  KernelFacts facts = inherited ? *k.facts : KernelFacts{};
  for (const auto& kv : node) {
    const std::string key = scalar(kv.first, "a facts key");
    const YAML::Node& value = kv.second;
    if (key == "class") {
      const std::string text = scalar(value, "class");
      const std::optional<KernelClass> kind = parse_kernel_class(text);
      if (!kind) {
        fail_at(value, fmt::format("unknown kernel class '{}' (elementwise, contraction, "
                                   "reduction, window, normalization, layout)",
                                   text));
      }
      facts.kind = *kind;
    } else if (key == "flops") {
      const std::string text = scalar(value, "flops");
      char* end = nullptr;
      const double flops = std::strtod(text.c_str(), &end);
      if (text.empty() || end != text.c_str() + text.size() || !(flops >= 0) || flops > 1e6) {
        fail_at(value, fmt::format("flops must be a number of FLOPs per index point (0 or more), "
                                   "got '{}'",
                                   text));
      }
      facts.flops = flops;
    } else if (key == "per_point") {
      facts.per_point = identifier(value, "per_point (an input or output)");
    } else if (key == "error_rule") {
      const std::string text = scalar(value, "error_rule");
      const std::optional<ErrorRule> rule = parse_error_rule(text);
      if (!rule) {
        fail_at(value, fmt::format("unknown error rule '{}' (bilinear, additive, product, "
                                   "selection, elementwise, softmax, average, variance, move, "
                                   "index, decision, choice, monoid, worst_case)",
                                   text));
      }
      facts.error_rule = *rule;
    } else if (key == "exact") {
      const std::string text = scalar(value, "exact");
      if (text != "true" && text != "false")
        fail_at(value, fmt::format("exact must be true or false, got '{}'", text));
      facts.exact = text == "true";
    } else {
      fail_at(
          kv.first,
          fmt::format("unknown facts key '{}' (class, flops, per_point, error_rule, exact)", key));
    }
  }
  if (!inherited) {
    for (const char* required : {"class", "flops", "error_rule"}) {
      if (!node[required]) {
        fail_at(node, fmt::format("facts of {} need '{}' (class, flops and error_rule are "
                                  "required unless the kernel extends one with facts)",
                                  k.name, required));
      }
    }
  }
  if (!facts.per_point.empty()) {
    const bool is_port = k.find_input(facts.per_point) != nullptr ||
                         std::any_of(k.outputs.begin(), k.outputs.end(), [&](const OutputSpec& o) {
                           return o.name == facts.per_point;
                         });
    if (!is_port) {
      const YAML::Node& at = node["per_point"] ? node["per_point"] : node;
      fail_at(at, fmt::format("per_point '{}' is not an input or output of {}", facts.per_point,
                              k.name));
    }
  }
  k.facts = std::move(facts);
}

}  // namespace tapestry::metakernel::detail
