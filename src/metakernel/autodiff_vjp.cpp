// VJP expressions: applying them (autodiff_vjp.h), checking the kernels they call, and which
// kernels have one (autodiff.h).
#include "autodiff_vjp.h"

#include <fmt/format.h>

#include <algorithm>

#include "tapestry/ir/dtype.h"
#include "tapestry/metakernel/autodiff.h"
#include "tapestry/support/diagnostic.h"
#include "tapestry/support/error.h"

namespace tapestry::metakernel {

namespace detail {

namespace {

std::vector<std::string> split_dots(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t dot = text.find('.'); dot != std::string::npos; dot = text.find('.', start)) {
    parts.push_back(text.substr(start, dot - start));
    start = dot + 1;
  }
  parts.push_back(text.substr(start));
  return parts;
}

nlohmann::json shape_json(const zspace::Point& shape) {
  nlohmann::json out = nlohmann::json::array();
  for (std::int64_t e : shape) out.push_back(e);
  return out;
}

// A keyword value: a param of the operation, a derived value (<port>.shape,
// <port>.shape.<axis param>, <port>.dtype, <ints param>.inverse; the loader checked their forms),
// or a literal.
nlohmann::json keyword_value(const tap::Literal& value, const VjpScope& scope) {
  if (!value.is_identifier) return value.value;
  const std::string text = value.value.get<std::string>();
  if (scope.params.contains(text)) return scope.params.at(text);
  if (text.find('.') == std::string::npos) return value.value;  // an enumeration (op=max)
  const std::vector<std::string> parts = split_dots(text);
  if (parts.size() == 2 && parts[1] == "inverse") {
    const std::vector<std::int64_t> perm =
        scope.params.at(parts[0]).get<std::vector<std::int64_t>>();
    std::vector<std::int64_t> inverse(perm.size(), 0);
    for (std::size_t i = 0; i < perm.size(); ++i) {
      inverse.at(static_cast<std::size_t>(perm[i])) = static_cast<std::int64_t>(i);
    }
    return inverse;
  }
  if (parts.size() == 2 && parts[1] == "dtype") {
    return std::string(ir::dtype_short_name(scope.tensors.at(parts[0]).type().dtype));
  }
  const zspace::Point shape = scope.tensors.at(parts[0]).type().shape();
  if (parts.size() == 2) return shape_json(shape);
  const std::string& axis = parts[2];
  const std::int64_t dim = std::isdigit(static_cast<unsigned char>(axis[0]))
                               ? std::stoll(axis)
                               : scope.params.at(axis).get<std::int64_t>();
  if (dim < 0 || static_cast<std::size_t>(dim) >= shape.rank()) {
    throw Error(fmt::format("{}: {} is out of range for shape {}", scope.operation, text,
                            shape_string(shape)));
  }
  return shape[static_cast<std::size_t>(dim)];
}

}  // namespace

Tensor apply_vjp(Graph& graph, const tap::TensorExpr& expr, const VjpScope& scope) {
  if (!expr.is_call()) return scope.tensors.at(expr.name);
  const tap::Call& call = *expr.call;
  std::vector<Tensor> args;
  for (const tap::TensorExpr& arg : call.args) args.push_back(apply_vjp(graph, arg, scope));
  nlohmann::json params = nlohmann::json::object();
  for (const tap::Keyword& k : call.keywords) params[k.name] = keyword_value(k.value, scope);
  if (call.callee == "sum_to" && args.size() == 1 && params.contains("shape") &&
      shape_json(args[0].type().shape()) == params.at("shape")) {
    return args[0];  // nothing was broadcast
  }
  return graph.call(call.callee, args, params);
}

}  // namespace detail

namespace {

void check_calls(const Metakernel& k, const tap::TensorExpr& e,
                 const SignatureRegistry& signatures) {
  if (!e.is_call()) return;
  try {
    signatures.resolve(e.call->callee, e.call->args.size());
  } catch (const Error& error) {
    throw support::DiagnosticError(
        support::Diagnostic::at_source(k.file, e.call->pos, fmt::format("vjp: {}", error.what())));
  }
  for (const tap::TensorExpr& arg : e.call->args) check_calls(k, arg, signatures);
}

}  // namespace

void check_vjp_kernels(std::span<const Metakernel* const> kernels,
                       const SignatureRegistry& signatures) {
  for (const Metakernel* k : kernels) {
    if (!k->vjp) continue;
    for (const VjpSpec& spec : *k->vjp) {
      if (spec.expr) check_calls(*k, *spec.expr, signatures);
    }
  }
}

VjpCoverage vjp_coverage(const SignatureRegistry& signatures) {
  VjpCoverage coverage;
  for (const Metakernel* k : signatures.metakernels()) {
    (k->vjp ? coverage.with_vjp : coverage.without_vjp).push_back(k->name);
  }
  return coverage;
}

}  // namespace tapestry::metakernel
