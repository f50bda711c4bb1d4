// Symbolic plans: the rewrite patterns run once for a whole class of plans.
//
// The optimizer prices many thousands of plans that differ mostly in their counts. The rewrites
// of a plan (pattern.h) do not depend on a count's value, only — as pattern.h obliges every
// pattern — on whether it is 1 and which counts are equal; nor on a place list's devices, only
// on whether there is one. So cost::Evaluator runs the patterns on a *symbolic* plan and keeps
// the result under the plan's *key*, for every plan of the same key:
//
// * the key: the plan's names, substitutions, fusion groups, recomputed operations, meshes,
//   whether each entry places, reduction counts, and every other count as "1", "=v" (equal to a
//   reduction count v) or "#k" (the k-th distinct other value, in plan order). Entries naming an
//   operation the graph lacks (derived entries, plan.h) keep their counts exactly, as reduction
//   counts do — which dims of a derived operation reduce is not known before the rewrites — and so
//   does every other count equal to one of them.
// * the symbolic plan: class #k's counts become the symbol kSymbol + k (far above any extent, so
//   no symbol equals a real count), every non-empty place list becomes one marker naming its
//   entry ([kPlaceMarker + name]).
// * after the rewrites, a count of the rewritten plan that is a symbol reads values()[k], and a
//   marker place list reads the named entry's list of the concrete plan (substitute()).
//
// examples/linear_relu.tap: operations Y/linear (dims batch, out, in — `in` a sum) and Y (relu:
// d0, d1). Its first plan below abstracts to
//
//   plan           {"Y/linear": {"split": {"batch": 4, "in": 2}},
//                   "Y": {"split": {"d0": 4, "d1": 8}, "place": ["gpu:0", "gpu:1"]}}
//   key            Y/linear: batch #0, in r2; Y: d0 #0, d1 #1, placed (and names, fusion, …)
//   values()       {4, 8}
//   symbolic plan  Y/linear.batch = Y.d0 = 2^40, Y/linear.in = 2, Y.d1 = 2^40 + 1,
//                  Y.place = ["\x01place:Y"]
//
// and {"Y/linear": {"split": {"batch": 16, "in": 2}}, "Y": {"split": {"d0": 16, "d1": 4},
// "place": ["gpu:3"]}} has the same key (values {16, 4}): its rewrites are the first's with
// 2^40 read as 16 and 2^40 + 1 as 4. Not so with d1 = 2: equal to the reduction count, it is
// kept exactly ("=2"). A pattern that broke the obligation (rewriting Y when a count is above 4,
// say) would see 2^40 for every plan of the key and be priced wrong without a word:
// tests/rewrite/symbolic_test.cpp checks every pattern of default_patterns() against it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/rewrite/plan.h"

namespace tapestry::rewrite {

/// Symbol k of a symbolic plan's counts: kSymbol + k.
inline constexpr std::int64_t kSymbol = std::int64_t{1} << 40;
/// A symbolic plan's place list: this marker followed by the name of the entry it comes from.
inline constexpr std::string_view kPlaceMarker = "\x01place:";

/// The symbolic plans of one graph. Reused across plans: abstract() keeps its buffers.
class SymbolicPlans {
 public:
  explicit SymbolicPlans(const ir::Graph& graph);

  /// Computes `plan`'s key() and values(). False — key and values unspecified — when the plan
  /// names a dim its operation lacks, or gives a count below 1 or above max(extent, 1) (a derived
  /// entry's: below 1): what check_plan would refuse of counts.
  bool abstract(const Plan& plan);
  /// What the rewrites may read of the plan last abstracted: plans of equal keys rewrite alike.
  [[nodiscard]] const std::string& key() const { return key_; }
  /// values()[k]: the count symbol kSymbol + k stands for.
  [[nodiscard]] std::span<const std::int64_t> values() const { return values_; }
  /// The plan the rewrites run on. Precondition: abstract(plan) succeeded, with this plan.
  [[nodiscard]] Plan symbolic(const Plan& plan) const;
  /// A count of the rewritten symbolic plan as a count of the concrete plan: the value of a
  /// symbol, any other count itself; nullopt for a symbol with no class (a made-up count).
  [[nodiscard]] std::optional<std::int64_t> concrete(std::int64_t count) const;

  /// Numbers the count classes per rewrite component (incremental.h) from now on: `component`
  /// gives each name a plan may use its operation's component. A class is then the counts of
  /// one value *within one component*, numbered by first appearance there, and its symbol is
  /// kSymbol + c·kComponentStride + k (the k-th class of component c): a plan's symbolic entries
  /// for a component depend on that component's counts only, so two plans that differ elsewhere
  /// give its operations the same symbolic plan, and its rewrites can be reused
  /// (IncrementalRewrites). Valid because no pattern compares counts across components (a
  /// component holds every edge a pattern may act across, pattern.h). Two counts of one value
  /// in two components are two classes: values() lists every class once, in plan order.
  ///
  ///   Y/linear (component 0: batch #0.0), Y (component 0: d0 = Y/linear.batch: #0.0),
  ///   Z (component 1: d0 of the same value: #1.0) — symbols 2^40, 2^40, 2^40 + 2^20.
  void number_per_component(const std::function<std::uint32_t(const std::string&)>& component);
  static constexpr std::int64_t kComponentStride = std::int64_t{1} << 20;

 private:
  // What a plan may name, per name: the operation's index dims, extents and reduction flags.
  struct Named {
    std::vector<std::string> dims;
    std::vector<std::int64_t> extents;
    std::vector<bool> reduction;
    std::uint32_t component = 0;
  };
  // The class of `count` in `component` (added when new): its index in values_.
  std::size_t class_of(std::uint32_t component, std::int64_t count);
  std::unordered_map<std::string, Named> named_;  // by every name find_operation resolves
  std::string key_;
  std::vector<std::int64_t> reduction_values_, values_;
  bool per_component_ = false;
  // Per class (parallel to values_): its component and its symbol.
  std::vector<std::uint32_t> class_component_;
  std::vector<std::int64_t> class_symbol_;
  std::unordered_map<std::int64_t, std::int64_t> by_symbol_;  // per_component_: symbol → value
};

/// The entry a symbolic place list stands for (the name after kPlaceMarker); nullopt when
/// `place` is not exactly one marker.
std::optional<std::string_view> place_source(std::span<const std::string> place);

/// `rewritten`, a plan the rewrites left from a symbolic plan, as the concrete `plan` (the one
/// abstracted) would have left it: every count through plans.concrete(), every marker place
/// list replaced by the list of the entry it names in `plan`. nullopt when a count or a place
/// list does not resolve — a pattern made one up.
std::optional<Plan> substitute(const Plan& rewritten, const Plan& plan, const SymbolicPlans& plans);
/// One entry of such a plan (a derived operation's, DerivedOperation::plan), likewise.
std::optional<OpPlan> substitute(const OpPlan& rewritten, const Plan& plan,
                                 const SymbolicPlans& plans);

}  // namespace tapestry::rewrite
