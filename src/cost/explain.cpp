// explain(): sharding in DTensor/JAX words, the text and JSON forms, the Chrome trace (explain.h);
// the Communication section and the critical path are in explain_communication.cpp and
// explain_critical_path.cpp.
#include "tapestry/cost/explain.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "explain_detail.h"
#include "tapestry/cost/evaluator.h"
#include "tapestry/ir/dtype.h"
#include "tapestry/metakernel/apply.h"
#include "tapestry/rewrite/fused.h"
#include "tapestry/rewrite/pipeline.h"
#include "tapestry/rewrite/recompute.h"
#include "tapestry/rewrite/zero.h"
#include "tapestry/support/assert.h"
#include "tapestry/support/error.h"

namespace tapestry::cost {

namespace {

using detail::combining_reduce;
using detail::label_of;

std::string placement_of(const ir::Graph& graph, const zspace::AffineMap& map, std::size_t dim,
                         ir::TensorId tensor, bool is_output) {
  for (std::size_t row = 0; row < map.out_rank(); ++row) {
    if (map.at(row, dim) == 0) continue;
    if (is_output && row == 0) {
      if (auto combine = combining_reduce(graph, tensor)) {
        return fmt::format("Partial({})", detail::combine_monoid(graph, *combine));
      }
    }
    return fmt::format("Shard({})", row);
  }
  return "Replicate()";
}

OperationSharding sharding_of(const ir::Graph& graph, const Placement& p, const Target& target,
                              const PlacedOperation& op) {
  OperationSharding s{op.name, op.kernel, {}, {}, {}};
  ir::OperationView view = graph.operation(op.id);
  std::vector<std::size_t> split;
  for (std::size_t d = 0; d < op.grid.size(); ++d) {
    if (op.grid[d] <= 1) continue;
    split.push_back(d);
    s.axes.push_back(op.mesh_axis[d].empty() ? fmt::format("{}={}", view.index_name(d), op.grid[d])
                                             : fmt::format("{}={}@{}", view.index_name(d),
                                                           op.grid[d], op.mesh_axis[d]));
  }
  for (std::uint32_t a : op.applications) {
    const std::string& device = target.devices[p.applications[a].device].name;
    if (std::find(s.devices.begin(), s.devices.end(), device) == s.devices.end()) {
      s.devices.push_back(device);
    }
  }
  const ir::IpfSignature* sig = view.ipf_signature();
  if (sig == nullptr) return s;
  const auto add = [&](const ir::SelectionMap& tensors, const ir::IpfMap& ipfs, bool is_output) {
    auto ipf = ipfs.entries().begin();
    for (const auto& entry : tensors.entries()) {
      TAPESTRY_ASSERT(ipf != ipfs.entries().end(), "one IPF per selection");
      TensorSharding t{entry.name, label_of(graph, entry.value.tensor), is_output, {}};
      if (is_output) {
        if (auto reduce = combining_reduce(graph, entry.value.tensor)) {
          const auto outs = graph.operation(*reduce).outputs().entries();
          if (outs.begin() != outs.end()) t.tensor = label_of(graph, (*outs.begin()).value.tensor);
        }
      }
      for (std::size_t d : split) {
        t.placements.push_back(
            placement_of(graph, ipf->value.map(), d, entry.value.tensor, is_output));
      }
      s.tensors.push_back(std::move(t));
      ++ipf;
    }
  };
  add(view.inputs(), sig->inputs, false);
  add(view.outputs(), sig->outputs, true);
  return s;
}

std::string bytes_text(std::int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (b < 1024.0 * 1024) return fmt::format("{:.1f} KiB", b / 1024);
  if (b < 1024.0 * 1024 * 1024) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024));
  return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
}

// Device names, "gpu:0 … gpu:7" for a run of four or more consecutive devices of one kind.
std::string device_span(const std::vector<std::string>& names) {
  const auto number = [](const std::string& name) -> std::optional<std::pair<std::string, long>> {
    const std::size_t colon = name.rfind(':');
    if (colon == std::string::npos) return std::nullopt;
    try {
      return std::pair{name.substr(0, colon), std::stol(name.substr(colon + 1))};
    } catch (const std::exception&) {
      return std::nullopt;
    }
  };
  bool run = names.size() >= 4;
  for (std::size_t i = 0; run && i < names.size(); ++i) {
    const auto a = number(names[i]), b = number(names[0]);
    run = a && b && a->first == b->first && a->second == b->second + static_cast<long>(i);
  }
  if (run) return fmt::format("{} … {}", names.front(), names.back());
  return fmt::format("{}", fmt::join(names, ", "));
}

std::string seconds_text(double s) {
  if (s == 0) return "0";
  if (s < 1e-3) return fmt::format("{:.1f} µs", s * 1e6);
  if (s < 1) return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.3f} s", s);
}

std::string gain_text(const Gain& g) {
  if (!g.reason.empty()) return fmt::format("{}: {}", g.baseline, g.reason);
  return fmt::format("{:.2f}× against {} ({}{})", g.ratio, g.baseline, seconds_text(g.baseline_s),
                     g.baseline_fits ? "" : ", does not fit");
}

}  // namespace

namespace detail {

std::string combine_monoid(const ir::Graph& graph, ir::OperationId op) {
  const ir::OperationView view = graph.operation(op);
  const auto monoid_of = [](const nlohmann::json& params) {
    return params.is_object() && params.contains("op") ? params["op"].get<std::string>()
                                                       : std::string("sum");
  };
  if (view.kernel() == rewrite::kFusedKernel) {
    for (const rewrite::FusedStage& stage : rewrite::fused_stages(view.params())) {
      if (stage.kernel == "reduce") return monoid_of(stage.params);
    }
  }
  return monoid_of(view.params());
}

}  // namespace detail

Explanation explain(const ir::Graph& graph, const Placement& placement, const Target& target,
                    const CostVector& cost, const Schedule& schedule) {
  Explanation e;
  e.target = target.name;
  for (const PlacedOperation& op : placement.operations) {
    e.operations.push_back(sharding_of(graph, placement, target, op));
  }
  e.communication = detail::communication_of(graph, placement, target, schedule);
  e.strategy = detail::strategy_of(graph, placement, target, e.communication);
  e.cost = cost;
  e.critical_path = detail::critical_path_of(placement, schedule, target);
  return e;
}

std::optional<Recomputation> recomputation_of(const ir::Graph& graph, const rewrite::Plan& plan,
                                              const rewrite::LowerResult& lowered,
                                              const Target& target, const CostVector& cost,
                                              const rewrite::LowerOptions& options) {
  if (plan.recompute.empty()) return std::nullopt;
  Recomputation r{.peak_memory_bytes = cost.peak_memory_bytes, .makespan_s = cost.makespan_s};
  std::vector<ir::OperationId> copied;  // the operations copied, in graph order
  for (const rewrite::RewriteEvent& e : lowered.log) {
    if (e.pattern != rewrite::kRecompute) continue;
    if (!e.applied) {
      r.refused.push_back(fmt::format("{}: {}", e.target, e.detail));
    } else if (const auto op = rewrite::find_operation(graph, e.target)) {
      copied.push_back(*op);
    }
  }
  r.operations = static_cast<std::int64_t>(copied.size());
  // Segments: the copied operations joined where one reads another's result, in graph order.
  std::vector<std::size_t> segment(copied.size());
  for (std::size_t i = 0; i < copied.size(); ++i) {
    segment[i] = i;
    for (std::size_t j = 0; j < i; ++j) {
      for (const auto& in : graph.operation(copied[i]).inputs().entries()) {
        const auto producers = graph.producers(in.value.tensor);
        if (std::find(producers.begin(), producers.end(), copied[j]) == producers.end()) continue;
        const std::size_t from = segment[j], to = segment[i];
        for (std::size_t& s : segment) {
          if (s == to) s = from;
        }
      }
    }
  }
  for (std::size_t i = 0; i < copied.size(); ++i) {
    if (segment[i] != i) continue;
    std::vector<std::string> names;
    for (std::size_t j = i; j < copied.size(); ++j) {
      if (segment[j] == i) names.push_back(rewrite::operation_name(graph, copied[j]));
    }
    r.segments.push_back(fmt::format("{}", fmt::join(names, " → ")));
  }
  rewrite::Plan kept = plan;
  kept.recompute.clear();
  try {
    Evaluator evaluator(graph, target, options);
    const CostVector c = evaluator.evaluate(kept);
    r.kept_peak_memory_bytes = c.peak_memory_bytes;
    r.kept_makespan_s = c.makespan_s;
  } catch (const Error& e) {
    r.reason = e.what();
  }
  return r;
}

std::optional<ZeroSharding> zero_sharding_of(const ir::Graph& graph, const rewrite::Plan& plan,
                                             const rewrite::LowerResult& lowered,
                                             const Target& target, const CostVector& cost,
                                             const rewrite::LowerOptions& options) {
  if (!plan.zero) return std::nullopt;
  ZeroSharding z{.stage = plan.zero->stage,
                 .shards = plan.zero->shards,
                 .axis = plan.zero->axis,
                 .peak_memory_bytes = cost.peak_memory_bytes,
                 .makespan_s = cost.makespan_s};
  const auto bytes_of = [&](ir::TensorId t) {
    const auto element =
        static_cast<std::int64_t>(ir::dtype_size_bytes(metakernel::tensor_type(graph, t).dtype));
    return graph.tensor(t).range().size() * element;
  };
  for (const rewrite::RewriteEvent& e : lowered.log) {
    if (e.pattern != rewrite::kZero) continue;
    if (!e.applied) {
      z.refused.push_back(fmt::format("{}: {}", e.target, e.detail));
      continue;
    }
    const ir::Graph::Named found = graph.find_named(ir::NodeKind::kTensor, e.target);
    if (!found.node) continue;
    const ir::TensorId param(*found.node);
    z.params.push_back(e.target);
    z.sharded_bytes += bytes_of(param);
    if (rewrite::find_operation(lowered.graph, e.target + "/regather"))
      z.regathered.push_back(e.target);
    for (ir::OperationId op : graph.consumers(param)) {
      const ir::OperationView view = graph.operation(op);
      if (!rewrite::is_optimizer_kernel(view.kernel())) continue;
      for (const auto& in : view.inputs().entries()) {
        const ir::TensorId t = in.value.tensor;
        if (t == param || !graph.producers(t).empty() || graph.tensor(t).range().rank() == 0)
          continue;
        const std::string name = graph.display_name(t);
        if (std::find(z.states.begin(), z.states.end(), name) != z.states.end()) continue;
        z.states.push_back(name);
        z.sharded_bytes += bytes_of(t);
      }
    }
  }
  rewrite::Plan whole = plan;
  whole.zero.reset();
  try {
    Evaluator evaluator(graph, target, options);
    const CostVector c = evaluator.evaluate(whole);
    z.whole_peak_memory_bytes = c.peak_memory_bytes;
    z.whole_makespan_s = c.makespan_s;
  } catch (const Error& e) {
    z.reason = e.what();
  }
  return z;
}

std::optional<PipelineStages> pipeline_of(const rewrite::Plan& plan,
                                          const rewrite::LowerResult& lowered, const Target& target,
                                          const CostVector& cost) {
  if (!plan.pipeline || !lowered.plan.pipeline) return std::nullopt;
  const rewrite::PipelinePlan& pipe = *lowered.plan.pipeline;  // names resolved
  PipelineStages p{
      .schedule = pipe.schedule, .microbatches = pipe.microbatches, .makespan_s = cost.makespan_s};
  double idle = 0;
  for (std::size_t s = 0; s < pipe.stages.size(); ++s) {
    PipelineStages::Stage stage{.device = rewrite::stage_device(pipe, s),
                                .operations = pipe.stages[s]};
    // A stage on a group of devices: their applications, their mean busy time, their peak.
    const std::vector<std::string> group = rewrite::stage_devices(pipe, s);
    std::vector<std::string> names;
    for (const std::string& device : group) {
      const std::optional<std::size_t> d = target.find_device(device);
      if (!d) break;
      names.push_back(target.devices[*d].name);
      for (const DeviceCost& dc : cost.per_device) {
        if (dc.device != names.back()) continue;
        stage.applications += dc.applications;
        stage.busy_s += dc.compute_s / static_cast<double>(group.size());
        stage.peak_memory_bytes = std::max(stage.peak_memory_bytes, dc.peak_memory_bytes);
      }
    }
    if (names.size() == group.size()) stage.device = fmt::format("{}", fmt::join(names, ", "));
    idle += cost.makespan_s - stage.busy_s;
    p.stages.push_back(std::move(stage));
  }
  const double total = cost.makespan_s * static_cast<double>(p.stages.size());
  p.bubble = total > 0 ? idle / total : 0;
  return p;
}

namespace {

// "Pipeline  2 stages × 4 microbatches, 1F1B; bubble 21% (…); stage 0 on gpu:0: …".
std::string pipeline_text(const PipelineStages& p) {
  std::vector<std::string> stages;
  for (std::size_t s = 0; s < p.stages.size(); ++s) {
    const PipelineStages::Stage& st = p.stages[s];
    stages.push_back(fmt::format("stage {} on {}: {} ({} applications, busy {}, peak memory {})", s,
                                 st.device, fmt::join(st.operations, ", "), st.applications,
                                 seconds_text(st.busy_s), bytes_text(st.peak_memory_bytes)));
  }
  return fmt::format(
      "Pipeline  {} stages × {} microbatches, {}; bubble {:.0f}% (the stages' idle time / {} × "
      "makespan {}); {}\n",
      p.stages.size(), p.microbatches, p.schedule == "1f1b" ? "1F1B" : "GPipe", 100 * p.bubble,
      p.stages.size(), seconds_text(p.makespan_s), fmt::join(stages, "; "));
}

// "; peak memory 1.05 MiB (kept: 1.34 MiB, saves 288.0 KiB); makespan 20.1 µs (kept: 18.9 µs,
// costs 1.2 µs)": this plan against the same plan without the member (`base`: "kept", "whole"),
// or why that could not be priced.
std::string against_text(std::string_view base, std::int64_t peak, double makespan,
                         std::int64_t base_peak, double base_makespan, const std::string& reason) {
  if (!reason.empty()) return fmt::format("; the plan without it: {}", reason);
  const std::int64_t saved = base_peak - peak;
  const double extra = makespan - base_makespan;
  return fmt::format("; peak memory {} ({}: {}, {} {}); makespan {} ({}: {}, {} {})",
                     bytes_text(peak), base, bytes_text(base_peak), saved >= 0 ? "saves" : "adds",
                     bytes_text(saved >= 0 ? saved : -saved), seconds_text(makespan), base,
                     seconds_text(base_makespan), extra >= 0 ? "costs" : "gains",
                     seconds_text(extra >= 0 ? extra : -extra));
}

// "ZeRO-3 over 2 shards: parameters …; peak memory …" and a line per refusal.
std::string zero_text(const ZeroSharding& z) {
  const std::string over =
      fmt::format("ZeRO-{} over {} shards{}", z.stage, z.shards,
                  z.axis.empty() ? std::string() : fmt::format(" (mesh axis {})", z.axis));
  const std::string params = fmt::format("{}", fmt::join(z.params, ", "));
  const std::string states = z.states.empty()
                                 ? std::string("no optimizer state")
                                 : fmt::format("optimizer state {}", fmt::join(z.states, ", "));
  std::string out;
  if (z.params.empty()) {
    out = fmt::format("Sharded   {}: nothing sharded", over);
  } else if (z.stage == 3) {
    out = fmt::format(
        "Sharded   {}: parameters {} (gathered before their uses{}), their gradients "
        "(reduce-scattered into the sliced updates) and {} (one block per device, {} whole)",
        over, params,
        z.regathered.empty()
            ? std::string()
            : fmt::format(", {} re-gathered for the backward pass", fmt::join(z.regathered, ", ")),
        states, bytes_text(z.sharded_bytes));
  } else {
    out = fmt::format(
        "Sharded   {}: {} and the gradients of {} (reduce-scattered into the sliced updates; "
        "one block per device), the parameters whole on every device (all-gathered after the "
        "update; {} whole)",
        over, states, params, bytes_text(z.sharded_bytes));
  }
  out += against_text("whole", z.peak_memory_bytes, z.makespan_s, z.whole_peak_memory_bytes,
                      z.whole_makespan_s, z.reason);
  out += "\n";
  for (const std::string& refusal : z.refused) out += fmt::format("  refused {}\n", refusal);
  return out;
}

// "1 segment: H/linear → H (2 operations); peak memory …" and a line per refusal.
std::string recomputation_text(const Recomputation& r) {
  std::string out =
      fmt::format("Recompute {} segment{}{}{} ({} operation{})", r.segments.size(),
                  r.segments.size() == 1 ? "" : "s", r.segments.empty() ? "" : ": ",
                  fmt::join(r.segments, "; "), r.operations, r.operations == 1 ? "" : "s");
  out += against_text("kept", r.peak_memory_bytes, r.makespan_s, r.kept_peak_memory_bytes,
                      r.kept_makespan_s, r.reason);
  out += "\n";
  for (const std::string& refusal : r.refused) out += fmt::format("  refused {}\n", refusal);
  return out;
}

}  // namespace

std::string to_text(const Explanation& e) {
  std::string out = fmt::format("Strategy  {}\n", e.strategy.summary);
  if (!e.gains.empty()) {
    std::vector<std::string> gains;
    for (const Gain& g : e.gains) gains.push_back(gain_text(g));
    out += fmt::format("Gain      {}\n", fmt::join(gains, "; "));
  }
  if (e.recomputation) out += recomputation_text(*e.recomputation);
  if (e.zero) out += zero_text(*e.zero);
  if (e.pipeline) out += pipeline_text(*e.pipeline);
  out += fmt::format("\nSharding on {}\n", e.target);
  for (const OperationSharding& op : e.operations) {
    out += fmt::format(
        "  {} ({})  {}  on {}\n", op.name, op.kernel,
        op.axes.empty() ? "unsharded" : fmt::format("grid {}", fmt::join(op.axes, " × ")),
        fmt::join(op.devices, ", "));
    if (op.axes.empty()) continue;
    std::size_t width = 0;
    for (const TensorSharding& t : op.tensors)
      width = std::max(width, t.port.size() + t.tensor.size() + 4);
    for (const TensorSharding& t : op.tensors) {
      const std::string name = fmt::format("{} {} {}", t.is_output ? "→" : "←", t.port, t.tensor);
      out += fmt::format("      {:<{}} [{}]\n", name, width + 2, fmt::join(t.placements, ", "));
    }
  }
  out += "\nCommunication\n";
  if (e.communication.empty())
    out += "  none: every application reads only what its device holds\n";
  for (const Communication& c : e.communication) {
    if (c.collectives == 0) {
      out += fmt::format("  {:<13} {} of {} → {}: {} transfer{}, {}, {} → {}, {}\n", c.pattern,
                         c.tensor, c.producer, c.consumer, c.transfers, c.transfers == 1 ? "" : "s",
                         bytes_text(c.bytes), fmt::join(c.from, ","), fmt::join(c.to, ","),
                         seconds_text(c.seconds));
      continue;
    }
    const std::size_t per = c.devices.size() / static_cast<std::size_t>(c.collectives);
    std::string parts;
    if (c.parts_s.size() == 2) {
      parts = fmt::format(" (reduce-scatter {}, all-gather {})", seconds_text(c.parts_s[0]),
                          seconds_text(c.parts_s[1]));
    }
    out +=
        fmt::format("  {}{} ({})  {} of {} → {}: {} over {} devices{} ({}), {} transfers, {}{}\n",
                    c.collectives > 1 ? fmt::format("{} × ", c.collectives) : "", c.pattern,
                    c.algorithm, c.tensor, c.producer, c.consumer, bytes_text(c.size_bytes), per,
                    c.collectives > 1 ? " each" : "", device_span(c.devices), c.transfers,
                    seconds_text(c.seconds), parts);
  }
  const CostVector& c = e.cost;
  out += fmt::format(
      "\nCost\n  makespan {}, peak memory {} (max over devices){}, {} device{}{}, energy {:.3g} J, "
      "moved {}\n",
      seconds_text(c.makespan_s), bytes_text(c.peak_memory_bytes), c.fits ? "" : " — DOES NOT FIT",
      c.devices_used, c.devices_used == 1 ? "" : "s",
      c.devices_held > c.devices_used ? fmt::format(" ({} held)", c.devices_held) : "", c.energy_j,
      bytes_text(c.bytes_moved));
  out += fmt::format("  {:<8} {:>5} {:>11} {:>11} {:>11} {:>11} {:>10}\n", "device", "apps",
                     "compute", "comm", "idle", "peak mem", "energy J");
  for (const DeviceCost& d : c.per_device) {
    out += fmt::format("  {:<8} {:>5} {:>11} {:>11} {:>11} {:>11} {:>10.3g}\n", d.device,
                       d.applications, seconds_text(d.compute_s), seconds_text(d.comm_s),
                       seconds_text(d.idle_s), bytes_text(d.peak_memory_bytes), d.energy_j);
  }
  const CriticalPath& p = e.critical_path;
  out += fmt::format(
      "  critical path: {} application{} ({} compute), {}{} transfer{} ({} communication), {} "
      "waiting: bound by {}\n",
      p.applications, p.applications == 1 ? "" : "s", seconds_text(p.compute_s),
      p.collectives > 0
          ? fmt::format("{} collective{} + ", p.collectives, p.collectives == 1 ? "" : "s")
          : "",
      p.transfers, p.transfers == 1 ? "" : "s", seconds_text(p.communication_s),
      seconds_text(p.waiting_s), p.bound);
  return out;
}

nlohmann::json to_json(const Explanation& e) {
  nlohmann::json ops = nlohmann::json::array();
  for (const OperationSharding& op : e.operations) {
    nlohmann::json tensors = nlohmann::json::array();
    for (const TensorSharding& t : op.tensors) {
      tensors.push_back({{"port", t.port},
                         {"tensor", t.tensor},
                         {"output", t.is_output},
                         {"placements", t.placements}});
    }
    ops.push_back({{"name", op.name},
                   {"kernel", op.kernel},
                   {"grid", op.axes},
                   {"devices", op.devices},
                   {"tensors", tensors}});
  }
  nlohmann::json comms = nlohmann::json::array();
  for (const Communication& c : e.communication) {
    nlohmann::json line = {{"pattern", c.pattern},
                           {"tensor", c.tensor},
                           {"producer", c.producer},
                           {"consumer", c.consumer},
                           {"transfers", c.transfers},
                           {"bytes", c.bytes},
                           {"seconds", c.seconds},
                           {"start_s", c.start_s},
                           {"end_s", c.end_s},
                           {"from", c.from},
                           {"to", c.to}};
    if (c.collectives > 0) {
      line["algorithm"] = c.algorithm;
      line["collectives"] = c.collectives;
      line["size_bytes"] = c.size_bytes;
      line["devices"] = c.devices;
      if (!c.parts_s.empty()) line["parts_s"] = c.parts_s;
    }
    comms.push_back(std::move(line));
  }
  nlohmann::json gains = nlohmann::json::array();
  for (const Gain& g : e.gains) {
    if (!g.reason.empty()) {
      gains.push_back({{"baseline", g.baseline}, {"reason", g.reason}});
    } else {
      gains.push_back({{"baseline", g.baseline},
                       {"baseline_s", g.baseline_s},
                       {"ratio", g.ratio},
                       {"baseline_fits", g.baseline_fits}});
    }
  }
  const CriticalPath& p = e.critical_path;
  nlohmann::json out = {{"target", e.target},
                        {"strategy",
                         {{"summary", e.strategy.summary},
                          {"kind", e.strategy.kind},
                          {"data", e.strategy.data},
                          {"tensor", e.strategy.tensor},
                          {"megatron", e.strategy.megatron}}},
                        {"gains", std::move(gains)},
                        {"operations", ops},
                        {"communication", comms},
                        {"cost", to_json(e.cost)},
                        {"critical_path",
                         {{"compute_s", p.compute_s},
                          {"communication_s", p.communication_s},
                          {"waiting_s", p.waiting_s},
                          {"applications", p.applications},
                          {"transfers", p.transfers},
                          {"collectives", p.collectives},
                          {"bound", p.bound}}}};
  if (const std::optional<Recomputation>& r = e.recomputation) {
    nlohmann::json recompute = {{"segments", r->segments},
                                {"operations", r->operations},
                                {"refused", r->refused},
                                {"peak_memory_bytes", r->peak_memory_bytes},
                                {"makespan_s", r->makespan_s},
                                {"kept_peak_memory_bytes", r->kept_peak_memory_bytes},
                                {"kept_makespan_s", r->kept_makespan_s}};
    if (!r->reason.empty()) recompute["reason"] = r->reason;
    out["recompute"] = std::move(recompute);
  }
  if (const std::optional<ZeroSharding>& z = e.zero) {
    nlohmann::json zero = {{"stage", z->stage},
                           {"shards", z->shards},
                           {"axis", z->axis},
                           {"params", z->params},
                           {"states", z->states},
                           {"regathered", z->regathered},
                           {"sharded_bytes", z->sharded_bytes},
                           {"refused", z->refused},
                           {"peak_memory_bytes", z->peak_memory_bytes},
                           {"makespan_s", z->makespan_s},
                           {"whole_peak_memory_bytes", z->whole_peak_memory_bytes},
                           {"whole_makespan_s", z->whole_makespan_s}};
    if (!z->reason.empty()) zero["reason"] = z->reason;
    out["zero"] = std::move(zero);
  }
  if (const std::optional<PipelineStages>& pipe = e.pipeline) {
    nlohmann::json stages = nlohmann::json::array();
    for (const PipelineStages::Stage& st : pipe->stages) {
      stages.push_back({{"device", st.device},
                        {"operations", st.operations},
                        {"applications", st.applications},
                        {"busy_s", st.busy_s},
                        {"peak_memory_bytes", st.peak_memory_bytes}});
    }
    out["pipeline"] = {{"schedule", pipe->schedule},
                       {"microbatches", pipe->microbatches},
                       {"stages", std::move(stages)},
                       {"makespan_s", pipe->makespan_s},
                       {"bubble", pipe->bubble}};
  }
  return out;
}

nlohmann::json chrome_trace(const ir::Graph& graph, const Placement& placement,
                            const Target& target, const Schedule& schedule) {
  TAPESTRY_ASSERT(schedule.applications.size() == placement.applications.size() &&
                      schedule.transfers.size() == placement.transfers.size(),
                  "the schedule is of this placement");
  const auto n = static_cast<std::uint32_t>(target.devices.size());
  const auto device_name = [&](std::uint32_t d) {
    return d == kHost ? std::string("host") : target.devices[d].name;
  };
  const auto receiver_track = [&](std::uint32_t to) { return to == kHost ? 2 * n : n + to; };
  const auto node_name = [&](ir::NodeId node) {
    const std::string& label = graph.node(node).label();
    return label.empty() ? std::string(graph.key(node)) : label;
  };
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", 0},
                    {"args", {{"name", fmt::format("predicted on {}", target.name)}}}});
  const auto name_track = [&](std::uint32_t tid, const std::string& name) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", tid},
                      {"args", {{"name", name}}}});
  };
  std::vector<bool> device_used(n, false), receiver_used(2 * n + 1, false);
  for (std::uint32_t a = 0; a < placement.applications.size(); ++a) {
    device_used[schedule.devices.empty() ? placement.applications[a].device : schedule.devices[a]] =
        true;
  }
  for (const Transfer& t : placement.transfers) receiver_used[receiver_track(t.to)] = true;
  for (std::uint32_t d = 0; d < n; ++d) {
    if (device_used[d]) name_track(d, target.devices[d].name);
  }
  for (std::uint32_t tid = n; tid <= 2 * n; ++tid) {
    if (receiver_used[tid])
      name_track(tid, device_name(tid == 2 * n ? kHost : tid - n) + " receives");
  }
  for (std::uint32_t a = 0; a < placement.applications.size(); ++a) {
    const PlacedApplication& app = placement.applications[a];
    const PlacedOperation& op = placement.operations[app.operation];
    const Schedule::Interval& when = schedule.applications[a];
    events.push_back({{"name", node_name(app.id)},
                      {"cat", op.kernel},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", schedule.devices.empty() ? app.device : schedule.devices[a]},
                      {"ts", when.start * 1e6},
                      {"dur", (when.end - when.start) * 1e6},
                      {"args",
                       {{"operation", op.name},
                        {"flops", app.work.flops},
                        {"bytes_read", app.work.bytes_read},
                        {"bytes_written", app.work.bytes_written}}}});
  }
  for (std::uint32_t t = 0; t < placement.transfers.size(); ++t) {
    const Transfer& tr = placement.transfers[t];
    const Schedule::Interval& when = schedule.transfers[t];
    nlohmann::json args = {
        {"tensor", node_name(tr.tensor)}, {"from", device_name(tr.from)}, {"bytes", tr.bytes}};
    if (tr.collective != kNoCollective) {
      const Collective& c = placement.collectives[tr.collective];
      args["collective"] = fmt::format("{} ({})", kind_name(c.kind),
                                       algorithm_name(price_collective(c, target).algorithm));
    }
    events.push_back({{"name", fmt::format("{} -> {}", device_name(tr.from), device_name(tr.to))},
                      {"cat", "transfer"},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", receiver_track(tr.to)},
                      {"ts", when.start * 1e6},
                      {"dur", (when.end - when.start) * 1e6},
                      {"args", std::move(args)}});
  }
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
}

}  // namespace tapestry::cost
