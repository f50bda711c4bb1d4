#include "tapestry/metakernel/signature.h"

#include <fmt/format.h>

#include "tapestry/zspace/format.h"

namespace tapestry::metakernel {

zspace::Range Signature::index() const {
  std::vector<std::int64_t> sizes;
  for (const IndexDim& d : index_dims) sizes.push_back(d.size);
  return zspace::Range::of_shape(zspace::Point(sizes));
}

std::vector<std::string> Signature::dim_names() const {
  std::vector<std::string> names;
  for (const IndexDim& d : index_dims) names.push_back(d.name);
  return names;
}

std::optional<std::size_t> Signature::find_dim(std::string_view name) const {
  for (std::size_t i = 0; i < index_dims.size(); ++i) {
    if (index_dims[i].name == name) return i;
  }
  return std::nullopt;
}

namespace {
const Port* find_port(const std::vector<Port>& ports, std::string_view name) {
  for (const Port& p : ports) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string port_line(std::string_view role, const Port& p, std::size_t width) {
  return fmt::format("  {} {:<{}} {:<20} {}\n", role, p.name, width, p.type.to_string(), p.ipf);
}
}  // namespace

const Port* Signature::find_input(std::string_view name) const {
  return find_port(inputs, name);
}

const Port* Signature::find_output(std::string_view name) const {
  return find_port(outputs, name);
}

std::string Signature::to_string() const {
  std::vector<std::string> dims;
  for (const IndexDim& d : index_dims) {
    dims.push_back(d.reduction
                       ? fmt::format("{} {} ({})", d.name, d.size, monoid_name(*d.reduction))
                       : fmt::format("{} {}", d.name, d.size));
  }
  std::string out = fmt::format("{}  index [{}]\n", kernel, fmt::join(dims, ", "));
  if (!params.empty()) out += fmt::format("  params {}\n", params.dump());
  std::size_t width = 0;
  for (const Port& p : inputs) width = std::max(width, p.name.size());
  for (const Port& p : outputs) width = std::max(width, p.name.size());
  for (const Port& p : inputs) out += port_line("input ", p, width);
  for (const Port& p : outputs) out += port_line("output", p, width);
  return out;
}

}  // namespace tapestry::metakernel
