// Symbolic plans (symbolic.h): the key, the symbolic plan, and the way back.
#include "tapestry/rewrite/symbolic.h"

#include <algorithm>
#include <charconv>

namespace tapestry::rewrite {

namespace {

void append_int(std::string& out, std::int64_t v) {
  char buffer[24];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  out.append(buffer, end);
}

}  // namespace

SymbolicPlans::SymbolicPlans(const ir::Graph& graph) {
  for (ir::OperationId op : graph.operations()) {
    const ir::OperationView view = graph.operation(op);
    for (const std::string& name : {view.label(), std::string(view.key())}) {
      if (name.empty() || find_operation(graph, name) != op) continue;
      Named n;
      n.dims = view.index_names();
      const std::optional<zspace::Range> index = view.ipf_index();
      for (std::size_t d = 0; d < n.dims.size(); ++d) {
        n.extents.push_back(index ? index->extent(d) : 0);
        n.reduction.push_back(view.reduction(d).has_value());
      }
      named_.emplace(name, std::move(n));
    }
  }
}

void SymbolicPlans::number_per_component(
    const std::function<std::uint32_t(const std::string&)>& component) {
  per_component_ = true;
  for (auto& [name, n] : named_) n.component = component(name);
}

std::size_t SymbolicPlans::class_of(std::uint32_t component, std::int64_t count) {
  std::int64_t k = 0;
  for (std::size_t c = 0; c < values_.size(); ++c) {
    if (class_component_[c] != component) continue;
    if (values_[c] == count) return c;
    ++k;
  }
  values_.push_back(count);
  class_component_.push_back(component);
  class_symbol_.push_back(kSymbol + static_cast<std::int64_t>(component) * kComponentStride + k);
  if (per_component_) by_symbol_[class_symbol_.back()] = count;
  return values_.size() - 1;
}

bool SymbolicPlans::abstract(const Plan& plan) {
  key_.clear();
  reduction_values_.clear();
  values_.clear();
  class_component_.clear();
  class_symbol_.clear();
  by_symbol_.clear();
  // The counts kept exactly: reduction counts, every count of a derived entry, and the zero
  // member's shard count (the counts that rewrite writes are concrete, zero.h).
  if (plan.zero) reduction_values_.push_back(plan.zero->shards);
  // And the pipeline's microbatch count, which the pipeline pass writes as splits (pipeline.h).
  if (plan.pipeline) reduction_values_.push_back(plan.pipeline->microbatches);
  for (const auto& [name, op] : plan.ops) {
    auto n = named_.find(name);
    if (n == named_.end()) {  // a derived entry: its counts are kept exactly
      for (const auto& [dim, count] : op.split) {
        if (count < 1) return false;
        reduction_values_.push_back(count);
      }
      continue;
    }
    for (const auto& [dim, count] : op.split) {
      auto d = std::find(n->second.dims.begin(), n->second.dims.end(), dim);
      if (d == n->second.dims.end()) return false;
      const auto at = static_cast<std::size_t>(d - n->second.dims.begin());
      if (count < 1 || count > std::max<std::int64_t>(n->second.extents[at], 1)) return false;
      if (n->second.reduction[at]) reduction_values_.push_back(count);
    }
  }
  for (const auto& [name, op] : plan.ops) {
    auto found = named_.find(name);
    key_ += name;
    key_ += found == named_.end() ? '\x1a' : '\x1f';
    for (const auto& [dim, count] : op.split) {
      key_ += dim;
      if (found == named_.end()) {  // a derived entry
        key_ += 'r';
        append_int(key_, count);
        key_ += '\x1f';
        continue;
      }
      const Named& n = found->second;
      const auto at =
          static_cast<std::size_t>(std::find(n.dims.begin(), n.dims.end(), dim) - n.dims.begin());
      if (n.reduction[at]) {
        key_ += 'r';
        append_int(key_, count);
      } else if (count == 1) {
        key_ += '1';
      } else if (std::find(reduction_values_.begin(), reduction_values_.end(), count) !=
                 reduction_values_.end()) {
        key_ += '=';
        append_int(key_, count);
      } else {
        const std::size_t c = class_of(n.component, count);
        key_ += '#';
        append_int(key_, class_symbol_[c] - kSymbol);
      }
      key_ += '\x1f';
    }
    for (const std::string& s : op.substitute) (key_ += s) += '\x1e';
    key_ += op.place.empty() ? '-' : 'P';
    for (const auto& [dim, axis] : op.mesh) {
      key_ += dim;
      key_ += '\x1e';
      key_ += axis;
      key_ += '\x1e';
    }
    key_ += '\x1d';
  }
  key_ += '\x1c';
  for (const auto& group : plan.fuse) {
    for (const std::string& name : group) (key_ += name) += '\x1e';
    key_ += '\x1d';
  }
  key_ += plan.fuse_auto ? 'A' : '-';
  key_ += '\x1c';
  for (const std::string& name : plan.recompute) (key_ += name) += '\x1e';
  key_ += '\x1c';
  if (plan.zero) {
    append_int(key_, plan.zero->stage);
    key_ += '\x1f';
    append_int(key_, plan.zero->shards);
    (key_ += '\x1f') += plan.zero->axis;
    key_ += '\x1f';
    for (const std::string& name : plan.zero->params) (key_ += name) += '\x1e';
  }
  key_ += '\x1c';
  if (plan.pipeline) {
    for (const auto& stage : plan.pipeline->stages) {
      for (const std::string& name : stage) (key_ += name) += '\x1e';
      key_ += '\x1d';
    }
    key_ += '\x1f';
    append_int(key_, plan.pipeline->microbatches);
    (key_ += '\x1f') += plan.pipeline->schedule;
    key_ += '\x1f';
    for (const std::vector<std::string>& group : plan.pipeline->devices) {
      for (const std::string& device : group) (key_ += device) += '\x1d';
      key_ += '\x1e';
    }
  }
  return true;
}

Plan SymbolicPlans::symbolic(const Plan& plan) const {
  Plan out = plan;
  for (auto& [name, op] : out.ops) {
    if (!op.place.empty()) op.place = {std::string(kPlaceMarker) + name};
    auto found = named_.find(name);
    if (found == named_.end()) continue;  // a derived entry: exact counts
    const Named& n = found->second;
    for (auto& [dim, count] : op.split) {
      const auto at =
          static_cast<std::size_t>(std::find(n.dims.begin(), n.dims.end(), dim) - n.dims.begin());
      if (n.reduction[at] || count == 1 ||
          std::find(reduction_values_.begin(), reduction_values_.end(), count) !=
              reduction_values_.end()) {
        continue;
      }
      for (std::size_t c = 0; c < values_.size(); ++c) {
        if (values_[c] == count && class_component_[c] == n.component) {
          count = class_symbol_[c];
          break;
        }
      }
    }
  }
  return out;
}

std::optional<std::int64_t> SymbolicPlans::concrete(std::int64_t count) const {
  if (count < kSymbol) return count;
  if (per_component_) {
    const auto found = by_symbol_.find(count);
    if (found == by_symbol_.end()) return std::nullopt;
    return found->second;
  }
  const auto k = static_cast<std::uint64_t>(count - kSymbol);
  if (k >= values_.size()) return std::nullopt;
  return values_[k];
}

std::optional<std::string_view> place_source(std::span<const std::string> place) {
  if (place.size() != 1 || !place[0].starts_with(kPlaceMarker)) return std::nullopt;
  return std::string_view(place[0]).substr(kPlaceMarker.size());
}

std::optional<OpPlan> substitute(const OpPlan& rewritten, const Plan& plan,
                                 const SymbolicPlans& plans) {
  OpPlan out = rewritten;
  for (auto& [dim, count] : out.split) {
    const std::optional<std::int64_t> value = plans.concrete(count);
    if (!value) return std::nullopt;
    count = *value;
  }
  if (!out.place.empty()) {
    const std::optional<std::string_view> from = place_source(out.place);
    if (!from) return std::nullopt;
    auto entry = plan.ops.find(std::string(*from));
    if (entry == plan.ops.end()) return std::nullopt;
    out.place = entry->second.place;
  }
  return out;
}

std::optional<Plan> substitute(const Plan& rewritten, const Plan& plan,
                               const SymbolicPlans& plans) {
  Plan out = rewritten;
  for (auto& [name, op] : out.ops) {
    std::optional<OpPlan> concrete = substitute(op, plan, plans);
    if (!concrete) return std::nullopt;
    op = std::move(*concrete);
  }
  return out;
}

}  // namespace tapestry::rewrite
