// Property tests: every zspace operation checked against a brute-force oracle (enumerate the
// points, oracle.h) on small random values, plus algebraic laws and round trips.
//
// The default run (100 cases per property) takes well under a second. ctest also registers the
// same binary as `zspace_properties_long` with RC_PARAMS="max_success=3000", labelled `slow`.
// Reproduce a failure with the `RC_PARAMS="reproduce=..."` line rapidcheck prints.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>
#include <vector>

#include "tapestry/support/error.h"
#include "tapestry/zspace/checked.h"
#include "tapestry/zspace/format.h"
#include "tapestry/zspace/json.h"
#include "tapestry/zspace/text.h"
#include "zspace/oracle.h"

namespace tapestry::zspace {
namespace {

namespace gen = rc::gen;
using oracle::Coords;

// ---- index projections ----------------------------------------------------------------------

RC_GTEST_PROP(IpfOracle, PointBoxIsTheDefinition, ()) {
  IndexProjection f = oracle::gen_ipf(oracle::gen_rank(3), oracle::gen_rank(3));
  Point i = oracle::gen_point(f.index_rank());
  RC_ASSERT(f.apply(i) == oracle::point_box(f, oracle::coords(i)));
  RC_ASSERT(Point(oracle::affine_apply(f.map(), oracle::coords(i))) == f.map().apply(i));
}

RC_GTEST_PROP(IpfOracle, RangeBoxIsTheBoundingBoxOfThePointBoxes, ()) {
  IndexProjection f = oracle::gen_ipf(oracle::gen_rank(3), oracle::gen_rank(3));
  Range index = oracle::gen_range(f.index_rank());
  RC_ASSERT(f.apply(index) == oracle::range_box(f, index));
}

RC_GTEST_PROP(IpfOracle, EmptyIndexRangeGivesAnEmptyBox, ()) {
  std::size_t rank = 1 + oracle::gen_rank(2);
  IndexProjection f = oracle::gen_ipf(1 + oracle::gen_rank(2), rank);
  Range index = oracle::gen_range(rank).with_dim(*gen::inRange<std::size_t>(0, rank), 0, 0);
  Range box = f.apply(index);
  RC_ASSERT(box.is_empty());
  RC_ASSERT(box.start() == box.end());
  RC_ASSERT(box == oracle::range_box(f, index));
}

RC_GTEST_PROP(IpfOracle, ComposeAgreesWithApplyingInnerFirst, ()) {
  std::size_t n = oracle::gen_rank(3);
  IndexProjection f = oracle::gen_ipf(oracle::gen_rank(3), n);
  AffineMap inner = oracle::gen_map(n, oracle::gen_rank(3));
  Point j = oracle::gen_point(inner.in_rank());
  RC_ASSERT(f.compose(inner).apply(j) == f.apply(inner.apply(j)));
}

RC_GTEST_PROP(IpfOracle, TranslateShiftsEveryBox, ()) {
  IndexProjection f = oracle::gen_ipf(oracle::gen_rank(3), oracle::gen_rank(3));
  Range index = oracle::gen_range(f.index_rank());
  Point delta = oracle::gen_point(f.tensor_rank());
  RC_ASSERT(f.translate(delta).apply(index) == f.apply(index).translate(delta));
}

// ---- affine maps ----------------------------------------------------------------------------

RC_GTEST_PROP(AffineMapLaws, ComposeAgreesWithApplyingTwice, ()) {
  std::size_t k = oracle::gen_rank(3), n = oracle::gen_rank(3), m = oracle::gen_rank(3);
  AffineMap g = oracle::gen_map(n, k);
  AffineMap f = oracle::gen_map(m, n);
  Point x = oracle::gen_point(k);
  RC_ASSERT(f.compose(g).apply(x) == f.apply(g.apply(x)));
  AffineMap h = oracle::gen_map(oracle::gen_rank(3), m);
  RC_ASSERT(h.compose(f).compose(g) == h.compose(f.compose(g)));  // associative
  RC_ASSERT(f.compose(AffineMap::identity(n)) == f);
  RC_ASSERT(AffineMap::identity(m).compose(f) == f);
}

RC_GTEST_PROP(AffineMapLaws, PermutingInputsAndOutputs, ()) {
  AffineMap f = oracle::gen_map(oracle::gen_rank(4), oracle::gen_rank(4));
  std::vector<std::size_t> in_perm = oracle::gen_permutation(f.in_rank());
  std::vector<std::size_t> out_perm = oracle::gen_permutation(f.out_rank());
  Point x = oracle::gen_point(f.in_rank());
  // New input i is old input in_perm[i]: feeding x to the new map is feeding y to the old one,
  // where y[in_perm[i]] = x[i].
  Coords y(x.rank());
  for (std::size_t i = 0; i < x.rank(); ++i) y[in_perm[i]] = x[i];
  RC_ASSERT(f.permute_inputs(in_perm).apply(x) == f.apply(Point(y)));
  RC_ASSERT(f.permute_outputs(out_perm).apply(x) == f.apply(x).permute(out_perm));
}

// ---- ranges: membership, intersection, bounding, iteration ------------------------------------

RC_GTEST_PROP(RangeOracle, ContainsPointIsHalfOpenMembership, ()) {
  Range r = oracle::gen_range(oracle::gen_rank(4));
  Point p = oracle::gen_point(r.rank());
  RC_ASSERT(r.contains(p) == oracle::inside(r, oracle::coords(p)));
}

RC_GTEST_PROP(RangeOracle, ContainsRangeAgreesWithItsPoints, ()) {
  std::size_t rank = oracle::gen_rank(3);
  Range a = oracle::gen_range(rank), b = oracle::gen_range(rank);
  if (oracle::point_count(b) > 0) {
    bool all_inside = true;
    oracle::for_each_point(b, [&](const Coords& p) { all_inside &= oracle::inside(a, p); });
    RC_ASSERT(a.contains(b) == all_inside);
  } else {  // an empty range is contained when its corners are
    RC_ASSERT(a.contains(b) == (a.start() <= b.start() && b.end() <= a.end()));
  }
}

RC_GTEST_PROP(RangeOracle, IntersectAgreesWithPointMembership, ()) {
  std::size_t rank = oracle::gen_rank(3);
  Range a = oracle::gen_range(rank), b = oracle::gen_range(rank);
  std::optional<Range> both = a.intersect(b);
  bool disjoint = false;
  for (std::size_t d = 0; d < rank; ++d) {
    disjoint |= std::max(a.start()[d], b.start()[d]) > std::min(a.end()[d], b.end()[d]);
  }
  RC_ASSERT(both.has_value() == !disjoint);
  bool shared = false;
  oracle::for_each_point(oracle::window(a, b), [&](const Coords& p) {
    bool in_both = oracle::inside(a, p) && oracle::inside(b, p);
    shared |= in_both;
    RC_ASSERT((both && oracle::inside(*both, p)) == in_both);
  });
  RC_ASSERT(a.overlaps(b) == shared);
  if (both) RC_ASSERT(a.contains(*both) && b.contains(*both));
}

RC_GTEST_PROP(RangeOracle, BoundingIsTheSmallestEnclosingBox, ()) {
  std::size_t rank = oracle::gen_rank(3);
  std::vector<Range> ranges(*gen::inRange<std::size_t>(1, 5));
  for (Range& r : ranges) r = oracle::gen_range(rank);
  Range box = Range::bounding(ranges);
  Point lo = ranges[0].start(), hi = ranges[0].end();
  for (const Range& r : ranges) {
    RC_ASSERT(box.contains(r));
    lo = lo.min(r.start());
    hi = hi.max(r.end());
  }
  RC_ASSERT(box == Range(lo, hi));
}

RC_GTEST_PROP(RangeOracle, IterationIsRowMajorAndComplete, ()) {
  Range r = oracle::gen_range(oracle::gen_rank(4));
  std::vector<Coords> expected;
  oracle::for_each_point(r, [&](const Coords& p) { expected.push_back(p); });
  std::vector<Coords> got;
  for (const Point& p : r.points()) got.push_back(oracle::coords(p));
  RC_ASSERT(got == expected);
  RC_ASSERT(r.size() == static_cast<std::int64_t>(expected.size()));
  RC_ASSERT(r.is_empty() == expected.empty());
}

// ---- ranges: splitting ------------------------------------------------------------------------

// Every point of `r` lies in exactly one piece, and every piece lies inside `r`.
void assert_partition(const Range& r, const std::vector<Range>& pieces) {
  std::int64_t total = 0;
  for (const Range& piece : pieces) {
    RC_ASSERT(piece.rank() == r.rank());
    RC_ASSERT(r.contains(piece));
    total += piece.size();
  }
  RC_ASSERT(total == r.size());
  oracle::for_each_point(r, [&](const Coords& p) {
    int hits = 0;
    for (const Range& piece : pieces) hits += oracle::inside(piece, p) ? 1 : 0;
    RC_ASSERT(hits == 1);
  });
}

// The pieces tile `dim` in order: consecutive, from r.start to r.end, other dims untouched.
void assert_tiles_dim(const Range& r, std::size_t dim, const std::vector<Range>& pieces) {
  RC_ASSERT(!pieces.empty());
  std::int64_t at = r.start()[dim];
  for (const Range& piece : pieces) {
    RC_ASSERT(piece.start()[dim] == at);
    RC_ASSERT(piece.with_dim(dim, r.start()[dim], r.end()[dim]) == r);
    at = piece.end()[dim];
  }
  RC_ASSERT(at == r.end()[dim]);
}

RC_GTEST_PROP(RangeSplit, ByChunkPartitions, ()) {
  Range r = oracle::gen_range(1 + oracle::gen_rank(2), 9);
  std::size_t dim = *gen::inRange<std::size_t>(0, r.rank());
  std::int64_t chunk = *gen::inRange<std::int64_t>(1, 12);
  std::vector<Range> pieces = r.split_by_chunk(dim, chunk);
  assert_partition(r, pieces);
  if (r.extent(dim) > 0) {
    assert_tiles_dim(r, dim, pieces);
    RC_ASSERT(pieces.size() == static_cast<std::size_t>((r.extent(dim) + chunk - 1) / chunk));
    for (std::size_t k = 0; k + 1 < pieces.size(); ++k) RC_ASSERT(pieces[k].extent(dim) == chunk);
  }
}

RC_GTEST_PROP(RangeSplit, BySizesPartitions, ()) {
  Range r = oracle::gen_range(1 + oracle::gen_rank(2), 9);
  std::size_t dim = *gen::inRange<std::size_t>(0, r.rank());
  std::vector<std::int64_t> cuts{0, r.extent(dim)};
  for (std::size_t k = *gen::inRange<std::size_t>(0, 4); k > 0; --k) {
    cuts.push_back(*gen::inRange<std::int64_t>(0, r.extent(dim) + 1));
  }
  std::sort(cuts.begin(), cuts.end());
  std::vector<std::int64_t> sizes;
  for (std::size_t k = 1; k < cuts.size(); ++k) sizes.push_back(cuts[k] - cuts[k - 1]);
  std::vector<Range> pieces = r.split_by_sizes(dim, sizes);
  RC_ASSERT(pieces.size() == sizes.size());
  for (std::size_t k = 0; k < sizes.size(); ++k) RC_ASSERT(pieces[k].extent(dim) == sizes[k]);
  assert_tiles_dim(r, dim, pieces);
  assert_partition(r, pieces);
}

RC_GTEST_PROP(RangeSplit, EvenPartitionsLargestFirst, ()) {
  Range r = oracle::gen_nonempty_range(1 + oracle::gen_rank(2), 9);
  std::size_t dim = *gen::inRange<std::size_t>(0, r.rank());
  std::int64_t parts = *gen::inRange<std::int64_t>(1, r.extent(dim) + 1);
  std::vector<Range> pieces = r.split_even(dim, parts);
  RC_ASSERT(pieces.size() == static_cast<std::size_t>(parts));
  assert_tiles_dim(r, dim, pieces);
  assert_partition(r, pieces);
  for (std::size_t k = 0; k + 1 < pieces.size(); ++k) {
    std::int64_t step = pieces[k].extent(dim) - pieces[k + 1].extent(dim);
    RC_ASSERT(step == 0 || step == 1);
  }
  RC_ASSERT(pieces.front().extent(dim) - pieces.back().extent(dim) <= 1);
}

RC_GTEST_PROP(RangeSplit, GridPartitionsRowMajor, ()) {
  Range r = oracle::gen_range(oracle::gen_rank(3), 6);
  std::vector<std::int64_t> parts(r.rank());
  std::int64_t cells = 1;
  for (std::size_t d = 0; d < r.rank(); ++d) {
    parts[d] = r.extent(d) == 0 ? 1 : *gen::inRange<std::int64_t>(1, r.extent(d) + 1);
    cells *= parts[d];
  }
  std::vector<Range> pieces = r.split_grid(parts);
  RC_ASSERT(pieces.size() == static_cast<std::size_t>(cells));
  assert_partition(r, pieces);
  RC_ASSERT(Range::bounding(pieces) == r);
  for (std::size_t k = 0; k + 1 < pieces.size(); ++k) {
    RC_ASSERT(lex_less(pieces[k].start(), pieces[k + 1].start()) ||
              pieces[k].start() == pieces[k + 1].start());
  }
}

// ---- permutations -----------------------------------------------------------------------------

RC_GTEST_PROP(Permute, RangePermutationIsABijectionOfPoints, ()) {
  Range r = oracle::gen_range(oracle::gen_rank(4), 3);
  std::vector<std::size_t> perm = oracle::gen_permutation(r.rank());
  Range q = r.permute(perm);
  for (std::size_t i = 0; i < r.rank(); ++i) {
    RC_ASSERT(q.start()[i] == r.start()[perm[i]]);
    RC_ASSERT(q.end()[i] == r.end()[perm[i]]);
  }
  std::set<Coords> images;
  oracle::for_each_point(r, [&](const Coords& p) {
    Point image = Point(p).permute(perm);
    RC_ASSERT(q.contains(image));
    images.insert(oracle::coords(image));
  });
  RC_ASSERT(static_cast<std::int64_t>(images.size()) == r.size());  // injective
  RC_ASSERT(q.size() == r.size());                                  // hence onto
}

RC_GTEST_PROP(Permute, NonPermutationsAreRejected, ()) {
  std::size_t rank = oracle::gen_rank(4);
  std::vector<std::size_t> perm(*gen::inRange<std::size_t>(0, rank + 2));
  for (std::size_t& p : perm) p = *gen::inRange<std::size_t>(0, rank + 1);
  Range r = oracle::gen_range(rank);
  if (oracle::is_permutation(perm, rank)) {
    RC_ASSERT(r.permute(perm).size() == r.size());
  } else {
    RC_ASSERT_THROWS_AS(check_permutation(perm, rank), Error);
    RC_ASSERT_THROWS_AS((void)r.permute(perm), Error);
    RC_ASSERT_THROWS_AS((void)r.start().permute(perm), Error);
    RC_ASSERT_THROWS_AS((void)AffineMap::identity(rank).permute_inputs(perm), Error);
    RC_ASSERT_THROWS_AS((void)AffineMap::identity(rank).permute_outputs(perm), Error);
  }
}

// ---- points -----------------------------------------------------------------------------------

RC_GTEST_PROP(PointOracle, DominanceIsCoordinatewise, ()) {
  std::size_t rank = oracle::gen_rank(3);
  Point a = oracle::gen_point(rank), b = oracle::gen_point(rank);
  bool le = true, ge = true;
  for (std::size_t d = 0; d < rank; ++d) {
    le &= a[d] <= b[d];
    ge &= a[d] >= b[d];
  }
  RC_ASSERT((a <= b) == le);
  RC_ASSERT((a >= b) == ge);
  RC_ASSERT((a < b) == (le && a != b));
  RC_ASSERT((a == b) == (le && ge));
  RC_ASSERT(lex_less(a, b) == (oracle::coords(a) < oracle::coords(b)));
}

__extension__ using Int128 = __int128;

// Arbitrary int64s, with the values next to the limits and powers of two made frequent.
std::int64_t gen_edgy_int64() {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  return *gen::oneOf(
      gen::arbitrary<std::int64_t>(),
      gen::elementOf(std::vector<std::int64_t>{kMin, kMin + 1, -1, 0, 1, kMax - 1, kMax}),
      gen::map(gen::inRange(0, 63), [](int s) { return std::int64_t{1} << s; }),
      gen::map(gen::inRange(0, 63), [](int s) { return -(std::int64_t{1} << s); }));
}

RC_GTEST_PROP(CheckedOracle, ResultOrErrorExactlyWhenOutOfRange, ()) {
  std::int64_t a = gen_edgy_int64(), b = gen_edgy_int64();
  auto check = [](Int128 exact, auto op) {
    bool fits = exact >= std::numeric_limits<std::int64_t>::min() &&
                exact <= std::numeric_limits<std::int64_t>::max();
    if (fits) {
      RC_ASSERT(static_cast<Int128>(op()) == exact);
    } else {
      RC_ASSERT_THROWS_AS(op(), Error);
    }
  };
  check(Int128{a} + b, [&] { return checked_add(a, b); });
  check(Int128{a} - b, [&] { return checked_sub(a, b); });
  check(Int128{a} * b, [&] { return checked_mul(a, b); });
  std::int64_t small = *gen::inRange<std::int64_t>(-3, 4);
  check(Int128{a} * small, [&] { return checked_mul(a, small); });
}

// ---- round trips ------------------------------------------------------------------------------

Point gen_any_point(std::size_t rank) {
  return Point(*gen::container<Coords>(rank, gen::arbitrary<std::int64_t>()));
}

Range gen_any_range(std::size_t rank) {
  Point a = gen_any_point(rank), b = gen_any_point(rank);
  return Range(a.min(b), a.max(b));
}

RC_GTEST_PROP(RoundTrip, TextParsesWhatItPrints, ()) {
  Point p = gen_any_point(oracle::gen_rank(6));
  RC_ASSERT(parse_point(p.to_string()) == p);
  Range r = gen_any_range(oracle::gen_rank(6));
  RC_ASSERT(parse_range(r.to_string()) == r);
}

RC_GTEST_PROP(RoundTrip, JsonReadsWhatItWrites, ()) {
  Point p = gen_any_point(oracle::gen_rank(6));
  RC_ASSERT(point_from_json(to_json(p)) == p);
  Range r = gen_any_range(oracle::gen_rank(6));
  RC_ASSERT(range_from_json(nlohmann::json::parse(to_json(r).dump())) == r);
  // A map with no rows cannot carry its input rank in the loom form; see json_test.
  std::size_t out_rank = 1 + oracle::gen_rank(3), in_rank = oracle::gen_rank(3);
  AffineMap m(in_rank, *gen::container<Coords>(out_rank * in_rank, gen::arbitrary<std::int64_t>()),
              gen_any_point(out_rank));
  RC_ASSERT(affine_map_from_json(nlohmann::json::parse(to_json(m).dump())) == m);
  Coords shape = *gen::container<Coords>(out_rank, gen::inRange<std::int64_t>(0, 1LL << 62));
  IndexProjection f(m, Point(shape));
  RC_ASSERT(index_projection_from_json(nlohmann::json::parse(to_json(f).dump())) == f);
}

}  // namespace
}  // namespace tapestry::zspace
