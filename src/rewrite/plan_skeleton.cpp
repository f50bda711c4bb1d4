#include "tapestry/rewrite/plan_skeleton.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "tapestry/rewrite/dim_aliases.h"
#include "tapestry/rewrite/plan.h"

namespace tapestry::rewrite {

std::vector<OperationInfo> plannable_operations(const ir::Graph& graph) {
  std::vector<OperationInfo> out;
  for (ir::OperationId op : graph.operations()) {
    const ir::OperationView view = graph.operation(op);
    const std::optional<zspace::Range> index = view.ipf_index();
    const std::map<std::string, std::string> aliases = index_dim_aliases(graph, op);
    OperationInfo info{.name = operation_name(graph, op), .kernel = view.kernel(), .dims = {}};
    for (std::size_t d = 0; d < view.index_rank(); ++d) {
      IndexDimInfo dim{.name = view.index_name(d),
                       .extent = index ? index->extent(d) : 0,
                       .reduction = view.reduction(d),
                       .aliases = {}};
      for (const auto& [alias, own] : aliases) {
        if (own == dim.name) dim.aliases.push_back(alias);
      }
      info.dims.push_back(std::move(dim));
    }
    out.push_back(std::move(info));
  }
  return out;
}

std::vector<OperationInfo> derived_operations(std::span<const DerivedOperation> derived) {
  std::vector<OperationInfo> out;
  for (const DerivedOperation& d : derived) {
    OperationInfo info{.name = d.name,
                       .kernel = d.kernel,
                       .dims = {},
                       .from = fmt::format("from {} ({})", d.origin, d.pattern),
                       .plan = describe(d.plan) + (d.named ? " (the plan's entry)" : "")};
    for (std::size_t k = 0; k < d.dims.size(); ++k) {
      IndexDimInfo dim{
          .name = d.dims[k], .extent = d.extents[k], .reduction = d.reductions[k], .aliases = {}};
      for (const auto& [alias, own] : d.aliases) {
        if (own == dim.name) dim.aliases.push_back(alias);
      }
      info.dims.push_back(std::move(dim));
    }
    out.push_back(std::move(info));
  }
  return out;
}

std::string describe(const OpPlan& plan) {
  std::vector<std::string> parts;
  if (!plan.split.empty()) {
    std::vector<std::string> splits;
    for (const auto& [dim, count] : plan.split) splits.push_back(fmt::format("{} {}", dim, count));
    parts.push_back(fmt::format("split {}", fmt::join(splits, ", ")));
  }
  if (!plan.mesh.empty()) {
    std::vector<std::string> axes;
    for (const auto& [dim, axis] : plan.mesh) axes.push_back(fmt::format("{} on {}", dim, axis));
    parts.push_back(fmt::format("mesh {}", fmt::join(axes, ", ")));
  }
  if (!plan.place.empty()) parts.push_back(fmt::format("place {}", fmt::join(plan.place, ", ")));
  if (plan.colocate) {
    std::vector<std::string> dims;
    for (const auto& [dim, with] : plan.colocate->dims) dims.push_back(dim + " = " + with);
    parts.push_back(dims.empty() ? fmt::format("with {}'s first shard", plan.colocate->with)
                                 : fmt::format("with {}'s shards ({})", plan.colocate->with,
                                               fmt::join(dims, ", ")));
  }
  if (!plan.substitute.empty())
    parts.push_back(fmt::format("substitute {}", fmt::join(plan.substitute, ", ")));
  return parts.empty() ? std::string("nothing") : fmt::format("{}", fmt::join(parts, "; "));
}

std::string format_operations(const std::vector<OperationInfo>& ops) {
  std::size_t name_width = std::string_view("operation").size();
  std::size_t kernel_width = std::string_view("kernel").size();
  for (const OperationInfo& op : ops) {
    name_width = std::max(name_width, op.name.size());
    kernel_width = std::max(kernel_width, op.kernel.size());
  }
  std::string out = fmt::format("{:<{}}  {:<{}}  index dims (extent; reduction: monoid)\n",
                                "operation", name_width, "kernel", kernel_width);
  for (const OperationInfo& op : ops) {
    std::vector<std::string> dims;
    std::vector<std::string> aliases;
    for (const IndexDimInfo& d : op.dims) {
      dims.push_back(d.reduction ? fmt::format("{} {} (reduction: {})", d.name, d.extent,
                                               ir::monoid_name(*d.reduction))
                                 : fmt::format("{} {}", d.name, d.extent));
      for (const std::string& a : d.aliases) aliases.push_back(a + " = " + d.name);
    }
    out += fmt::format("{:<{}}  {:<{}}  {}", op.name, name_width, op.kernel, kernel_width,
                       dims.empty() ? "(no index dims)" : fmt::format("{}", fmt::join(dims, ", ")));
    if (!aliases.empty()) out += fmt::format("; aliases: {}", fmt::join(aliases, ", "));
    out += "\n";
    if (!op.from.empty()) {
      out += fmt::format("{:<{}}  {}; plan: {}\n", "", name_width + 2 + kernel_width, op.from,
                         op.plan);
    }
  }
  return out;
}

std::string plan_skeleton_json(const std::vector<OperationInfo>& ops) {
  std::vector<std::string> lines;
  for (const OperationInfo& op : ops) {
    std::vector<std::string> splits;
    for (const IndexDimInfo& d : op.dims) {
      splits.push_back(fmt::format("{}: 1", nlohmann::json(d.name).dump()));
    }
    lines.push_back(fmt::format("    {}: {{\"split\": {{{}}}}}", nlohmann::json(op.name).dump(),
                                fmt::join(splits, ", ")));
  }
  return fmt::format("{{\n  \"ops\": {{\n{}\n  }},\n  \"fuse\": []\n}}\n", fmt::join(lines, ",\n"));
}

}  // namespace tapestry::rewrite
