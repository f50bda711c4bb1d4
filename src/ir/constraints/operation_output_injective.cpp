// operation-output-injective: distinct index points write disjoint output cells, over the
// non-reduction dimensions — otherwise two shards of a split would write the same cell.
//
// Let D be the index dims that are not reductions and have extent > 1 (a dim of extent 1 cannot
// make two points differ). For each output IPF (A, b, s), points i ≠ j differing only in D write
// overlapping boxes iff |(A·(i − j))_k| < s_k in every row k. Decided in three steps:
//   1. a dim of D whose column of A is zero: not injective — the issue suggests declaring it a
//      reduction;
//   2. "separable": every dim j of D has a row k that depends on j alone among D with
//      |A_kj| ≥ s_k (a step at least the window): injective;
//   3. otherwise, when the points of D number at most kBruteForceLimit: compare all pairs' boxes;
//      above that, a warning that injectivity could not be proved.
//
//   error[operation-output-injective]: Output IPF is not injective over the index
//     outputs.result[0] does not move along index dim "in" (extent 8): index points that differ
//     only in "in" write the same cells. Declare "in" a reduction if that is intended.
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "tapestry/ir/constraints.h"
#include "tapestry/zspace/format.h"

namespace tapestry::ir::constraints {

namespace {

constexpr std::string_view kRequires[] = {"operation-index-names", "operation-ipf-agreement"};
constexpr std::int64_t kBruteForceLimit = 4096;

struct Verdict {
  enum Kind { kInjective, kZeroColumn, kOverlap, kUnknown } kind = kInjective;
  std::size_t dim = 0;          // kZeroColumn
  zspace::Point first, second;  // kOverlap
};

// Step 2: each dim in `dims` has a row depending on it alone (among `dims`) with a big enough step.
bool separable(const zspace::IndexProjection& ipf, const std::vector<std::size_t>& dims) {
  const zspace::AffineMap& a = ipf.map();
  for (std::size_t j : dims) {
    bool found = false;
    for (std::size_t k = 0; k < a.out_rank() && !found; ++k) {
      std::int64_t v = a.at(k, j);
      if (v == 0 || (v < 0 ? -v : v) < ipf.shape()[k]) continue;
      bool alone = true;
      for (std::size_t j2 : dims) alone = alone && (j2 == j || a.at(k, j2) == 0);
      found = alone;
    }
    if (!found) return false;
  }
  return true;
}

// Step 3: all pairs of index points (other dims fixed at the index start).
Verdict brute_force(const zspace::IndexProjection& ipf, const zspace::Range& index,
                    const std::vector<std::size_t>& dims) {
  zspace::Range sub = index;
  for (std::size_t d = 0; d < index.rank(); ++d) {
    bool in_dims = std::find(dims.begin(), dims.end(), d) != dims.end();
    if (!in_dims) sub = sub.with_dim(d, index.start()[d], index.start()[d] + 1);
  }
  std::vector<zspace::Point> points;
  std::vector<zspace::Range> boxes;
  for (const zspace::Point& p : sub.points()) {
    points.push_back(p);
    boxes.push_back(ipf.apply(p));
  }
  for (std::size_t x = 0; x < boxes.size(); ++x) {
    for (std::size_t y = x + 1; y < boxes.size(); ++y) {
      if (boxes[x].overlaps(boxes[y])) return {Verdict::kOverlap, 0, points[x], points[y]};
    }
  }
  return {};
}

Verdict judge(const OperationView& op, const zspace::IndexProjection& ipf,
              const zspace::Range& index) {
  std::vector<std::size_t> dims;
  std::int64_t points = 1;
  for (std::size_t d = 0; d < index.rank(); ++d) {
    if (op.reduction(d) || index.extent(d) <= 1) continue;
    if (ipf.ignores_index_dim(d)) return {Verdict::kZeroColumn, d, {}, {}};
    dims.push_back(d);
    // Saturates just above the limit: extents may be near 2^63.
    points = index.extent(d) > kBruteForceLimit
                 ? kBruteForceLimit + 1
                 : std::min(points * index.extent(d), kBruteForceLimit + 1);
  }
  if (separable(ipf, dims)) return {};
  if (points <= kBruteForceLimit) return brute_force(ipf, index, dims);
  return {Verdict::kUnknown, 0, {}, {}};
}

class OperationOutputInjective final : public Constraint {
 public:
  std::string_view name() const override { return "operation-output-injective"; }
  std::string_view description() const override {
    return "Output IPFs are injective over the operation's non-reduction index dimensions.";
  }
  std::span<const std::string_view> requires_passed() const override { return kRequires; }

  void check(const CheckContext& ctx, std::vector<Issue>& out) const override {
    for (OperationId op : ctx.graph.operations()) {
      OperationView v = ctx.graph.operation(op);
      const std::optional<zspace::Range> index = v.ipf_index();
      const IpfSignature* sig = v.ipf_signature();
      if (!index || !sig) continue;
      for (const auto& e : sig->outputs.entries()) {
        if (e.value.index_rank() != index->rank()) continue;
        Verdict verdict = judge(v, e.value, *index);
        if (verdict.kind == Verdict::kInjective) continue;
        out.push_back(
            report(ctx, v, fmt::format("outputs.{}[{}]", e.name, e.position), *index, verdict));
      }
    }
  }

 private:
  Issue report(const CheckContext& ctx, const OperationView& v, const std::string& where,
               const zspace::Range& index, const Verdict& verdict) const {
    Issue issue;
    if (verdict.kind == Verdict::kZeroColumn) {
      std::string dim = v.index_name(verdict.dim);
      issue = make_issue("Output IPF is not injective over the index",
                         fmt::format("{} does not move along index dim \"{}\" (extent {}): index "
                                     "points that differ only in \"{}\" write the same cells. "
                                     "Declare \"{}\" a reduction if that is intended.",
                                     where, dim, index.extent(verdict.dim), dim, dim));
      issue.params = {{"port", where}, {"dim", dim}};
    } else if (verdict.kind == Verdict::kOverlap) {
      issue = make_issue("Output IPF is not injective over the index",
                         fmt::format("{}: index points {} and {} write overlapping cells", where,
                                     verdict.first, verdict.second));
      issue.params = {{"port", where}};
    } else {
      issue = make_issue("Output IPF injectivity could not be proved",
                         fmt::format("{}: the IPF is not separable and the index is too large to "
                                     "check point by point",
                                     where),
                         Severity::kWarning);
      issue.params = {{"port", where}};
    }
    issue.contexts.push_back(
        ctx.node_context(v.id(), fmt::format(".tags['{}'].{}", kIpfSignatureTagUrl, where)));
    return issue;
  }
};

}  // namespace

std::shared_ptr<const Constraint> operation_output_injective() {
  return std::make_shared<OperationOutputInjective>();
}

}  // namespace tapestry::ir::constraints
