#include "tapestry/zspace/index_projection.h"

#include <fmt/core.h>

#include "tapestry/support/error.h"
#include "tapestry/zspace/checked.h"

namespace tapestry::zspace {

IndexProjection::IndexProjection(AffineMap map)
    : map_(std::move(map)), shape_(Point::ones(map_.out_rank())) {}

IndexProjection::IndexProjection(AffineMap map, Point shape)
    : map_(std::move(map)), shape_(std::move(shape)) {
  if (shape_.rank() != map_.out_rank()) {
    throw Error(fmt::format("index projection: shape {} has rank {} but the map has {} outputs",
                            shape_.to_string(), shape_.rank(), map_.out_rank()));
  }
  for (std::int64_t s : shape_) {
    if (s < 0)
      throw Error(
          fmt::format("index projection: shape {} has a negative entry", shape_.to_string()));
  }
}

IndexProjection IndexProjection::identity(std::size_t rank) {
  return IndexProjection(AffineMap::identity(rank));
}

Range IndexProjection::apply(const Point& index) const {
  Point start = map_.apply(index);
  Point end = start + shape_;
  return Range(std::move(start), std::move(end));
}

Range IndexProjection::apply(const Range& index) const {
  if (index.rank() != map_.in_rank()) {
    throw Error(fmt::format("index projection apply: index range {} has rank {}, expected {}",
                            index.to_string(), index.rank(), map_.in_rank()));
  }
  if (index.is_empty()) {
    Point corner = map_.apply(index.start());
    return Range(corner, corner);
  }
  // Exact bounding box by interval arithmetic: each term A_kj·i_j ranges over
  // [min(A_kj·lo_j, A_kj·(hi_j-1)), max(...)] independently of the other terms.
  const std::size_t out_rank = map_.out_rank();
  const std::size_t in_rank = map_.in_rank();
  InlineVector<std::int64_t, kInlineRank> lo(out_rank);
  InlineVector<std::int64_t, kInlineRank> hi(out_rank);
  for (std::size_t k = 0; k < out_rank; ++k) {
    Wide a = map_.offset()[k];
    Wide b = wide_add(a, shape_[k]);
    for (std::size_t j = 0; j < in_rank; ++j) {
      const Wide coef = map_.at(k, j);
      if (coef == 0) continue;
      const Wide x = coef * index.start()[j];
      const Wide y = coef * (index.end()[j] - 1);  // end > start: the range is not empty
      a = wide_add(a, std::min(x, y));
      b = wide_add(b, std::max(x, y));
    }
    lo[k] = narrow(a, "index projection apply");
    hi[k] = narrow(b, "index projection apply");
  }
  return Range(Point(lo.span()), Point(hi.span()));
}

IndexProjection IndexProjection::translate(const Point& delta) const {
  return IndexProjection(map_.translate(delta), shape_);
}

IndexProjection IndexProjection::compose(const AffineMap& inner) const {
  return IndexProjection(map_.compose(inner), shape_);
}

IndexProjection IndexProjection::stack(const IndexProjection& below) const {
  return IndexProjection(map_.stack(below.map_), shape_.concat(below.shape_));
}

IndexProjection IndexProjection::permute_inputs(std::span<const std::size_t> perm) const {
  return IndexProjection(map_.permute_inputs(perm), shape_);
}

std::string IndexProjection::to_string() const {
  return fmt::format("ipf({}, shape {})", map_.to_string(), shape_.to_string());
}

}  // namespace tapestry::zspace
