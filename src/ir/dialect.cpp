// Dialects and validation (dialect.h).
#include "tapestry/ir/dialect.h"

#include <algorithm>
#include <chrono>

#include "tapestry/ir/constraints.h"

namespace tapestry::ir {

Dialect::Dialect(std::string name, std::vector<NodeKind> node_kinds, std::vector<TagKind> tag_kinds,
                 std::vector<DType> dtypes,
                 std::vector<std::shared_ptr<const Constraint>> constraints)
    : name_(std::move(name)),
      node_kinds_(std::move(node_kinds)),
      tag_kinds_(std::move(tag_kinds)),
      dtypes_(std::move(dtypes)),
      constraints_(std::move(constraints)) {}

namespace {

// The constraints both dialects share, in the order they run.
std::vector<std::shared_ptr<const Constraint>> operation_constraints() {
  namespace c = constraints;
  return {c::node_type(),
          c::tag_type(),
          c::body_schema(),
          c::tag_schema(),
          c::body_extension_field(),
          c::tensor_dtype(),
          c::node_reference(),
          c::selection_range(),
          c::operation_acyclic(),
          c::tensor_single_producer(),
          c::operation_ipf_present(),
          c::operation_index_names(),
          c::operation_ipf_agreement(),
          c::operation_reduction(),
          c::operation_output_injective()};
}

std::vector<DType> every_dtype() {
  auto all = all_dtypes();
  return {all.begin(), all.end()};
}

}  // namespace

const Dialect& Dialect::operation() {
  static const Dialect dialect(
      "operation", {NodeKind::kTensor, NodeKind::kOperation, NodeKind::kNote},
      {TagKind::kIpfIndex, TagKind::kIpfSignature, TagKind::kIoSequencePoint}, every_dtype(),
      operation_constraints());
  return dialect;
}

const Dialect& Dialect::application() {
  static const Dialect dialect = [] {
    auto list = operation_constraints();
    list.push_back(constraints::application_index_partition());
    list.push_back(constraints::application_ipf_agreement());
    list.push_back(constraints::application_output_coverage());
    return Dialect(
        "application",
        {NodeKind::kTensor, NodeKind::kOperation, NodeKind::kApplication, NodeKind::kNote},
        {TagKind::kIpfIndex, TagKind::kIpfSignature, TagKind::kIoSequencePoint,
         TagKind::kPlacement},
        every_dtype(), std::move(list));
  }();
  return dialect;
}

const Dialect& Dialect::placement() {
  static const Dialect dialect = [] {
    auto list = operation_constraints();
    list.push_back(constraints::application_index_partition());
    list.push_back(constraints::application_ipf_agreement());
    list.push_back(constraints::application_output_coverage());
    list.push_back(constraints::application_placement());
    return Dialect(
        "placement",
        {NodeKind::kTensor, NodeKind::kOperation, NodeKind::kApplication, NodeKind::kNote},
        {TagKind::kIpfIndex, TagKind::kIpfSignature, TagKind::kIoSequencePoint,
         TagKind::kPlacement},
        every_dtype(), std::move(list));
  }();
  return dialect;
}

const Dialect* Dialect::find(std::string_view name) {
  if (name == "operation") return &operation();
  if (name == "application") return &application();
  if (name == "placement") return &placement();
  return nullptr;
}

bool Dialect::admits(NodeKind kind) const {
  return std::find(node_kinds_.begin(), node_kinds_.end(), kind) != node_kinds_.end();
}

bool Dialect::admits(TagKind kind) const {
  return std::find(tag_kinds_.begin(), tag_kinds_.end(), kind) != tag_kinds_.end();
}

bool Dialect::knows_dtype(const LoomDType& dtype) const {
  const std::optional<DType> known = dtype.known();
  return known && std::find(dtypes_.begin(), dtypes_.end(), *known) != dtypes_.end();
}

const Constraint* Dialect::constraint(std::string_view name) const {
  for (const auto& c : constraints_) {
    if (c->name() == name) return c.get();
  }
  return nullptr;
}

// Runs the constraints in order; a constraint whose prerequisites reported an error (or were
// themselves skipped) is skipped.
ValidationReport validate(const Graph& graph, const Dialect& dialect) {
  ValidationReport report;
  std::vector<std::string_view> failed;
  CheckContext ctx{graph, dialect};
  for (const auto& constraint : dialect.constraints()) {
    bool blocked = false;
    for (std::string_view needed : constraint->requires_passed()) {
      blocked |= std::find(failed.begin(), failed.end(), needed) != failed.end();
    }
    if (blocked) {
      report.skipped.emplace_back(constraint->name());
      failed.push_back(constraint->name());
      continue;
    }
    std::vector<Issue> found;
    auto start = std::chrono::steady_clock::now();
    constraint->check(ctx, found);
    report.timings.emplace_back(
        constraint->name(),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (has_errors(found)) failed.push_back(constraint->name());
    for (Issue& issue : found) report.issues.push_back(std::move(issue));
  }
  return report;
}

}  // namespace tapestry::ir
