// YAML -> Metakernel. One reader method per top-level key; each throws LocatedError at the
// node it rejects. The static checks on the finished kernel live in kernel_check.cpp.
#include "tapestry/metakernel/loader.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "tapestry/metakernel/tap_parser.h"
#include "tapestry/support/file.h"
#include "yaml_reader.h"
#include "yaml_support.h"

namespace tapestry::metakernel {

namespace detail {

namespace {

constexpr std::string_view kKeys[] = {
    "kernel",     "extends",     "aliases",   "summary", "doc",    "types",   "inputs",
    "params",     "group_ranks", "broadcast", "let",     "checks", "outputs", "index",
    "reductions", "ipfs",        "sugar",     "hook",    "body",   "facts",   "vjp"};

void check_keys(const YAML::Node& doc) {
  for (const auto& kv : doc) {
    const std::string key = scalar(kv.first, "a kernel key");
    if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys)) {
      fail_at(kv.first,
              fmt::format("unknown key '{}' (kernel keys: {})", key, fmt::join(kKeys, ", ")));
    }
  }
}

}  // namespace

Metakernel KernelReader::read(const YAML::Node& doc, const std::vector<Metakernel>& earlier) {
  expect_map(doc, "a kernel document");
  check_keys(doc);
  Metakernel k;
  if (const YAML::Node& parent = doc["extends"]) k = find_parent(parent, earlier);
  const YAML::Node& name = doc["kernel"];
  if (!name) fail_at(doc, "a kernel document needs a 'kernel: <name>' key");
  k.name = identifier(name, "the kernel name");
  k.file = file_;
  k.pos = pos_of(name);
  k.aliases.clear();
  k.summary.clear();
  k.doc.clear();
  if (const YAML::Node& n = doc["aliases"]) k.aliases = names(n, "aliases");
  if (const YAML::Node& n = doc["summary"]) k.summary = scalar(n, "summary");
  if (const YAML::Node& n = doc["doc"]) k.doc = scalar(n, "doc");
  if (const YAML::Node& n = doc["types"]) k.types = types(n);
  if (const YAML::Node& n = doc["inputs"]) k.inputs = inputs(n);
  if (const YAML::Node& n = doc["params"]) k.params = params(n);
  if (const YAML::Node& n = doc["group_ranks"]) k.group_ranks = group_ranks(n);
  if (const YAML::Node& n = doc["broadcast"]) k.broadcast = names(n, "broadcast", true);
  if (const YAML::Node& n = doc["let"]) k.lets = lets(n);
  if (const YAML::Node& n = doc["checks"]) k.checks = checks(n);
  if (const YAML::Node& n = doc["outputs"]) k.outputs = outputs(n);
  if (const YAML::Node& n = doc["index"]) k.index = list(n, "index");
  if (const YAML::Node& n = doc["reductions"]) k.reductions = reductions(n);
  if (const YAML::Node& n = doc["ipfs"]) k.ipfs = ipfs(n);
  if (const YAML::Node& n = doc["sugar"]) k.sugar = sugar(n);
  if (const YAML::Node& n = doc["hook"]) k.hook = identifier(n, "hook");
  if (const YAML::Node& n = doc["body"]) read_body(n, k);
  if (const YAML::Node& n = doc["facts"]) read_facts(n, k);  // it names the ports
  k.vjp.reset();  // not inherited: a child of another kernel is another function
  if (const YAML::Node& n = doc["vjp"]) read_vjp(n, k);  // names ports and params
  return k;
}

// A body uses only the kernel's inputs and numeric params, and computes its one output.
void KernelReader::read_body(const YAML::Node& node, Metakernel& k) {
  k.body_text = scalar(node, "body");
  try {
    k.body = parse_body(k.body_text);
  } catch (const Error& e) {
    fail_at(node, fmt::format("body: {}", e.what()));
  }
  if (k.outputs.size() != 1)
    fail_at(node, fmt::format("body: a kernel with a body has one output, {} has {}", k.name,
                              k.outputs.size()));
  for (const std::string& name : body_names(*k.body)) {
    if (k.find_input(name)) continue;
    const ParamSpec* p = k.find_param(name);
    if (p && (p->type == ParamType::kInt || p->type == ParamType::kFloat)) continue;
    std::vector<std::string> known;
    for (const InputSpec& in : k.inputs) known.push_back(in.name);
    for (const ParamSpec& q : k.params) {
      if (q.type == ParamType::kInt || q.type == ParamType::kFloat) known.push_back(q.name);
    }
    fail_at(node, fmt::format("body: '{}' is {} (a body uses the inputs and the int or float "
                              "params: {})",
                              name, p ? "a param of another type" : "neither an input nor a param",
                              fmt::join(known, " ")));
  }
}

Metakernel KernelReader::find_parent(const YAML::Node& node,
                                     const std::vector<Metakernel>& earlier) {
  const std::string parent = scalar(node, "extends");
  for (auto it = earlier.rbegin(); it != earlier.rend(); ++it) {
    if (it->name == parent) return *it;
  }
  if (find_) {
    if (const Metakernel* k = find_(parent)) return *k;
  }
  fail_at(node, fmt::format("extends '{}': no such kernel is loaded before this one", parent));
}

std::string KernelReader::identifier(const YAML::Node& node, std::string_view what) {
  std::string text = scalar(node, what);
  const bool ok =
      !text.empty() && (std::isalpha(static_cast<unsigned char>(text[0])) || text[0] == '_') &&
      std::all_of(text.begin(), text.end(),
                  [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  if (!ok)
    fail_at(node,
            fmt::format("{} must be an identifier ([A-Za-z_][A-Za-z0-9_]*), got '{}'", what, text));
  return text;
}

std::vector<std::string> KernelReader::names(const YAML::Node& node, std::string_view what,
                                             bool strip_dollar) {
  std::vector<std::string> out;
  auto one = [&](const YAML::Node& n) {
    std::string text = scalar(n, what);
    if (strip_dollar && text.size() > 1 && text[0] == '$') text = text.substr(1);
    if (strip_dollar && text.size() > 3 && text.ends_with("...")) text.resize(text.size() - 3);
    out.push_back(text);
  };
  if (node.IsSequence()) {
    for (const YAML::Node& n : node) one(n);
  } else {
    one(node);
  }
  return out;
}

List KernelReader::list(const YAML::Node& node, std::string_view what) {
  if (node.IsScalar()) return parse_list(node.Scalar(), content_pos(node, *file_));
  if (!node.IsSequence()) {
    fail_at(node, fmt::format("{} must be a list such as \"[$batch..., $in]\", found {}", what,
                              kind_name(node)));
  }
  // A YAML flow sequence: each element is one entry. `[a : b]` is a YAML mapping, hence the
  // advice to quote lists that have windows.
  List out;
  for (const YAML::Node& element : node) {
    if (!element.IsScalar()) {
      fail_at(element,
              fmt::format("{}: write the list as one quoted string, e.g. \"[$oh*stride : $kh]\"",
                          what));
    }
    List one = parse_list("[" + element.Scalar() + "]", content_pos(element, *file_).advance(-1));
    if (one.size() != 1) fail_at(element, fmt::format("{}: one entry per list element", what));
    out.push_back(std::move(one.front()));
  }
  return out;
}

Expr KernelReader::expr(const YAML::Node& node, std::string_view what) {
  const std::string text = scalar(node, what);
  return Expr::parse(text, content_pos(node, *file_));
}

DTypeSpec KernelReader::dtype(const YAML::Node& node) {
  DTypeSpec spec;
  spec.pos = pos_of(node);
  if (node.IsMap()) {  // {param: to}: the dtype a str parameter names (kernel_check.cpp checks it)
    for (const auto& field : node) {
      const std::string key = scalar(field.first, "a dtype key");
      if (key != "param") fail_at(field.first, fmt::format("unknown dtype key '{}' (param)", key));
      spec.param = identifier(field.second, "a parameter name");
    }
    if (spec.param.empty()) fail_at(node, "a dtype map needs 'param: <a str parameter>'");
    return spec;
  }
  const std::string text = scalar(node, "dtype");
  if (std::optional<DType> fixed = ir::parse_tap_dtype(text)) {
    spec.fixed = fixed;
  } else {
    spec.var = identifier(node, "dtype (a dtype or a type variable)");
  }
  return spec;
}

std::vector<std::pair<std::string, std::vector<DType>>> KernelReader::types(
    const YAML::Node& node) {
  expect_map(node, "types");
  std::vector<std::pair<std::string, std::vector<DType>>> out;
  for (const auto& kv : node) {
    const std::string var = identifier(kv.first, "a type variable");
    std::vector<DType> allowed;
    for (const std::string& name : names(kv.second, "a dtype")) {
      if (std::optional<std::vector<DType>> set = dtype_set(name)) {
        allowed.insert(allowed.end(), set->begin(), set->end());
      } else if (std::optional<DType> d = ir::parse_tap_dtype(name)) {
        allowed.push_back(*d);
      } else {
        fail_at(kv.second,
                fmt::format("unknown dtype or dtype set '{}' (sets: any, float, int; dtypes: {})",
                            name, tap_dtype_names(" ")));
      }
    }
    out.emplace_back(var, std::move(allowed));
  }
  return out;
}

std::vector<InputSpec> KernelReader::inputs(const YAML::Node& node) {
  expect_map(node, "inputs");
  std::vector<InputSpec> out;
  for (const auto& kv : node) {
    InputSpec in;
    in.name = identifier(kv.first, "an input name");
    in.pos = pos_of(kv.first);
    expect_map(kv.second, fmt::format("input {}", in.name));
    for (const auto& field : kv.second) {
      const std::string key = scalar(field.first, "an input key");
      if (key == "shape") {
        in.shape = list(field.second, "shape");
      } else if (key == "dtype") {
        in.dtype = dtype(field.second);
      } else if (key == "doc") {
        in.doc = scalar(field.second, "doc");
      } else {
        fail_at(field.first, fmt::format("unknown input key '{}' (shape, dtype, doc)", key));
      }
    }
    if (!kv.second["shape"]) fail_at(kv.first, fmt::format("input {} needs a shape", in.name));
    if (!kv.second["dtype"]) fail_at(kv.first, fmt::format("input {} needs a dtype", in.name));
    out.push_back(std::move(in));
  }
  return out;
}

std::vector<OutputSpec> KernelReader::outputs(const YAML::Node& node) {
  expect_map(node, "outputs");
  std::vector<OutputSpec> out;
  for (const auto& kv : node) {
    OutputSpec o;
    o.name = identifier(kv.first, "an output name");
    o.pos = pos_of(kv.first);
    expect_map(kv.second, fmt::format("output {}", o.name));
    for (const auto& field : kv.second) {
      const std::string key = scalar(field.first, "an output key");
      if (key == "shape") {
        o.shape = list(field.second, "shape");
        o.has_shape = true;
      } else if (key == "dtype") {
        o.dtype = dtype(field.second);
      } else if (key == "doc") {
        o.doc = scalar(field.second, "doc");
      } else if (key == "start") {
        o.start = start(field.second);
      } else {
        fail_at(field.first,
                fmt::format("unknown output key '{}' (shape, dtype, start, doc)", key));
      }
    }
    if (!kv.second["dtype"]) fail_at(kv.first, fmt::format("output {} needs a dtype", o.name));
    out.push_back(std::move(o));
  }
  return out;
}

StartSpec KernelReader::start(const YAML::Node& node) {
  expect_map(node, "start");
  StartSpec spec;
  const YAML::Node& like = node["like"];
  if (!like) fail_at(node, "start needs 'like: <input>'");
  spec.like = identifier(like, "start.like");
  if (const YAML::Node& shift = node["shift"]) spec.shift = list(shift, "start.shift");
  for (const auto& kv : node) {
    const std::string key = scalar(kv.first, "a start key");
    if (key != "like" && key != "shift")
      fail_at(kv.first, fmt::format("unknown start key '{}' (like, shift)", key));
  }
  return spec;
}

}  // namespace detail

std::vector<Metakernel> parse_kernels(const SourceFilePtr& file, const KernelFinder& find) {
  std::vector<Metakernel> kernels;
  try {
    detail::KernelReader reader(file, find);
    for (const YAML::Node& doc : detail::load_documents(file->text())) {
      if (doc.IsNull()) continue;
      kernels.push_back(reader.read(doc, kernels));
      check_kernel(kernels.back());
    }
  } catch (const YAML::Exception& e) {
    throw support::DiagnosticError(
        support::Diagnostic::at_source(file, SourcePos{e.mark.line + 1, e.mark.column + 1}, e.msg));
  } catch (const LocatedError& e) {
    throw support::DiagnosticError(support::Diagnostic::at_source(file, e.pos(), e.what()));
  }
  return kernels;
}

std::vector<Metakernel> load_kernel_file(const std::filesystem::path& path,
                                         const KernelFinder& find) {
  return parse_kernels(std::make_shared<const SourceFile>(path.string(), read_file(path)), find);
}

}  // namespace tapestry::metakernel
