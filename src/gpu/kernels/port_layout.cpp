// Host-side cell arithmetic of the device kernels (port_layout.h).
#include "port_layout.h"

namespace tapestry::gpu::kernels {

namespace {

// The same wrapping arithmetic as runtime::Operand::locate_cells: the true offsets lie inside the
// view, so the results modulo 2^64 are exact.
template <typename Byte>
PortLayout layout_of(const runtime::BasicPort<Byte>& port, const runtime::Range& index) {
  const zspace::AffineMap& map = port.ipf->map();
  TAPESTRY_ASSERT(map.in_rank() == index.rank(), "IPF rank differs from the index rank");
  std::vector<std::uint64_t> coef(map.in_rank(), 0);
  std::uint64_t offset0 = 0;
  for (std::size_t k = 0; k < map.out_rank(); ++k) {
    const auto stride = static_cast<std::uint64_t>(port.view.stride(k));
    offset0 += stride * (static_cast<std::uint64_t>(map.offset()[k]) -
                         static_cast<std::uint64_t>(port.view.box().start()[k]));
    for (std::size_t j = 0; j < map.in_rank(); ++j) {
      coef[j] += stride * static_cast<std::uint64_t>(map.at(k, j));
    }
  }
  PortLayout layout;
  std::uint64_t base = offset0;
  for (std::size_t j = 0; j < coef.size(); ++j) {
    base += coef[j] * static_cast<std::uint64_t>(index.start()[j]);
    layout.coef.push_back(static_cast<std::int64_t>(coef[j]));
  }
  layout.base = static_cast<std::int64_t>(base);
  return layout;
}

}  // namespace

PortLayout port_layout(const runtime::InputPort& port, const runtime::Range& index) {
  return layout_of(port, index);
}

PortLayout port_layout(const runtime::OutputPort& port, const runtime::Range& index) {
  return layout_of(port, index);
}

std::int64_t LoopNest::points() const {
  std::int64_t n = 1;
  for (std::int64_t e : extent) n *= e;
  return n;
}

LoopNest collapse(const runtime::Range& index, std::span<const PortLayout> ports) {
  LoopNest nest;
  nest.coef.resize(ports.size());
  for (std::size_t j = 0; j < index.rank(); ++j) {
    const std::int64_t e = index.extent(j);
    if (e == 1) continue;
    // Merge into the previous (outer) dim when every port walks both as one: the outer step is
    // the inner step times the inner extent. Here the new dim is the inner one.
    bool merge = !nest.extent.empty();
    for (std::size_t p = 0; merge && p < ports.size(); ++p) {
      merge = nest.coef[p].back() == ports[p].coef[j] * e;
    }
    if (merge) {
      nest.extent.back() *= e;
      for (std::size_t p = 0; p < ports.size(); ++p) nest.coef[p].back() = ports[p].coef[j];
      continue;
    }
    nest.extent.push_back(e);
    for (std::size_t p = 0; p < ports.size(); ++p) nest.coef[p].push_back(ports[p].coef[j]);
  }
  if (index.is_empty()) {
    nest.extent.assign(1, 0);
    for (auto& c : nest.coef) c.assign(1, 0);
  }
  return nest;
}

bool has_unit_cells(const zspace::IndexProjection& ipf) {
  for (std::int64_t s : ipf.shape()) {
    if (s != 1) return false;
  }
  return true;
}

}  // namespace tapestry::gpu::kernels
