#include "tapestry/zspace/affine_map.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include "tapestry/support/assert.h"
#include "tapestry/support/error.h"
#include "tapestry/zspace/checked.h"

namespace tapestry::zspace {

AffineMap::AffineMap(std::size_t in_rank, std::span<const std::int64_t> row_major, Point offset)
    : in_rank_(in_rank), matrix_(row_major), offset_(std::move(offset)) {
  const auto expected = static_cast<std::size_t>(
      checked_mul(static_cast<std::int64_t>(in_rank), static_cast<std::int64_t>(offset_.rank())));
  if (row_major.size() != expected) {
    throw Error(fmt::format("affine map: {} matrix entries given, expected {} rows × {} columns",
                            row_major.size(), offset_.rank(), in_rank));
  }
}

AffineMap AffineMap::from_rows(const std::vector<std::vector<std::int64_t>>& rows, Point offset,
                               std::size_t in_rank_if_no_rows) {
  if (rows.size() != offset.rank()) {
    throw Error(fmt::format("affine map: {} projection rows but an offset of rank {}", rows.size(),
                            offset.rank()));
  }
  const std::size_t in_rank = rows.empty() ? in_rank_if_no_rows : rows[0].size();
  InlineVector<std::int64_t, kInlineRank * kInlineRank> flat(rows.size() * in_rank);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].size() != in_rank) {
      throw Error(fmt::format("affine map: ragged projection: row {} has {} entries, row 0 has {}",
                              r, rows[r].size(), in_rank));
    }
    std::copy(rows[r].begin(), rows[r].end(),
              flat.begin() + static_cast<std::ptrdiff_t>(r * in_rank));
  }
  return AffineMap(in_rank, flat.span(), std::move(offset));
}

AffineMap AffineMap::identity(std::size_t rank) {
  InlineVector<std::int64_t, kInlineRank * kInlineRank> flat(rank * rank);
  for (std::size_t i = 0; i < rank; ++i) flat[i * rank + i] = 1;
  return AffineMap(rank, flat.span(), Point::zeros(rank));
}

AffineMap AffineMap::zero(std::size_t out_rank, std::size_t in_rank) {
  InlineVector<std::int64_t, kInlineRank * kInlineRank> flat(out_rank * in_rank);
  return AffineMap(in_rank, flat.span(), Point::zeros(out_rank));
}

std::vector<std::vector<std::int64_t>> AffineMap::rows() const {
  std::vector<std::vector<std::int64_t>> out;
  out.reserve(out_rank());
  for (std::size_t r = 0; r < out_rank(); ++r) {
    auto rw = row(r);
    out.emplace_back(rw.begin(), rw.end());
  }
  return out;
}

bool AffineMap::is_zero_column(std::size_t col) const {
  TAPESTRY_ASSERT(col < in_rank_, "is_zero_column: column out of range");
  for (std::size_t r = 0; r < out_rank(); ++r) {
    if (at(r, col) != 0) return false;
  }
  return true;
}

Point AffineMap::apply(const Point& x) const {
  if (x.rank() != in_rank_) {
    throw Error(fmt::format("affine map apply: {} inputs given, {} expected", x.rank(), in_rank_));
  }
  InlineVector<std::int64_t, kInlineRank> out(out_rank());
  for (std::size_t r = 0; r < out_rank(); ++r) {
    Wide acc = offset_[r];
    for (std::size_t c = 0; c < in_rank_; ++c) acc = wide_add(acc, Wide{at(r, c)} * x[c]);
    out[r] = narrow(acc, "affine map apply");
  }
  return Point(out.span());
}

AffineMap AffineMap::permute_inputs(std::span<const std::size_t> perm) const {
  check_permutation(perm, in_rank_);
  InlineVector<std::int64_t, kInlineRank * kInlineRank> flat(matrix_.size());
  for (std::size_t r = 0; r < out_rank(); ++r) {
    for (std::size_t c = 0; c < in_rank_; ++c) flat[r * in_rank_ + c] = at(r, perm[c]);
  }
  return AffineMap(in_rank_, flat.span(), offset_);
}

AffineMap AffineMap::permute_outputs(std::span<const std::size_t> perm) const {
  check_permutation(perm, out_rank());
  InlineVector<std::int64_t, kInlineRank * kInlineRank> flat(matrix_.size());
  for (std::size_t r = 0; r < out_rank(); ++r) {
    for (std::size_t c = 0; c < in_rank_; ++c) flat[r * in_rank_ + c] = at(perm[r], c);
  }
  return AffineMap(in_rank_, flat.span(), offset_.permute(perm));
}

AffineMap AffineMap::translate(const Point& delta) const {
  check_same_rank("affine map translate", out_rank(), delta.rank());
  return AffineMap(in_rank_, matrix_.span(), offset_ + delta);
}

AffineMap AffineMap::stack(const AffineMap& below) const {
  if (below.in_rank_ != in_rank_) {
    throw Error(
        fmt::format("affine map stack: input ranks differ ({} vs {})", in_rank_, below.in_rank_));
  }
  InlineVector<std::int64_t, kInlineRank * kInlineRank> flat(matrix_.size() + below.matrix_.size());
  std::copy(matrix_.begin(), matrix_.end(), flat.begin());
  std::copy(below.matrix_.begin(), below.matrix_.end(),
            flat.begin() + static_cast<std::ptrdiff_t>(matrix_.size()));
  return AffineMap(in_rank_, flat.span(), offset_.concat(below.offset_));
}

AffineMap AffineMap::compose(const AffineMap& inner) const {
  if (inner.out_rank() != in_rank_) {
    throw Error(fmt::format("affine map compose: inner map has {} outputs, outer expects {} inputs",
                            inner.out_rank(), in_rank_));
  }
  const std::size_t n = inner.in_rank();
  InlineVector<std::int64_t, kInlineRank * kInlineRank> flat(out_rank() * n);
  for (std::size_t r = 0; r < out_rank(); ++r) {
    for (std::size_t c = 0; c < n; ++c) {
      Wide acc = 0;
      for (std::size_t k = 0; k < in_rank_; ++k)
        acc = wide_add(acc, Wide{at(r, k)} * inner.at(k, c));
      flat[r * n + c] = narrow(acc, "affine map compose");
    }
  }
  // offset = A·b_inner + b
  return AffineMap(n, flat.span(), apply(inner.offset()));
}

std::string AffineMap::to_string() const {
  std::string out = "[";
  for (std::size_t r = 0; r < out_rank(); ++r) {
    if (r > 0) out += ", ";
    out += fmt::format("[{}]", fmt::join(row(r), ", "));
  }
  out += fmt::format("] + {}", offset_.to_string());
  return out;
}

}  // namespace tapestry::zspace
