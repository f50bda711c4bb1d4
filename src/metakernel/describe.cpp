#include "tapestry/metakernel/describe.h"

#include <fmt/format.h>

#include "tapestry/metakernel/naming.h"

namespace tapestry::metakernel {

namespace {

std::string dtype_text(const DTypeSpec& spec) {
  if (!spec.param.empty()) return "{" + spec.param + "}";  // the dtype parameter `to` names
  return spec.fixed ? std::string(ir::dtype_short_name(*spec.fixed)) : spec.var;
}

// Strings that are identifiers print bare, as a .tap call would spell them (op=sum).
std::string default_text(const nlohmann::json& value) {
  const bool bare = value.is_string() && is_tap_identifier(value.get<std::string>());
  return tap::literal_to_string(value, bare);
}

std::string indent_lines(const std::string& text, std::string_view prefix) {
  std::string out;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(begin, end - begin);
    out += (line.empty() ? "" : std::string(prefix) + line) + "\n";
    begin = end + 1;
  }
  return out;
}

void describe_params(const Metakernel& k, std::string& out) {
  for (const ParamSpec& p : k.params) {
    std::string type(param_type_name(p.type));
    if (p.type == ParamType::kAxis) type += " of " + p.axis_of;
    if (!p.choices.empty()) type += fmt::format(" in {{{}}}", fmt::join(p.choices, ", "));
    if (p.min) type += fmt::format(" >= {}", *p.min);
    const std::string dflt = p.default_value  ? ", default " + default_text(*p.default_value)
                             : p.default_expr ? ", default " + p.default_expr->to_string()
                                              : ", required";
    out += fmt::format("    {:<8} {}{}{}{}\n", p.name, type, dflt, p.sugar ? " [sugar]" : "",
                       p.doc.empty() ? "" : "  — " + p.doc);
  }
}

void describe_ports(const Metakernel& k, std::string& out) {
  out += "  inputs\n";
  for (const InputSpec& in : k.inputs) {
    out += fmt::format("    {:<8} {:<24} {}{}\n", in.name, list_to_string(in.shape),
                       dtype_text(in.dtype), in.doc.empty() ? "" : "  — " + in.doc);
  }
  if (!k.params.empty()) {
    out += "  params\n";
    describe_params(k, out);
  }
  out += "  outputs\n";
  for (const OutputSpec& o : k.outputs) {
    std::string shape = o.has_shape ? list_to_string(o.shape) : "(from the hook)";
    if (o.start)
      shape += fmt::format(" starting like {} shifted by {}", o.start->like,
                           list_to_string(o.start->shift));
    out += fmt::format("    {:<8} {:<24} {}{}\n", o.name, shape, dtype_text(o.dtype),
                       o.doc.empty() ? "" : "  — " + o.doc);
  }
}

void describe_constraints(const Metakernel& k, std::string& out) {
  std::vector<std::string> types;
  for (const auto& [var, allowed] : k.types) {
    std::vector<std::string_view> names;
    for (DType d : allowed) names.push_back(ir::dtype_short_name(d));
    types.push_back(fmt::format("{} in {{{}}}", var, fmt::join(names, ", ")));
  }
  if (!types.empty()) out += fmt::format("  types    {}\n", fmt::join(types, "; "));
  for (const auto& [group, rank] : k.group_ranks)
    out += fmt::format("  rank     ${}... has {} dims\n", group, rank.to_string());
  if (!k.broadcast.empty())
    out += fmt::format("  broadcast ${}... (numpy rules)\n", fmt::join(k.broadcast, "..., $"));
  for (const LetSpec& let : k.lets)
    out += fmt::format("  let      ${} = {}\n", let.name, let.value.to_string());
  for (const CheckSpec& c : k.checks)
    out += fmt::format("  check    {}\n", c.condition.to_string());
}

void describe_index(const Metakernel& k, std::string& out) {
  if (!k.hook.empty()) {
    out += fmt::format("  index, reductions and IPFs: computed by the C++ hook '{}'\n", k.hook);
    return;
  }
  std::vector<std::string> reductions;
  for (const ReductionSpec& r : k.reductions) {
    reductions.push_back(fmt::format(
        "{} ({})", r.dim, r.monoid ? std::string(monoid_name(*r.monoid)) : "param " + r.param));
  }
  out += fmt::format(
      "  index    {}{}\n", list_to_string(k.index),
      reductions.empty() ? "" : fmt::format("   reductions: {}", fmt::join(reductions, ", ")));
  out += "  ipfs\n";
  auto ipf_line = [&](const std::string& port) {
    if (auto it = k.ipfs.find(port); it != k.ipfs.end())
      out += fmt::format("    {:<8} {}\n", port, list_to_string(it->second));
  };
  for (const InputSpec& in : k.inputs) ipf_line(in.name);
  for (const OutputSpec& o : k.outputs) ipf_line(o.name);
}

// "contraction, 2 FLOPs per index point × w's window, error rule bilinear, exact on integers".
std::string describe_facts(const Metakernel& k) {
  if (!k.facts)
    return "none declared: priced at 1 FLOP per index point, verified by the fallback rule";
  const KernelFacts& f = *k.facts;
  std::string out = fmt::format("{}, {} FLOP{} per index point", kernel_class_name(f.kind), f.flops,
                                f.flops == 1 ? "" : "s");
  if (!f.per_point.empty()) out += fmt::format(" × {}'s window", f.per_point);
  out += fmt::format(", error rule {}", error_rule_name(f.error_rule));
  if (f.exact) out += ", exact on integers";
  return out;
}

}  // namespace

std::string describe_kernels(const SignatureRegistry& registry) {
  std::string out;
  for (const Metakernel* k : registry.metakernels()) {
    std::string name = k->name;
    if (!k->aliases.empty()) name += fmt::format(" ({})", fmt::join(k->aliases, ", "));
    out += fmt::format("{:<16} {:<44} {}\n", name, k->call_form(), k->summary);
  }
  return out;
}

std::string describe_kernel(const Metakernel& k) {
  std::string out = fmt::format("{}\n", k.call_form());
  if (!k.summary.empty()) out += "  " + k.summary + "\n";
  if (!k.aliases.empty()) out += fmt::format("  also called {}\n", fmt::join(k.aliases, ", "));
  if (!k.doc.empty()) out += "\n" + indent_lines(k.doc, "  ") + "\n";
  describe_ports(k, out);
  describe_constraints(k, out);
  describe_index(k, out);
  for (const SugarSpec& s : k.sugar)
    out += fmt::format("  sugar    when {}: {}\n", s.when.to_string(), s.text);
  if (k.body) out += fmt::format("  body     {}\n", k.body_text);
  out += fmt::format("  facts    {}\n", describe_facts(k));
  if (k.vjp) {
    for (const VjpSpec& v : *k.vjp) out += fmt::format("  vjp      {}: {}\n", v.port, v.text);
  } else {
    out += "  vjp      none (grad through it is an error; docs/training.md)\n";
  }
  if (k.file) out += fmt::format("  defined in {}\n", k.file->name());
  return out;
}

}  // namespace tapestry::metakernel
