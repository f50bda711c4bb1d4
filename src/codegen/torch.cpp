// Per-rank PyTorch programs (codegen/torch.h).
#include "tapestry/codegen/torch.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <unordered_set>

#include "rank_order.h"
#include "runtime/block_program.h"
#include "runtime/rank_program.h"
#include "tapestry/rewrite/fused.h"
#include "tapestry/runtime/body_kernels.h"
#include "tapestry/runtime/executable_kernels.h"
#include "tapestry/runtime/tensor_map.h"
#include "tapestry/support/assert.h"
#include "tapestry/support/error.h"
#include "tapestry/zspace/format.h"
#include "torch_ops.h"
#include "torch_support.h"

namespace tapestry::codegen {

namespace {

using detail::Names;
using detail::range_text;
using runtime::detail::BlockProgram;
using runtime::detail::BlockTask;
using runtime::detail::CollectiveKind;
using runtime::detail::RankCollective;
using runtime::detail::RankProgram;
using zspace::IndexProjection;
using zspace::Range;

// The names a rank's Python function must not take: Python keywords, the modules and helpers
// it calls.
Names torch_names() {
  return Names({"False",   "None",     "True",     "and",    "as",   "assert", "async",  "await",
                "break",   "class",    "continue", "def",    "del",  "elif",   "else",   "except",
                "finally", "for",      "from",     "global", "if",   "import", "in",     "is",
                "lambda",  "nonlocal", "not",      "or",     "pass", "raise",  "return", "try",
                "while",   "with",     "yield",    "torch",  "F",    "ctx",    "run",    "helpers",
                "print",   "float",    "int",      "range",  "len",  "sum",    "max",    "min",
                "abs",     "list",     "dict"});
}

// A range as Python: ((start, end), ...) per dim.
std::string box_tuple(const Range& box) {
  std::vector<std::string> dims;
  for (std::size_t d = 0; d < box.rank(); ++d) {
    dims.push_back(fmt::format("({}, {})", box.start()[d], box.end()[d]));
  }
  if (dims.size() == 1) return fmt::format("({},)", dims[0]);
  return fmt::format("({})", fmt::join(dims, ", "));
}

std::string shape_tuple(const Range& box) {
  if (box.rank() == 1) return fmt::format("({},)", box.extent(0));
  std::vector<std::int64_t> shape;
  for (std::size_t d = 0; d < box.rank(); ++d) shape.push_back(box.extent(d));
  return fmt::format("({})", fmt::join(shape, ", "));
}

// Generated lines stay within kWidth columns where they can: a trailing comment that does not
// fit goes on its own line above the code; a call that does not fit breaks after its open
// parenthesis, its arguments packed on the lines below, indented four more:
//
//   Y_matmul[...] = ctx.reduce_scatter(
//       [Y_matmul_partial[0, 0:2048], Y_matmul_partial[0, 2048:4096]], [0, 1], group=0)
constexpr std::size_t kWidth = 100;

std::vector<std::string> wrap(const std::string& text, std::size_t indent) {
  if (indent + text.size() <= kWidth) return {text};
  std::vector<std::string> out;
  std::string code = text;
  const std::size_t comment = text.find("  # ");
  if (comment != std::string::npos && text.rfind('#', 0) != 0) {
    out.push_back(text.substr(comment + 2));
    code = text.substr(0, comment);
    if (indent + code.size() <= kWidth) {
      out.push_back(code);
      return out;
    }
  }
  // The outermost call whose closing parenthesis ends the line, and its top-level arguments.
  int depth = 0;
  std::size_t open = std::string::npos;
  std::vector<std::string> args;
  std::size_t from = 0;
  for (std::size_t i = 0; i < code.size(); ++i) {
    const char c = code[i];
    if (c == '(' || c == '[' || c == '{') {
      if (depth == 0 && c == '(' && open == std::string::npos) {
        open = i;
        from = i + 1;
      }
      ++depth;
    } else if (c == ')' || c == ']' || c == '}') {
      --depth;
    } else if (c == ',' && depth == 1 && open != std::string::npos) {
      args.push_back(code.substr(from, i - from));
      from = i + 2;  // ", "
    }
  }
  if (open == std::string::npos || code.back() != ')') {
    out.push_back(code);
    return out;
  }
  args.push_back(code.substr(from, code.size() - 1 - from));
  out.push_back(code.substr(0, open + 1));
  std::string current;
  for (std::size_t a = 0; a < args.size(); ++a) {
    const std::string piece = args[a] + (a + 1 < args.size() ? "," : ")");
    if (!current.empty() && indent + 4 + current.size() + 1 + piece.size() > kWidth) {
      out.push_back("    " + current);
      current.clear();
    }
    current += (current.empty() ? "" : " ") + piece;
  }
  out.push_back("    " + current);
  return out;
}

// `text` as comment lines of at most kWidth columns, broken at spaces; continuation lines
// indented by `hang`.
std::string comment(std::string_view text, std::size_t hang = 4) {
  std::string out = "#";
  std::size_t column = 1;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view word = text.substr(start, end - start);
    if (column > 1 && column + 1 + word.size() > kWidth) {
      out += "\n#" + std::string(hang, ' ');
      column = 1 + hang;
    } else {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
    start = end + 1;
  }
  return out + "\n";
}

// Something Python holds: a rank's buffer of a tensor, or a fused stage's temporary; `box` is
// what it holds, in the tensor's coordinates.
struct Holder {
  std::string var;
  Range box;
};

// `box` of what `h` holds, as a slice of its variable; dims in `integer` (extent 1) are indexed
// by an integer, so they drop out (a split reduction's block dim).
std::string slice(const Holder& h, const Range& box, const std::vector<std::size_t>& integer = {}) {
  TAPESTRY_ASSERT(h.box.contains(box) || box.is_empty(), "a slice outside its buffer");
  if (box == h.box && integer.empty()) return h.var;
  std::vector<std::string> dims;
  for (std::size_t d = 0; d < box.rank(); ++d) {
    const std::int64_t lo = box.start()[d] - h.box.start()[d];
    const std::int64_t hi = box.end()[d] - h.box.start()[d];
    if (std::find(integer.begin(), integer.end(), d) != integer.end()) {
      dims.push_back(fmt::format("{}", lo));
    } else if (lo == 0 && hi == h.box.extent(d)) {
      dims.emplace_back(":");
    } else {
      dims.push_back(fmt::format("{}:{}", lo, hi));
    }
  }
  while (!dims.empty() && dims.back() == ":") dims.pop_back();
  if (dims.empty()) return h.var;
  return fmt::format("{}[{}]", h.var, fmt::join(dims, ", "));
}

// The target of an assignment: `h.var[...]` for its whole box.
std::string target(const Holder& h, const Range& box, const std::vector<std::size_t>& integer) {
  const std::string s = slice(h, box, integer);
  return s == h.var ? h.var + "[...]" : s;
}

// What a kernel port reads or writes: a holder, the port's IPF, the tensor's dtype and range.
struct Port {
  const Holder* holder = nullptr;
  IndexProjection ipf;
  ir::DType dtype = ir::DType::kFloat32;
  Range whole;
};

struct Output {
  std::string name;
  const Holder* holder = nullptr;  // null: a fused stage's temporary
  IndexProjection ipf;
  ir::DType dtype = ir::DType::kFloat32;
  std::vector<std::size_t> integer;  // dims indexed by an integer (block dims)
};

// One rank's generated function, line by line.
class RankWriter {
 public:
  RankWriter(const ir::Graph& graph, const rewrite::LowerResult& lowered, const BlockProgram& p,
             const RankProgram& rp, const std::vector<std::uint32_t>& rank_of,
             const TorchOptions& options)
      : graph_(graph), lowered_(lowered), p_(p), rp_(rp), rank_of_(rank_of), options_(options) {}

  std::string write();

 private:
  void line(const std::string& text) {
    for (const std::string& l : wrap(text, 4)) body_ += fmt::format("    {}\n", l);
  }
  void blank() { body_ += "\n"; }
  std::string tensor_name(std::uint32_t slot) const;
  std::string file_name(std::uint32_t slot) const;
  void plan_buffers();
  void emit_buffers();
  void emit_task(std::uint32_t t);
  void emit_call(std::string_view kernel, const nlohmann::json* params, const Range& index,
                 std::span<const std::string> index_names,
                 std::span<const ir::Reduction> reductions,
                 const std::map<std::string, std::vector<Port>, std::less<>>& inputs,
                 const std::vector<Output>& outputs, std::string_view what);
  void emit_collective(std::uint32_t c);
  void emit_send_or_receive(std::uint32_t m);
  void emit_waits(std::uint32_t t);
  bool no_op(std::uint32_t t) const;

  const ir::Graph& graph_;
  const rewrite::LowerResult& lowered_;
  const BlockProgram& p_;
  const RankProgram& rp_;
  const std::vector<std::uint32_t>& rank_of_;
  const TorchOptions& options_;
  Names names_ = torch_names();
  std::map<std::uint32_t, Holder> buffers_;       // slot → this rank's buffer
  std::vector<std::vector<Range>> touched_;       // per slot
  std::set<std::uint32_t> waited_;                // messages received and unpacked
  std::map<std::uint32_t, std::string> pending_;  // message → its receive's variable
  std::string body_;
  int temporaries_ = 0;
  std::string last_temporary_;  // the variable of the fused stage emitted last
};

std::string RankWriter::tensor_name(std::uint32_t slot) const {
  const ir::TensorId t = p_.slots[slot].tensor;
  const std::optional<ir::TensorId> original = lowered_.original(t);
  return original ? runtime::tensor_name(graph_, *original)
                  : runtime::tensor_name(lowered_.graph, t);
}

std::string RankWriter::file_name(std::uint32_t slot) const {
  return tensor_name(slot);
}

bool RankWriter::no_op(std::uint32_t t) const {
  for (const RankCollective& c : rp_.collectives) {
    if (c.reduce_task == t && c.root == rp_.rank) return true;
    for (std::size_t i = 0; i < c.reduce_tasks.size(); ++i) {
      if (c.reduce_tasks[i] == t && c.members[i] == rp_.rank) return true;
    }
  }
  return false;
}

template <typename PortT>
std::vector<std::pair<std::uint32_t, Range>> port_boxes(
    const ir::NamedLists<PortT>& ports, const std::vector<runtime::detail::PortAddress>& a) {
  std::vector<std::pair<std::uint32_t, Range>> out;
  std::size_t i = 0;
  for (const auto& e : ports.entries()) out.emplace_back(a[i++].slot, e.value.view.box());
  return out;
}

// Per tensor, the bounding box of every box this rank reads, writes or receives (rank 0: the
// graph's outputs whole, which it gathers).
void RankWriter::plan_buffers() {
  touched_.assign(p_.slots.size(), {});
  for (std::uint32_t t : rp_.whole_task) {
    const BlockTask& task = p_.tasks[t];
    if (!no_op(t)) {
      for (const auto& [slot, box] : port_boxes(task.call.inputs, task.inputs))
        touched_[slot].push_back(box);
    }
    for (const auto& [slot, box] : port_boxes(task.call.outputs, task.outputs))
      touched_[slot].push_back(box);
  }
  for (const auto& r : rp_.receives) {
    touched_[rp_.messages[r.message].slot].push_back(rp_.messages[r.message].box);
  }
  for (const auto& part : rp_.parts) {
    const RankCollective& c = rp_.collectives[part.collective];
    if (c.kind == CollectiveKind::kAllgather) {
      for (const Range& b : c.boxes) touched_[c.source_slot].push_back(b);
    } else if (c.kind == CollectiveKind::kAllreduce) {
      touched_[c.result_slot].push_back(c.result_box);
    }
  }
  if (rp_.rank == 0) {
    for (std::uint32_t s = 0; s < p_.slots.size(); ++s) {
      if (p_.slots[s].output) touched_[s].push_back(p_.slots[s].range);
    }
  }
  for (std::uint32_t s = 0; s < p_.slots.size(); ++s) {
    std::vector<Range> boxes;
    for (const Range& b : touched_[s]) {
      if (!b.is_empty() || b.rank() == 0) boxes.push_back(b);
    }
    if (boxes.empty()) continue;
    buffers_[s] = Holder{names_.make(tensor_name(s)), Range::bounding(boxes)};
  }
}

void RankWriter::emit_buffers() {
  line("# The boxes of every tensor this rank reads, writes or receives (one buffer per tensor:");
  line("# their bounding box), with the box each holds in the tensor's coordinates.");
  for (const auto& [slot, h] : buffers_) {
    const runtime::detail::BufferSlot& s = p_.slots[slot];
    const std::string dtype = detail::torch_dtype(s.dtype);
    if (s.input) {
      line(fmt::format("{} = ctx.load({:?}, {}, {}, {})  # {}{} (an input)", h.var, file_name(slot),
                       box_tuple(s.range), box_tuple(h.box), dtype, tensor_name(slot),
                       range_text(h.box)));
    } else {
      line(fmt::format("{} = torch.empty({}, dtype={}, device=ctx.device)  # {}{}{}", h.var,
                       shape_tuple(h.box), dtype, tensor_name(slot), range_text(h.box),
                       s.output ? " (an output)" : ""));
    }
  }
  blank();
}

// Receives that application `t` reads: unpacked into their buffers before it runs.
void RankWriter::emit_waits(std::uint32_t t) {
  for (const auto& r : rp_.receives) {
    if (waited_.contains(r.message)) continue;
    bool reads = false;
    for (std::uint32_t c : r.consumers) reads |= rp_.whole_task[c] == t;
    if (!reads) continue;
    const runtime::detail::RankMessageInfo& m = rp_.messages[r.message];
    line(fmt::format("{} = {}.wait()", target(buffers_.at(m.slot), m.box, {}),
                     pending_.at(r.message)));
    waited_.insert(r.message);
  }
}

void RankWriter::emit_send_or_receive(std::uint32_t m) {
  const runtime::detail::RankMessageInfo& msg = rp_.messages[m];
  const std::string what = fmt::format("{}{}", tensor_name(msg.slot), range_text(msg.box));
  if (msg.from == rp_.rank) {
    line(fmt::format("ctx.send({}, dst={}, tag={})  # {}{} to rank {}",
                     slice(buffers_.at(msg.slot), msg.box), msg.to, m + 1, what,
                     msg.gather ? " (an output, gathered)" : "", msg.to));
  } else if (msg.to == rp_.rank) {
    const std::string var = names_.make(fmt::format("message{}", m + 1));
    pending_[m] = var;
    line(fmt::format("{} = ctx.recv({}, {}, src={}, tag={})  # {} from rank {}", var,
                     shape_tuple(msg.box), detail::torch_dtype(p_.slots[msg.slot].dtype), msg.from,
                     m + 1, what, msg.from));
  }
}

void RankWriter::emit_collective(std::uint32_t index) {
  const RankCollective& c = rp_.collectives[index];
  const auto at = std::find(c.members.begin(), c.members.end(), rp_.rank);
  if (at == c.members.end()) return;
  const auto member = static_cast<std::size_t>(at - c.members.begin());
  const std::string members = fmt::format("[{}]", fmt::join(c.members, ", "));
  const Holder& source = buffers_.at(c.source_slot);
  line(fmt::format("# {}: {} over ranks {}{}", c.what,
                   runtime::detail::collective_kind_name(c.kind), fmt::join(c.members, ", "),
                   c.kind == CollectiveKind::kAllgather
                       ? ""
                       : fmt::format(" of {}'s blocks", tensor_name(c.source_slot))));
  switch (c.kind) {
    case CollectiveKind::kReduce:
    case CollectiveKind::kAllreduce: {
      const std::string sum = names_.make("partial_sum");
      line(fmt::format("{} = {}.clone()", sum, slice(source, c.boxes[member], {0})));
      if (c.kind == CollectiveKind::kReduce) {
        line(fmt::format("ctx.reduce({}, dst={}, group={})", sum, c.root, index));
      } else {
        line(fmt::format("ctx.all_reduce({}, group={})", sum, index));
      }
      if (c.kind == CollectiveKind::kAllreduce || c.root == rp_.rank) {
        line(fmt::format("{} = {}", target(buffers_.at(c.result_slot), c.result_box, {}), sum));
      }
      break;
    }
    case CollectiveKind::kReduceScatter: {
      std::vector<std::string> parts;
      const Range& block = c.boxes[member];
      for (const Range& s : c.result_boxes) {
        const Range piece(zspace::Point{block.start()[0]}.concat(s.start()),
                          zspace::Point{block.start()[0] + 1}.concat(s.end()));
        parts.push_back(slice(source, piece, {0}));
      }
      line(fmt::format("{} = ctx.reduce_scatter([{}], {}, group={})",
                       target(buffers_.at(c.result_slot), c.result_boxes[member], {}),
                       fmt::join(parts, ", "), members, index));
      break;
    }
    case CollectiveKind::kAllgather: {
      std::vector<std::string> parts;
      for (const Range& b : c.boxes) parts.push_back(slice(source, b));
      line(fmt::format("ctx.all_gather([{}], {}, group={})", fmt::join(parts, ", "), members,
                       index));
      break;
    }
  }
}

void RankWriter::emit_call(std::string_view kernel, const nlohmann::json* params,
                           const Range& index, std::span<const std::string> index_names,
                           std::span<const ir::Reduction> reductions,
                           const std::map<std::string, std::vector<Port>, std::less<>>& inputs,
                           const std::vector<Output>& outputs, std::string_view what) {
  if (kernel == rewrite::kFusedKernel) {
    if (params == nullptr) throw Error(fmt::format("{}: a fused operation without stages", what));
    const std::vector<rewrite::FusedStage> stages = rewrite::fused_stages(*params);
    std::optional<Holder> previous;
    std::optional<ir::DType> previous_dtype;
    std::vector<std::unique_ptr<Holder>> keep;
    for (std::size_t s = 0; s < stages.size(); ++s) {
      const rewrite::FusedStage& stage = stages[s];
      const Range stage_index = IndexProjection(stage.index_map).apply(index);
      std::map<std::string, std::vector<Port>, std::less<>> stage_inputs;
      for (const rewrite::FusedPort& in : stage.inputs) {
        if (in.source.empty()) {
          TAPESTRY_ASSERT(previous.has_value(), "a fused stage reads a previous one");
          keep.push_back(std::make_unique<Holder>(*previous));
          stage_inputs[in.name].push_back(
              {keep.back().get(), in.ipf, *previous_dtype, previous->box});
        } else {
          const auto found = inputs.find(in.source);
          if (found == inputs.end()) {
            throw Error(fmt::format("{}: fused stage {} reads '{}', which the operation lacks",
                                    what, s, in.source));
          }
          Port port = found->second.at(0);
          port.ipf = in.ipf;
          stage_inputs[in.name].push_back(port);
        }
      }
      std::vector<Output> stage_outputs;
      const bool last = s + 1 == stages.size();
      for (const rewrite::FusedPort& out : stage.outputs) {
        if (last) {
          const auto found = std::find_if(outputs.begin(), outputs.end(),
                                          [&](const Output& o) { return o.name == out.source; });
          if (found == outputs.end()) {
            throw Error(fmt::format("{}: fused stage {} writes '{}', which the operation lacks",
                                    what, s, out.source));
          }
          Output o = *found;
          o.name = out.name;
          o.ipf = out.ipf;
          stage_outputs.push_back(o);
        } else {
          const std::optional<ir::DType> dtype = out.dtype ? out.dtype->known() : std::nullopt;
          stage_outputs.push_back({.name = out.name,
                                   .holder = nullptr,
                                   .ipf = out.ipf,
                                   .dtype = dtype.value_or(outputs.front().dtype)});
        }
      }
      line(fmt::format("# stage {}: {} ({})", s + 1, stage.kernel, stage.label));
      emit_call(stage.kernel, &stage.params, stage_index, stage.index_names, stage.reductions,
                stage_inputs, stage_outputs,
                fmt::format("{} stage {} ({})", what, s + 1, stage.label));
      if (!last) {
        // The temporary the stage assigned: the last name handed out.
        previous = Holder{last_temporary_, stage.outputs.front().ipf.apply(stage_index)};
        previous_dtype = stage_outputs.front().dtype;
      }
    }
    return;
  }
  detail::TorchCall call{
      .kernel = kernel,
      .body_kernel = options_.kernels != nullptr ? options_.kernels->find(kernel) : nullptr,
      .index = index,
      .index_names = {index_names.begin(), index_names.end()},
      .reductions = {reductions.begin(), reductions.end()},
      .params = params};
  for (const auto& [name, ports] : inputs) {
    for (const Port& port : ports) {
      const Range box = port.ipf.apply(index);
      call.inputs[name].push_back(
          {.expr = slice(*port.holder, box), .box = box, .dtype = port.dtype, .whole = port.whole});
    }
  }
  for (const Output& out : outputs) {
    call.output_names.push_back(out.name);
    Range box = out.ipf.apply(index);
    // The torch result has no block dims.
    std::vector<std::int64_t> lo, hi;
    for (std::size_t d = 0; d < box.rank(); ++d) {
      if (std::find(out.integer.begin(), out.integer.end(), d) != out.integer.end()) continue;
      lo.push_back(box.start()[d]);
      hi.push_back(box.end()[d]);
    }
    call.output_boxes.push_back(Range(zspace::Point(lo), zspace::Point(hi)));
    call.output_dtypes.push_back(out.dtype);
  }
  std::vector<std::string> exprs;
  try {
    exprs = detail::torch_expressions(call);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", what, e.what()));
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const Output& out = outputs[i];
    if (out.holder == nullptr) {
      last_temporary_ = names_.make(fmt::format("t{}", ++temporaries_));
      line(fmt::format("{} = {}", last_temporary_, exprs[i]));
    } else {
      line(
          fmt::format("{} = {}", target(*out.holder, out.ipf.apply(index), out.integer), exprs[i]));
    }
  }
}

void RankWriter::emit_task(std::uint32_t t) {
  const BlockTask& task = p_.tasks[t];
  const auto& call = task.call;
  line(fmt::format("# {} ({}): {}", call.operation, detail::kernel_text(call, ""),
                   detail::index_text(call)));
  if (no_op(t)) {
    line("# (its sum arrived by the collective above)");
    blank();
    return;
  }
  emit_waits(t);
  // Lowering leaves applications unlabelled (their keys are ids): an application is named by its
  // operation and its index box.
  const std::string what = fmt::format("operation '{}' (the application over {})", call.operation,
                                       detail::index_text(call));
  std::map<std::string, std::vector<Port>, std::less<>> inputs;
  std::size_t i = 0;
  for (const auto& e : call.inputs.entries()) {
    const std::uint32_t slot = task.inputs[i++].slot;
    inputs[e.name].push_back(
        {&buffers_.at(slot), *e.value.ipf, p_.slots[slot].dtype, p_.slots[slot].range});
  }
  // A split reduction's block dim (an index dim named "block" that is not itself reduced): one
  // call per block, each writing its block of the partials.
  std::optional<std::size_t> block;
  for (std::size_t d = 0; d < call.index_names.size(); ++d) {
    if (call.index_names[d] != "block") continue;
    bool reduced = false;
    for (const ir::Reduction& r : call.reductions) reduced |= r.dim == "block";
    if (!reduced) block = d;
  }
  std::vector<Output> outputs;
  i = 0;
  for (const auto& e : call.outputs.entries()) {
    const std::uint32_t slot = task.outputs[i++].slot;
    Output o{.name = e.name,
             .holder = &buffers_.at(slot),
             .ipf = *e.value.ipf,
             .dtype = p_.slots[slot].dtype};
    if (block) {
      for (std::size_t k = 0; k < o.ipf.map().out_rank(); ++k) {
        if (o.ipf.map().at(k, *block) != 0) o.integer.push_back(k);
      }
    }
    outputs.push_back(std::move(o));
  }
  if (block) {
    for (std::int64_t b = call.index.start()[*block]; b < call.index.end()[*block]; ++b) {
      emit_call(call.kernel, call.params, call.index.with_dim(*block, b, b + 1), call.index_names,
                call.reductions, inputs, outputs, what);
    }
  } else {
    emit_call(call.kernel, call.params, call.index, call.index_names, call.reductions, inputs,
              outputs, what);
  }
  blank();
}

std::string RankWriter::write() {
  plan_buffers();
  emit_buffers();
  // Where each message and collective goes in the global order: right after its (last) producer.
  const detail::GlobalPlaces places = detail::global_places(p_, rp_);
  line("# The applications in the plan's order; each message is sent and its receive posted");
  line("# right after its producer, on both ranks (docs/codegen.md).");
  blank();
  for (std::uint32_t t : p_.order) {
    if (rank_of_[t] == rp_.rank) emit_task(t);
    bool any = false;
    for (std::uint32_t m : places.messages_after[t]) {
      const auto& msg = rp_.messages[m];
      if (msg.from != rp_.rank && msg.to != rp_.rank) continue;
      emit_send_or_receive(m);
      any = true;
    }
    for (std::uint32_t c : places.collectives_after[t]) {
      const auto& members = rp_.collectives[c].members;
      if (std::find(members.begin(), members.end(), rp_.rank) == members.end()) continue;
      emit_collective(c);
      any = true;
    }
    if (any) blank();
  }
  // Gathers of outputs onto rank 0, then the outputs.
  for (std::uint32_t m = 0; m < rp_.messages.size(); ++m) {
    if (rp_.messages[m].to != rp_.rank || waited_.contains(m) || !pending_.contains(m)) continue;
    const auto& msg = rp_.messages[m];
    line(fmt::format("{} = {}.wait()", target(buffers_.at(msg.slot), msg.box, {}), pending_.at(m)));
    waited_.insert(m);
  }
  line("ctx.finish()  # every send delivered");
  if (rp_.rank == 0) {
    std::vector<std::string> outs;
    for (std::uint32_t s = 0; s < p_.slots.size(); ++s) {
      if (p_.slots[s].output)
        outs.push_back(fmt::format("{:?}: {}", file_name(s), buffers_.at(s).var));
    }
    line(fmt::format("ctx.write_outputs({{{}}})", fmt::join(outs, ", ")));
  }
  std::string header =
      fmt::format("# Rank {} of {} ({}): {} of the {} applications.\n", rp_.rank, rp_.ranks,
                  options_.target.empty() ? fmt::format("rank:{}", rp_.rank) : options_.target,
                  rp_.whole_task.size(), p_.tasks.size());
  header += comment(fmt::format("Generated by `{}`.", options_.command));
  header += comment(fmt::format("Strategy: {}", options_.strategy));
  header += fmt::format(
      "import torch\n"
      "import torch.nn.functional as F\n\n\n"
      "def run(ctx):\n"
      "    \"\"\"Rank {}'s part of the program (ctx: helpers.Context).\"\"\"\n",
      rp_.rank);
  return header + body_;
}

}  // namespace

TorchProgram generate_torch(const ir::Graph& graph, const rewrite::LowerResult& lowered,
                            const runtime::RankSchedule& schedule, const TorchOptions& options) {
  const BlockProgram whole = runtime::detail::compile_block_program(
      lowered.graph,
      options.kernels != nullptr
          ? runtime::with_body_kernels(runtime::ExecutableKernels::reference(), *options.kernels,
                                       runtime::KernelSet::kReference)
          : runtime::ExecutableKernels::reference());
  std::vector<std::uint32_t> rank_of;
  for (const BlockTask& task : whole.tasks)
    rank_of.push_back(schedule.rank_of.at(task.application));
  TorchProgram program;
  std::vector<std::pair<std::string, std::string>> ranks;
  std::vector<std::vector<std::uint32_t>> groups;
  for (std::uint32_t r = 0; r < schedule.ranks(); ++r) {
    const RankProgram rp = runtime::detail::compile_rank_program(
        lowered.graph, whole, schedule, r, runtime::CollectiveUse::kAll,
        runtime::detail::SlotPieces::kWhole);
    if (r == 0) {
      for (const RankCollective& c : rp.collectives) groups.push_back(c.members);
    }
    TorchOptions rank_options = options;
    rank_options.target = schedule.rank_names[r];
    ranks.emplace_back(fmt::format("rank{}.py", r),
                       RankWriter(graph, lowered, whole, rp, rank_of, rank_options).write());
  }
  program.files.emplace_back("main.py", detail::torch_main(schedule.ranks(), groups, options));
  program.files.emplace_back("helpers.py", detail::torch_helpers());
  for (auto& f : ranks) program.files.push_back(std::move(f));
  return program;
}

std::vector<std::string> torch_kernels() {
  std::vector<std::string> names = detail::mapped_kernels();
  names.emplace_back(rewrite::kFusedKernel);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace tapestry::codegen
