// The device kernels' host-side cell arithmetic (src/gpu/kernels/port_layout.h) against
// runtime::Operand::cell, the CPU kernels' own: random IPFs (negative and zero coefficients,
// windows, offsets), index boxes at negative coordinates, views inside larger buffers. Runs without
// a GPU: the layouts are plain integers.
#include "port_layout.h"

#include <random>

#include <gtest/gtest.h>

#include "tapestry/runtime/buffer.h"

namespace tapestry::gpu::kernels {
namespace {

using runtime::Buffer;
using runtime::Operand;
using runtime::Point;
using runtime::Range;
using zspace::AffineMap;
using zspace::IndexProjection;

// A Point from a vector (out of line: GCC 12's -Warray-bounds misreads the inlined copy).
[[gnu::noinline]] Point point_of(const std::vector<std::int64_t>& v) {
  return Point(std::span<const std::int64_t>(v));
}

struct RandomPort {
  IndexProjection ipf;
  Buffer buffer;  // larger than the view: the view is a strided sub-box
  runtime::InputPort port;
};

// A port over `index` with a random IPF of `tensor_rank` rows; its view is exactly the box the
// IPF selects, inside a buffer with a margin around it.
RandomPort random_port(std::mt19937& rng, const Range& index, std::size_t tensor_rank,
                       bool unit_cells) {
  std::uniform_int_distribution<std::int64_t> coef(-2, 2), offset(-5, 5), window(1, 2),
      margin(0, 3);
  std::vector<std::vector<std::int64_t>> rows(tensor_rank,
                                              std::vector<std::int64_t>(index.rank(), 0));
  std::vector<std::int64_t> b(tensor_rank), shape(tensor_rank);
  for (std::size_t k = 0; k < tensor_rank; ++k) {
    for (std::size_t j = 0; j < index.rank(); ++j) rows[k][j] = coef(rng);
    b[k] = offset(rng);
    shape[k] = unit_cells ? 1 : window(rng);
  }
  RandomPort r{IndexProjection(AffineMap::from_rows(rows, point_of(b)), point_of(shape)), {}, {}};
  const Range box = r.ipf.apply(index);
  std::vector<std::int64_t> lo(tensor_rank), hi(tensor_rank);
  for (std::size_t k = 0; k < tensor_rank; ++k) {
    lo[k] = box.start()[k] - margin(rng);
    hi[k] = box.end()[k] + margin(rng);
  }
  r.buffer = Buffer(ir::DType::kFloat32, Range(point_of(lo), point_of(hi)));
  r.port = runtime::InputPort{std::as_const(r.buffer).view(box), &r.ipf};
  return r;
}

Range random_box(std::mt19937& rng, std::size_t rank) {
  std::uniform_int_distribution<std::int64_t> start(-6, 6), extent(1, 4);
  std::vector<std::int64_t> lo(rank), hi(rank);
  for (std::size_t j = 0; j < rank; ++j) {
    lo[j] = start(rng);
    hi[j] = lo[j] + extent(rng);
  }
  return Range(point_of(lo), point_of(hi));
}

// The element offset from the view's origin of the cell of index point p, per the layout.
std::int64_t layout_offset(const PortLayout& l, const Range& index, const Point& p) {
  std::int64_t o = l.base;
  for (std::size_t j = 0; j < p.rank(); ++j) o += l.coef[j] * (p[j] - index.start()[j]);
  return o;
}

TEST(PortLayout, LocatesEveryCellAsOperandDoes) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t index_rank = 1 + trial % 4;
    const std::size_t tensor_rank = 1 + (trial / 4) % 3;
    const Range index = random_box(rng, index_rank);
    const RandomPort r = random_port(rng, index, tensor_rank, trial % 2 == 0);
    const PortLayout l = port_layout(r.port, index);
    ASSERT_EQ(l.coef.size(), index_rank);
    const Operand<const float> operand(r.port);
    for (const Point& p : index.points()) {
      ASSERT_EQ(layout_offset(l, index, p), operand.cell(p) - operand.view().origin())
          << "trial " << trial << " point " << p[0];
    }
  }
}

TEST(PortLayout, IsTheTransposeExampleOfTheHeader) {
  // x [4, 6] (strides 6, 1), transpose's IPF rows {0, 1}, {1, 0}, index box [1:3, 2:5]: the
  // first point (1, 2) reads x[2, 1], 13 elements from the origin; coef (1, 6).
  const Buffer x(ir::DType::kFloat32, Range::of_shape({4, 6}));
  const IndexProjection ipf(AffineMap::from_rows({{0, 1}, {1, 0}}, Point{0, 0}));
  const Range index(Point{1, 2}, Point{3, 5});
  const runtime::InputPort port{x.view(Range::of_shape({4, 6})), &ipf};
  const PortLayout l = port_layout(port, index);
  EXPECT_EQ(l.base, 13);
  EXPECT_EQ(l.coef, (std::vector<std::int64_t>{1, 6}));
}

// The collapsed nest visits the index points in row-major order with the same cells.
TEST(PortLayout, CollapsePreservesTheCellsInRowMajorOrder) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t index_rank = 1 + trial % 5;
    const Range index = random_box(rng, index_rank);
    std::vector<RandomPort> ports;
    std::vector<PortLayout> layouts;
    ports.reserve(3);
    for (int p = 0; p < 3; ++p) {
      // Identity-like IPFs on some trials, so that merges happen.
      ports.push_back(random_port(rng, index, 1 + (trial + p) % 3, true));
      // The move into the vector left the port pointing at the temporary's IPF (ASan).
      ports.back().port.ipf = &ports.back().ipf;
      layouts.push_back(port_layout(ports.back().port, index));
    }
    if (trial % 3 == 0) {
      // A contiguous row-major port: everything collapses for it.
      std::int64_t step = 1;
      for (std::size_t j = index_rank; j-- > 0;) {
        for (PortLayout& l : layouts) l.coef[j] = step;
        step *= index.extent(j);
      }
    }
    const LoopNest nest = collapse(index, layouts);
    ASSERT_EQ(nest.points(), index.size());
    for (std::int64_t e : nest.extent) EXPECT_GT(e, 1) << "size-1 dims are dropped";
    if (trial % 3 == 0) {
      EXPECT_LE(nest.extent.size(), 1U) << "a contiguous box is one dim";
    }
    std::int64_t t = 0;
    for (const Point& p : index.points()) {
      std::int64_t rest = t++;
      std::vector<std::int64_t> offset(layouts.size(), 0);
      for (std::size_t j = nest.extent.size(); j-- > 0;) {
        const std::int64_t c = rest % nest.extent[j];
        rest /= nest.extent[j];
        for (std::size_t q = 0; q < layouts.size(); ++q) offset[q] += c * nest.coef[q][j];
      }
      for (std::size_t q = 0; q < layouts.size(); ++q) {
        ASSERT_EQ(layouts[q].base + offset[q], layout_offset(layouts[q], index, p))
            << "trial " << trial << " port " << q;
      }
    }
  }
}

TEST(PortLayout, CollapseOfAnEmptyBoxHasNoPoints) {
  const Range index(Point{0, 3}, Point{4, 3});
  const std::vector<PortLayout> layouts{PortLayout{0, {3, 1}}};
  EXPECT_EQ(collapse(index, layouts).points(), 0);
}

}  // namespace
}  // namespace tapestry::gpu::kernels
