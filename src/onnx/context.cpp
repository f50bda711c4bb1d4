// The state of one ONNX import and the per-node view of it (context.h).
#include "context.h"

#include <fmt/format.h>

#include <cmath>

#include "tapestry/metakernel/naming.h"
#include "tapestry/runtime/element.h"
#include "tapestry/zspace/range.h"

namespace tapestry::onnx {

namespace {

// A legal .tap name for `name`: characters outside [A-Za-z0-9_./] become '_', leading '/' are
// dropped (PyTorch names nodes `/fc1/Gemm`), and a name that does not start with a letter or
// '_' gets a leading '_'.
std::string sanitise(const std::string& name) {
  std::string out;
  for (char c : name) {
    const bool ok =
        std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' || c == '/';
    if (out.empty() && c == '/') continue;
    out += ok ? c : '_';
  }
  while (!out.empty() && out.back() == '/') out.pop_back();
  if (out.empty() || !metakernel::is_tap_identifier(out)) out = "_" + out;
  if (!metakernel::is_tap_identifier(out)) out = "_";
  return out;
}

// The host tensor's values in a buffer of `dtype` (its own, or a float one for --dtype: rounded
// to nearest even from the float64 value).
runtime::Buffer to_buffer(const HostTensor& value, ir::DType dtype) {
  runtime::Buffer b(dtype, zspace::Range::of_shape(zspace::Point(value.shape)));
  const auto n = static_cast<std::size_t>(value.size());
  if (runtime::is_half_float(dtype)) {
    runtime::visit_storage_dtype(dtype, [&]<typename T>() {
      if constexpr (runtime::is_half_float_v<T>) {
        std::span<T> v = b.values<T>();
        for (std::size_t k = 0; k < n; ++k) v[k] = runtime::storage_cast<T>(value.floats[k]);
      }
    });
  } else if (dtype == ir::DType::kFloat32) {
    std::span<float> v = b.values<float>();
    for (std::size_t k = 0; k < n; ++k) v[k] = static_cast<float>(value.floats[k]);
  } else if (value.dtype == ir::DType::kFloat64) {
    std::span<double> v = b.values<double>();
    for (std::size_t k = 0; k < n; ++k) v[k] = value.floats[k];
  } else if (value.dtype == ir::DType::kInt64) {
    std::span<std::int64_t> v = b.values<std::int64_t>();
    for (std::size_t k = 0; k < n; ++k) v[k] = value.ints[k];
  } else {
    std::span<std::int32_t> v = b.values<std::int32_t>();
    for (std::size_t k = 0; k < n; ++k) v[k] = static_cast<std::int32_t>(value.ints[k]);
  }
  return b;
}

}  // namespace

std::string node_display_name(const ::onnx::NodeProto& node) {
  if (!node.name().empty()) return node.name();
  return node.output_size() > 0 ? node.output(0) : std::string("(unnamed)");
}

// ---- ImportContext ----------------------------------------------------------------------------

ImportContext::ImportContext(std::string source, std::int64_t opset)
    : source_(std::move(source)), opset_(opset) {}

void ImportContext::bind(const std::string& onnx_name, Value value) {
  if (const Tensor* t = std::get_if<Tensor>(&value)) known_.insert(t->id());
  values_.insert_or_assign(onnx_name, std::move(value));
}

bool ImportContext::is_bound(const std::string& onnx_name) const {
  return values_.contains(onnx_name);
}

const Value& ImportContext::value(const std::string& onnx_name) const {
  auto it = values_.find(onnx_name);
  TAPESTRY_ASSERT(it != values_.end(), "unbound ONNX tensor");
  return it->second;
}

Tensor ImportContext::as_tensor(const std::string& onnx_name) {
  const Value& v = value(onnx_name);
  if (const Tensor* t = std::get_if<Tensor>(&v)) return *t;
  if (auto it = materialised_.find(onnx_name); it != materialised_.end()) return it->second;
  Tensor t = constant_input(onnx_name, std::get<HostTensor>(v));
  materialised_.emplace(onnx_name, t);
  return t;
}

Tensor ImportContext::constant_input(const std::string& base, const HostTensor& value) {
  const auto hint = weight_names_.find(base);
  const std::string name = hint == weight_names_.end() ? fresh_name(base, "weight")
                                                       : fresh_name(hint->second, "weight", base);
  // int64 and int32 values become integer weights (data an integer operation reads — Add of
  // int64 tensors, a gather's indices — or an output: Shape's result); booleans have no graph
  // dtype.
  if (value.is_int() && value.dtype != ir::DType::kInt64 && value.dtype != ir::DType::kInt32) {
    throw Error(
        fmt::format("'{}' is a {} tensor computed at import from shapes or constants; a "
                    "Tapestry graph holds no {} tensors, so it cannot be read as data or be an "
                    "output",
                    base, ir::dtype_name(value.dtype), ir::dtype_name(value.dtype)));
  }
  const ir::DType dtype = graph_dtype(value.dtype);
  Tensor t = graph_.input(name, dtype, value.shape);
  known_.insert(t.id());
  if (value.is_int() && value.ints.size() != static_cast<std::size_t>(value.size())) {
    // An integer tensor built with float values (a 0/1 mask in an integer x's dtype: Trilu).
    HostTensor ints = value;
    ints.ints.clear();
    for (double f : value.floats) {
      if (f != std::nearbyint(f) || !(std::abs(f) < 0x1p62))
        throw Error(
            fmt::format("'{}': {} is not an integer of {}", base, f, ir::dtype_name(value.dtype)));
      ints.ints.push_back(static_cast<std::int64_t>(f));
    }
    ints.floats.clear();
    weights_.push_back({name, to_buffer(ints, dtype)});
    return t;
  }
  weights_.push_back({name, to_buffer(value, dtype)});
  return t;
}

std::string ImportContext::fresh_name(const std::string& onnx_name, const std::string& what,
                                      const std::string& original) {
  const std::string legal = sanitise(onnx_name);
  std::string name = legal;
  for (int k = 2; names_.contains(name) || graph_.find(name).has_value(); ++k)
    name = fmt::format("{}.{}", legal, k);
  names_.insert(name);
  const std::string& from = original.empty() ? onnx_name : original;
  if (name != from) renames_.push_back({what, from, name});
  return name;
}

// ---- NodeContext ------------------------------------------------------------------------------

NodeContext::NodeContext(ImportContext& import, const ::onnx::NodeProto& node, std::size_t position)
    : import_(import), node_(node), position_(position) {}

bool NodeContext::has_input(int k) const {
  return k < node_.input_size() && !node_.input(k).empty();
}

const Value& NodeContext::input(int k) const {
  if (!has_input(k)) throw error(fmt::format("input {} is missing", k));
  return import_.value(node_.input(k));
}

bool NodeContext::is_host(int k) const {
  return std::holds_alternative<HostTensor>(input(k));
}

Tensor NodeContext::tensor(int k) {
  static_cast<void>(input(k));  // throws when the input is missing
  return import_.as_tensor(node_.input(k));
}

const HostTensor& NodeContext::host(int k) const {
  const Value& v = input(k);
  if (const HostTensor* h = std::get_if<HostTensor>(&v)) return *h;
  throw error(
      fmt::format("input {} ('{}') must be known at import time (a constant or an "
                  "initializer), but it is computed",
                  k, node_.input(k)));
}

std::vector<std::int64_t> NodeContext::shape(int k) const {
  const Value& v = input(k);
  if (const HostTensor* h = std::get_if<HostTensor>(&v)) return h->shape;
  const zspace::Point p = std::get<Tensor>(v).type().shape();
  return {p.begin(), p.end()};
}

bool NodeContext::has_attr(std::string_view name) const {
  for (const auto& a : node_.attribute()) {
    if (a.name() == name) return true;
  }
  return false;
}

const ::onnx::AttributeProto* NodeContext::attr(std::string_view name,
                                                ::onnx::AttributeProto::AttributeType type) {
  for (const auto& a : node_.attribute()) {
    if (a.name() != name) continue;
    read_.insert(std::string(name));
    if (a.type() != type) {
      throw error(fmt::format("attribute '{}' has type {}, expected {}", name,
                              ::onnx::AttributeProto::AttributeType_Name(a.type()),
                              ::onnx::AttributeProto::AttributeType_Name(type)));
    }
    return &a;
  }
  return nullptr;
}

std::int64_t NodeContext::int_attr(std::string_view name, std::int64_t fallback) {
  const auto* a = attr(name, ::onnx::AttributeProto::INT);
  return a != nullptr ? a->i() : fallback;
}

double NodeContext::float_attr(std::string_view name, double fallback) {
  const auto* a = attr(name, ::onnx::AttributeProto::FLOAT);
  return a != nullptr ? a->f() : fallback;
}

std::string NodeContext::string_attr(std::string_view name, const std::string& fallback) {
  const auto* a = attr(name, ::onnx::AttributeProto::STRING);
  return a != nullptr ? a->s() : fallback;
}

std::optional<std::vector<std::int64_t>> NodeContext::ints_attr(std::string_view name) {
  const auto* a = attr(name, ::onnx::AttributeProto::INTS);
  if (a == nullptr) return std::nullopt;
  return std::vector<std::int64_t>(a->ints().begin(), a->ints().end());
}

HostTensor NodeContext::tensor_attr(std::string_view name) {
  const auto* a = attr(name, ::onnx::AttributeProto::TENSOR);
  if (a == nullptr) throw error(fmt::format("attribute '{}' is missing", name));
  try {
    return decode_tensor(a->t(), fmt::format("attribute '{}'", name));
  } catch (const Error& e) {
    throw error(e.what());
  }
}

std::vector<std::string> NodeContext::unread_attributes() const {
  std::vector<std::string> out;
  for (const auto& a : node_.attribute()) {
    if (!read_.contains(a.name())) out.push_back(a.name());
  }
  return out;
}

void NodeContext::set_output(int k, Value value) {
  if (k >= node_.output_size() || node_.output(k).empty()) return;  // an omitted output
  if (const Tensor* t = std::get_if<Tensor>(&value); t != nullptr && !import_.is_known(*t))
    new_tensors_.emplace_back(k, *t);
  import_.bind(node_.output(k), std::move(value));
}

bool NodeContext::output_used(int k) const {
  return k < node_.output_size() && !node_.output(k).empty() && import_.is_used(node_.output(k));
}

NodeError node_error(const std::string& source, const ::onnx::NodeProto& node, std::size_t position,
                     std::string message) {
  support::Diagnostic d{.message = std::move(message)};
  d.where = {.file = source,
             .node = node_display_name(node),
             .node_note = fmt::format("{}, node {}", node.op_type(), position)};
  return NodeError(std::move(d));
}

NodeError NodeContext::error(const std::string& message) const {
  return node_error(import_.source(), node_, position_, message);
}

}  // namespace tapestry::onnx
