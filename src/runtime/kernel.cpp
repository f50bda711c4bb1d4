// KernelCall: operand lookup, params and failure messages shared by every kernel.
#include "tapestry/runtime/kernel.h"

#include <fmt/format.h>

#include "tapestry/support/error.h"

namespace tapestry::runtime {

namespace {

template <typename Port>
const Port* find_port(const ir::NamedLists<Port>& ports, std::string_view name,
                      std::size_t position) {
  auto list = ports.list(name);
  return position < list.size() ? &list[position] : nullptr;
}

}  // namespace

void KernelCall::fail(std::string_view message) const {
  throw Error(fmt::format("operation '{}' (kernel {}): {}", operation, kernel, message));
}

const InputPort* KernelCall::find_input(std::string_view name, std::size_t position) const {
  return find_port(inputs, name, position);
}

const InputPort& KernelCall::input(std::string_view name, std::size_t position) const {
  if (const InputPort* port = find_input(name, position)) return *port;
  fail(fmt::format("expects input {}[{}], but the operation has {} input(s) named '{}'", name,
                   position, input_count(name), name));
}

const OutputPort& KernelCall::output(std::string_view name, std::size_t position) const {
  if (const OutputPort* port = find_port(outputs, name, position)) return *port;
  fail(fmt::format("expects output {}[{}], but the operation has {} output(s) named '{}'", name,
                   position, outputs.list(name).size(), name));
}

std::size_t KernelCall::input_count(std::string_view name) const {
  return inputs.list(name).size();
}

namespace {

const nlohmann::json* find_param(const nlohmann::json* params, std::string_view name) {
  if (params == nullptr || !params->is_object()) return nullptr;
  auto it = params->find(name);
  return it == params->end() ? nullptr : &*it;
}

}  // namespace

std::int64_t KernelCall::param_int(std::string_view name, std::int64_t fallback) const {
  const nlohmann::json* value = find_param(params, name);
  if (value == nullptr) return fallback;
  if (!value->is_number_integer()) fail(fmt::format("param '{}' must be an integer", name));
  return value->get<std::int64_t>();
}

std::string KernelCall::param_string(std::string_view name, std::string_view fallback) const {
  const nlohmann::json* value = find_param(params, name);
  if (value == nullptr) return std::string(fallback);
  if (!value->is_string()) fail(fmt::format("param '{}' must be a string", name));
  return value->get<std::string>();
}

bool KernelCall::param_bool(std::string_view name, bool fallback) const {
  const nlohmann::json* value = find_param(params, name);
  if (value == nullptr) return fallback;
  if (!value->is_boolean()) fail(fmt::format("param '{}' must be true or false", name));
  return value->get<bool>();
}

ir::Monoid KernelCall::monoid(std::string_view name, ir::Monoid fallback) const {
  if (find_param(params, name) != nullptr) {
    const std::string text = param_string(name, "");
    if (std::optional<ir::Monoid> m = ir::parse_monoid(text)) return *m;
    fail(fmt::format("param '{}' is '{}', not one of sum, max, min, prod", name, text));
  }
  if (reductions.size() == 1) return reductions.front().monoid;
  return fallback;
}

std::vector<std::size_t> KernelCall::reduced_dims() const {
  std::vector<std::size_t> dims;
  if (outputs.empty()) return dims;
  for (std::size_t d = 0; d < index.rank(); ++d) {
    bool reduced = true;
    for (const auto& entry : outputs.entries()) {
      reduced = reduced && entry.value.ipf->ignores_index_dim(d);
    }
    if (reduced) dims.push_back(d);
  }
  return dims;
}

}  // namespace tapestry::runtime
