// Strided views: offset arithmetic and the checks behind sub-views and typed access.
#include "tapestry/runtime/view.h"

#include <fmt/format.h>

#include "tapestry/support/assert.h"
#include "tapestry/zspace/format.h"

namespace tapestry::runtime {

std::int64_t element_offset(const Range& box, const Point& strides, const Point& p) {
  TAPESTRY_ASSERT(box.contains(p), "view access outside the view's box");
  std::int64_t offset = 0;
  for (std::size_t k = 0; k < p.rank(); ++k) offset += (p[k] - box.start()[k]) * strides[k];
  return offset;
}

template <typename Byte>
BasicView<Byte> BasicView<Byte>::sub(const Range& sub) const {
  if (sub.rank() != box_.rank() || !box_.contains(sub)) {
    throw Error(fmt::format("view of {} is not inside {}", sub, box_));
  }
  Byte* origin = nullptr;
  if (!sub.is_empty()) {
    const std::int64_t bytes = element_offset(box_, strides_, sub.start()) *
                               static_cast<std::int64_t>(ir::dtype_size_bytes(dtype_));
    origin = origin_ + bytes;
  }
  return BasicView(dtype_, origin, sub, strides_);
}

template <typename Byte>
void BasicView<Byte>::throw_dtype_mismatch(DType wanted) const {
  throw Error(fmt::format("view of {} holds {}, not {}", box_, ir::dtype_name(dtype_),
                          ir::dtype_name(wanted)));
}

template class BasicView<std::byte>;
template class BasicView<const std::byte>;

}  // namespace tapestry::runtime
