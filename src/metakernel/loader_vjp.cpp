// The kernel file's `vjp:` section (metakernel.h, VjpSpec; autodiff.h): one gradient expression
// per input port, in .tap call syntax, checked here for every name it uses. The kernels an
// expression calls may come from files loaded later; autodiff.cpp's check_vjp_kernels checks them
// once a directory is loaded.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "tapestry/metakernel/tap_parser.h"
#include "yaml_reader.h"
#include "yaml_support.h"

namespace tapestry::metakernel::detail {

namespace {

bool is_identifier(std::string_view text) {
  return !text.empty() && (std::isalpha(static_cast<unsigned char>(text[0])) || text[0] == '_') &&
         std::all_of(text.begin(), text.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
         });
}

std::vector<std::string> split_dots(std::string_view text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t dot = text.find('.'); dot != std::string_view::npos;
       dot = text.find('.', start)) {
    parts.emplace_back(text.substr(start, dot - start));
    start = dot + 1;
  }
  parts.emplace_back(text.substr(start));
  return parts;
}

bool is_output(const Metakernel& k, std::string_view name) {
  return std::any_of(k.outputs.begin(), k.outputs.end(),
                     [&](const OutputSpec& o) { return o.name == name; });
}

// The tensor names an expression may use: inputs, outputs and the outputs' cotangents.
std::vector<std::string> tensor_names(const Metakernel& k) {
  std::vector<std::string> names;
  for (const InputSpec& in : k.inputs) names.push_back(in.name);
  for (const OutputSpec& out : k.outputs) names.push_back(out.name);
  for (const OutputSpec& out : k.outputs) names.push_back("d_" + out.name);
  return names;
}

// A keyword value with dots is a derived value: <port>.shape, <port>.shape.<axis param or
// integer>, <port>.dtype (its short name: cast's gradient), <ints param>.inverse.
void check_derived(const Metakernel& k, const tap::Literal& value) {
  const std::string text = value.value.get<std::string>();
  const std::vector<std::string> parts = split_dots(text);
  const bool port = k.find_input(parts[0]) != nullptr || is_output(k, parts[0]);
  bool ok = false;
  if (port && parts.size() == 2 && parts[1] == "dtype") ok = true;
  if (port && parts.size() >= 2 && parts[1] == "shape") {
    if (parts.size() == 2) ok = true;
    if (parts.size() == 3) {
      const ParamSpec* axis = k.find_param(parts[2]);
      const bool digits = !parts[2].empty() && std::all_of(parts[2].begin(), parts[2].end(),
                                                           [](char c) { return std::isdigit(c); });
      ok = digits ||
           (axis != nullptr && (axis->type == ParamType::kAxis || axis->type == ParamType::kInt));
    }
  }
  if (const ParamSpec* p = k.find_param(parts[0]);
      p && p->type == ParamType::kInts && parts.size() == 2 && parts[1] == "inverse") {
    ok = true;
  }
  if (!ok) {
    throw LocatedError(value.pos,
                       fmt::format("vjp: '{}' is not a value a gradient can use (<port>.shape, "
                                   "<port>.shape.<axis param>, <port>.dtype, "
                                   "<ints param>.inverse)",
                                   text));
  }
}

void check_names(const Metakernel& k, const tap::TensorExpr& e) {
  if (!e.is_call()) {
    const std::vector<std::string> known = tensor_names(k);
    if (std::find(known.begin(), known.end(), e.name) == known.end()) {
      throw LocatedError(e.pos, fmt::format("vjp: '{}' is not a tensor of {} (a gradient uses "
                                            "{})",
                                            e.name, k.name, fmt::join(known, " ")));
    }
    return;
  }
  for (const tap::TensorExpr& arg : e.call->args) check_names(k, arg);
  for (const tap::Keyword& kw : e.call->keywords) {
    if (!kw.value.is_identifier) continue;
    const std::string text = kw.value.value.get<std::string>();
    if (text.find('.') != std::string::npos) check_derived(k, kw.value);
  }
}

}  // namespace

// `vjp:` names every input of the kernel once, each with an expression or `none`.
void KernelReader::read_vjp(const YAML::Node& node, Metakernel& k) {
  expect_map(node, "vjp");
  std::vector<VjpSpec> specs;
  for (const auto& kv : node) {
    VjpSpec spec;
    spec.port = identifier(kv.first, "a vjp port (an input)");
    if (!k.find_input(spec.port)) {
      std::vector<std::string> inputs;
      for (const InputSpec& in : k.inputs) inputs.push_back(in.name);
      fail_at(kv.first, fmt::format("vjp: '{}' is not an input of {} (inputs: {})", spec.port,
                                    k.name, fmt::join(inputs, " ")));
    }
    if (std::any_of(specs.begin(), specs.end(),
                    [&](const VjpSpec& s) { return s.port == spec.port; })) {
      fail_at(kv.first, fmt::format("vjp: the gradient of {} is given twice", spec.port));
    }
    spec.text = scalar(kv.second, "a vjp expression");
    spec.pos = content_pos(kv.second, *file_);
    if (spec.text != "none") {
      tap::TensorExpr e;
      e.pos = spec.pos;
      if (is_identifier(spec.text)) {
        e.name = spec.text;
      } else {
        e.call = std::make_shared<tap::Call>(tap::parse_call(spec.text, spec.pos));
        e.pos = e.call->pos;
      }
      check_names(k, e);
      spec.expr = std::move(e);
    }
    specs.push_back(std::move(spec));
  }
  std::vector<VjpSpec> ordered;
  for (const InputSpec& in : k.inputs) {
    const auto found = std::find_if(specs.begin(), specs.end(),
                                    [&](const VjpSpec& s) { return s.port == in.name; });
    if (found == specs.end()) {
      fail_at(node, fmt::format("vjp: the gradient of input {} is missing (write `{}: none` for "
                                "an input without one)",
                                in.name, in.name));
    }
    ordered.push_back(std::move(*found));
  }
  k.vjp = std::move(ordered);
}

}  // namespace tapestry::metakernel::detail
