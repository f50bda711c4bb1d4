// A placed plan as a standalone C++ program (codegen/cpp.h).
#include "tapestry/codegen/cpp.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <unordered_set>

#include "cpp_support.h"
#include "rank_order.h"
#include "runtime/block_program.h"
#include "runtime/rank_program.h"
#include "tapestry/rewrite/fused.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/tensor_map.h"
#include "tapestry/support/error.h"

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

// The names a rank's C++ function must not take: C++ keywords and what program.h declares (and
// its `rank<i>` functions and MPI's names, by prefix).
Names cpp_names() {
  return Names({"alignas",   "alignof",   "and",
                "asm",       "auto",      "bool",
                "break",     "case",      "catch",
                "char",      "class",     "const",
                "constexpr", "continue",  "default",
                "delete",    "do",        "double",
                "else",      "enum",      "explicit",
                "extern",    "false",     "float",
                "for",       "friend",    "goto",
                "if",        "inline",    "int",
                "long",      "mutable",   "namespace",
                "new",       "not",       "nullptr",
                "operator",  "or",        "private",
                "protected", "public",    "register",
                "return",    "short",     "signed",
                "sizeof",    "static",    "struct",
                "switch",    "template",  "this",
                "throw",     "true",      "try",
                "typedef",   "typename",  "union",
                "unsigned",  "using",     "virtual",
                "void",      "volatile",  "while",
                "xor",       "concept",   "requires",
                "co_await",  "co_return", "co_yield",
                "char8_t",   "std",       "program",
                "tapestry",  "box",       "ipf",
                "Tensor",    "Port",      "Operation",
                "Context",   "ctx",       "DType",
                "Monoid",    "View",      "ConstView",
                "Range",     "Point",     "IndexProjection",
                "main",      "nlohmann",  "MPI_Comm"},
               {"rank", "MPI"});
}

// A range as C++: box({start…}, {end…}).
std::string box_code(const Range& box) {
  return fmt::format("box({{{}}}, {{{}}})", fmt::join(box.start(), ", "),
                     fmt::join(box.end(), ", "));
}

std::string ipf_code(const IndexProjection& ipf) {
  const zspace::AffineMap& map = ipf.map();
  std::vector<std::int64_t> a;
  for (std::size_t k = 0; k < map.out_rank(); ++k) {
    for (std::size_t j = 0; j < map.in_rank(); ++j) a.push_back(map.at(k, j));
  }
  return fmt::format("ipf({}, {{{}}}, {{{}}}, {{{}}})", map.in_rank(), fmt::join(a, ", "),
                     fmt::join(map.offset(), ", "), fmt::join(ipf.shape(), ", "));
}

std::string_view element_type(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kFloat32:
      return "float";
    case ir::DType::kFloat64:
      return "double";
    case ir::DType::kInt32:
      return "std::int32_t";
    case ir::DType::kInt64:
      return "std::int64_t";
    case ir::DType::kBFloat16:
    case ir::DType::kFloat16:
    case ir::DType::kInt16:
      return "std::int16_t";
    case ir::DType::kBool:
    case ir::DType::kUInt8:
      return "std::uint8_t";
    case ir::DType::kInt8:
      return "std::int8_t";
  }
  return "std::byte";
}

std::string_view dtype_code(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kFloat32:
      return "DType::kFloat32";
    case ir::DType::kFloat64:
      return "DType::kFloat64";
    case ir::DType::kInt32:
      return "DType::kInt32";
    case ir::DType::kInt64:
      return "DType::kInt64";
    case ir::DType::kBFloat16:
      return "DType::kBFloat16";
    case ir::DType::kFloat16:
      return "DType::kFloat16";
    case ir::DType::kBool:
      return "DType::kBool";
    case ir::DType::kInt8:
      return "DType::kInt8";
    case ir::DType::kInt16:
      return "DType::kInt16";
    case ir::DType::kUInt8:
      return "DType::kUInt8";
  }
  return "DType::kFloat32";
}

std::string_view monoid_code(ir::Monoid m) {
  switch (m) {
    case ir::Monoid::kSum:
      return "Monoid::kSum";
    case ir::Monoid::kMax:
      return "Monoid::kMax";
    case ir::Monoid::kMin:
      return "Monoid::kMin";
    case ir::Monoid::kProd:
      return "Monoid::kProd";
  }
  return "Monoid::kSum";
}

using detail::cpp_string;

// A raw string literal holding `text`, with a delimiter that does not occur in it.
std::string raw_literal(const std::string& text) {
  std::string delimiter = "json";
  while (text.find(")" + delimiter + "\"") != std::string::npos) delimiter += "_";
  return fmt::format("R\"{}({}){}\"", delimiter, text, delimiter);
}

// One rank's rank<i>.cpp, line by line.
class RankWriter {
 public:
  RankWriter(const ir::Graph& graph, const rewrite::LowerResult& lowered, const BlockProgram& p,
             const RankProgram& rp, const std::vector<std::uint32_t>& rank_of,
             std::string rank_name, const CppOptions& options)
      : graph_(graph),
        lowered_(lowered),
        p_(p),
        rp_(rp),
        rank_of_(rank_of),
        rank_name_(std::move(rank_name)),
        options_(options) {}

  std::string write();

 private:
  // `text` indented two columns (each of its lines).
  void line(const std::string& text) {
    std::size_t start = 0;
    while (start <= text.size()) {
      std::size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      body_ += "  " + text.substr(start, end - start) + "\n";
      start = end + 1;
    }
  }
  void blank() { body_ += "\n"; }
  std::string tensor_name(std::uint32_t slot) const;
  const std::string& var(std::uint32_t slot) const;
  void emit_buffers();
  void emit_operations();
  void emit_task(std::uint32_t local);
  void emit_waits(std::uint32_t local);
  void emit_collective(std::uint32_t c);

  const ir::Graph& graph_;
  const rewrite::LowerResult& lowered_;
  const BlockProgram& p_;  // the whole program
  const RankProgram& rp_;
  const std::vector<std::uint32_t>& rank_of_;
  std::string rank_name_;
  const CppOptions& options_;
  Names names_ = cpp_names();
  std::map<std::uint32_t, std::string> vars_;  // local slot → its Tensor
  std::map<std::uint32_t, std::string> ops_;   // operation node index → its Operation
  std::vector<std::uint32_t> local_of_;        // whole task → local task (or UINT32_MAX)
  std::vector<char> no_op_;                    // by local task: a reduce a collective does
  std::set<std::uint32_t> waited_;             // messages waited for
  std::string body_;
};

std::string RankWriter::tensor_name(std::uint32_t slot) const {
  const ir::TensorId t = p_.slots[slot].tensor;
  const std::optional<ir::TensorId> original = lowered_.original(t);
  return original ? runtime::tensor_name(graph_, *original)
                  : runtime::tensor_name(lowered_.graph, t);
}

const std::string& RankWriter::var(std::uint32_t slot) const {
  const auto found = vars_.find(slot);
  if (found == vars_.end()) {
    throw Error(
        fmt::format("rank {}: tensor {} has no buffer (internal)", rp_.rank, tensor_name(slot)));
  }
  return found->second;
}

// One static array per tensor this rank touches, sized as the MPI executor's rank program lays
// it out (the rows it touches, every other dim whole; rank 0's outputs whole).
void RankWriter::emit_buffers() {
  line("// The buffers: one static array per tensor this rank reads, writes or receives, holding");
  line("// the rows it touches (every other dim whole), dense and row-major.");
  for (std::uint32_t s = 0; s < rp_.local.slots.size(); ++s) {
    const runtime::detail::BufferSlot& slot = rp_.local.slots[s];
    if (slot.range.size() == 0) continue;
    const std::string v = names_.make(tensor_name(s));
    const std::string data = names_.make(v + "_data");
    vars_[s] = v;
    const std::int64_t bytes = slot.bytes;
    line(fmt::format("// {}{}{}", tensor_name(s), range_text(slot.range),
                     slot.input    ? " (an input)"
                     : slot.output ? " (an output)"
                                   : ""));
    line(fmt::format("alignas({}) static {} {}[{}];", bytes >= (2 << 20) ? (2 << 20) : 64,
                     element_type(slot.dtype), data, slot.range.size()));
    line(fmt::format("static const Tensor {}({}, {}, {});", v, dtype_code(slot.dtype), data,
                     box_code(slot.range)));
  }
  blank();
}

// The operations of this rank's applications: kernel, params, index dims, reductions, IPFs.
void RankWriter::emit_operations() {
  line("// The operations: each kernel is looked up once among the fast kernels (the ones the");
  line(
      "// block executor calls); params, index dims, reductions and the ports' IPFs as constants.");
  for (std::uint32_t lt : rp_.local.order) {
    if (no_op_[lt] != 0) continue;
    const BlockTask& task = rp_.local.tasks[lt];
    const std::uint32_t op = task.operation.index();
    if (ops_.contains(op)) continue;
    const runtime::KernelCall& call = task.call;
    const std::string v = names_.make(std::string(call.operation) + "_op");
    ops_[op] = v;
    std::vector<std::string> names;
    for (const std::string& n : call.index_names) names.push_back(cpp_string(n));
    std::vector<std::string> reductions;
    for (const ir::Reduction& r : call.reductions) {
      reductions.push_back(fmt::format("{{{}, {}}}", cpp_string(r.dim), monoid_code(r.monoid)));
    }
    line(fmt::format("// {} ({})", call.operation, detail::kernel_text(call, "fused: ")));
    line(fmt::format("static const Operation {}(", v));
    line(fmt::format("    {}, {},", cpp_string(call.kernel), cpp_string(call.operation)));
    line(
        fmt::format("    {},", raw_literal(call.params != nullptr ? call.params->dump() : "null")));
    line(fmt::format("    {{{}}}, {{{}}},", fmt::join(names, ", "), fmt::join(reductions, ", ")));
    std::vector<std::string> ins, outs;
    for (const auto& e : call.inputs.entries())
      ins.push_back(fmt::format("{{{}, {}}}", cpp_string(e.name), ipf_code(*e.value.ipf)));
    for (const auto& e : call.outputs.entries())
      outs.push_back(fmt::format("{{{}, {}}}", cpp_string(e.name), ipf_code(*e.value.ipf)));
    line(fmt::format("    {{{}}},", fmt::join(ins, ",\n     ")));
    line(fmt::format("    {{{}}});", fmt::join(outs, ",\n     ")));
  }
  blank();
}

// Receives that local task `local` reads: waited for and unpacked before it runs.
void RankWriter::emit_waits(std::uint32_t local) {
  for (const runtime::detail::RankReceive& r : rp_.receives) {
    if (waited_.contains(r.message)) continue;
    if (std::find(r.consumers.begin(), r.consumers.end(), local) == r.consumers.end()) continue;
    const runtime::detail::RankMessageInfo& m = rp_.messages[r.message];
    line(fmt::format("ctx.wait({}, {});  // {}{} from rank {}", r.message + 1, var(m.slot),
                     tensor_name(m.slot), range_text(m.box), m.from));
    waited_.insert(r.message);
  }
}

void RankWriter::emit_task(std::uint32_t local) {
  const BlockTask& task = rp_.local.tasks[local];
  const runtime::KernelCall& call = task.call;
  line(fmt::format("// {} ({}): {}", call.operation, detail::kernel_text(call, ""),
                   detail::index_text(call)));
  if (no_op_[local] != 0) {
    line("// (its sum arrived by the collective above)");
    blank();
    return;
  }
  emit_waits(local);
  std::vector<std::string> ins, outs;
  std::size_t i = 0;
  for (const auto& e : call.inputs.entries()) {
    ins.push_back(
        fmt::format("{}.view({})", var(task.inputs[i++].slot), box_code(e.value.view.box())));
  }
  i = 0;
  for (const auto& e : call.outputs.entries()) {
    outs.push_back(
        fmt::format("{}.view({})", var(task.outputs[i++].slot), box_code(e.value.view.box())));
  }
  line(fmt::format("{}.run({},", ops_.at(task.operation.index()), box_code(call.index)));
  line(fmt::format("    {{{}}},", fmt::join(ins, ",\n     ")));
  line(fmt::format("    {{{}}});", fmt::join(outs, ",\n     ")));
  blank();
}

void RankWriter::emit_collective(std::uint32_t index) {
  const RankCollective& c = rp_.collectives[index];
  const auto at = std::find(c.members.begin(), c.members.end(), rp_.rank);
  if (at == c.members.end()) return;
  const auto member = static_cast<std::uint32_t>(at - c.members.begin());
  const runtime::detail::RankCollectivePart* part = nullptr;
  for (const auto& p : rp_.parts) {
    if (p.collective == index) part = &p;
  }
  line(fmt::format("// {}: {} over ranks {}{}", c.what,
                   runtime::detail::collective_kind_name(c.kind), fmt::join(c.members, ", "),
                   c.kind == CollectiveKind::kAllgather
                       ? ""
                       : fmt::format(" of {}'s blocks", tensor_name(c.source_slot))));
  switch (c.kind) {
    case CollectiveKind::kReduce:
    case CollectiveKind::kAllreduce: {
      const bool receives = c.kind == CollectiveKind::kAllreduce || c.root == rp_.rank;
      std::vector<std::string> copies;
      if (c.root == rp_.rank) copies.push_back(box_code(c.result_box));
      if (part != nullptr) {
        for (const auto& r : part->arrivals) {
          const auto& m = rp_.messages[r.message];
          if (m.slot == c.result_slot) copies.push_back(box_code(m.box));
        }
      }
      const auto root = std::find(c.members.begin(), c.members.end(), c.root) - c.members.begin();
      line(fmt::format("ctx.reduce({}, {}, {}, {}, {}, {}, {{{}}});", index, var(c.source_slot),
                       box_code(c.boxes[member]), c.kind == CollectiveKind::kAllreduce ? -1 : root,
                       receives ? "&" + var(c.result_slot) : std::string("nullptr"),
                       box_code(c.result_box), fmt::join(copies, ", ")));
      break;
    }
    case CollectiveKind::kReduceScatter: {
      std::vector<std::string> slices;
      for (const Range& s : c.result_boxes) slices.push_back(box_code(s));
      line(fmt::format("ctx.reduce_scatter({}, {}, {}, {{{}}}, {}, {});", index, var(c.source_slot),
                       box_code(c.boxes[member]), fmt::join(slices, ", "), member,
                       var(c.result_slot)));
      break;
    }
    case CollectiveKind::kAllgather: {
      std::vector<std::string> boxes;
      for (const Range& b : c.boxes) boxes.push_back(box_code(b));
      line(fmt::format("ctx.all_gather({}, {}, {{{}}}, {});", index, var(c.source_slot),
                       fmt::join(boxes, ", "), member));
      break;
    }
  }
}

std::string RankWriter::write() {
  local_of_.assign(p_.tasks.size(), UINT32_MAX);
  for (std::uint32_t lt = 0; lt < rp_.whole_task.size(); ++lt) local_of_[rp_.whole_task[lt]] = lt;
  no_op_.assign(rp_.local.tasks.size(), 0);
  for (const RankCollective& c : rp_.collectives) {
    if (c.reduce_task != UINT32_MAX && c.root == rp_.rank) no_op_[local_of_[c.reduce_task]] = 1;
    for (std::size_t i = 0; i < c.reduce_tasks.size(); ++i) {
      if (c.members[i] == rp_.rank) no_op_[local_of_[c.reduce_tasks[i]]] = 1;
    }
  }
  emit_buffers();
  emit_operations();

  bool any_input = false;
  for (std::uint32_t s = 0; s < rp_.needed_inputs.size(); ++s)
    any_input |= rp_.needed_inputs[s] != 0;
  if (any_input) {
    line("// The boxes of the inputs this rank reads (once: the buffers keep them between runs).");
    line("if (ctx.first) {");
    for (std::uint32_t s = 0; s < rp_.needed_inputs.size(); ++s) {
      if (rp_.needed_inputs[s] == 0) continue;
      std::string file = tensor_name(s);
      std::replace(file.begin(), file.end(), '/', '_');
      line(fmt::format("  ctx.load({}, {}, {});", cpp_string(file + ".npy"),
                       box_code(p_.slots[s].range), var(s)));
    }
    line("}");
    blank();
  }
  if (!rp_.receives.empty()) {
    line("// Every receive posted up front (message i travels with MPI tag i).");
    for (const runtime::detail::RankReceive& r : rp_.receives) {
      const auto& m = rp_.messages[r.message];
      line(fmt::format("ctx.receive({}, {}, {}, {});  // {}{}{}", r.message + 1, box_code(m.box),
                       dtype_code(p_.slots[m.slot].dtype), m.from, tensor_name(m.slot),
                       range_text(m.box), m.gather ? " (an output, gathered)" : ""));
    }
    blank();
  }
  // Where each message and collective goes in the global order: right after its (last) producer.
  const detail::GlobalPlaces places = detail::global_places(p_, rp_);
  line("// The applications in the plan's order; each message is sent right after its producer,");
  line("// each collective after its last contribution, in the same order on every rank.");
  blank();
  for (std::uint32_t t : p_.order) {
    if (rank_of_[t] == rp_.rank) emit_task(local_of_[t]);
    bool any = false;
    for (std::uint32_t m : places.messages_after[t]) {
      const auto& msg = rp_.messages[m];
      if (msg.from != rp_.rank) continue;
      line(fmt::format("ctx.send({}, {}, {}, {});  // {}{} to rank {}{}", m + 1, var(msg.slot),
                       box_code(msg.box), msg.to, tensor_name(msg.slot), range_text(msg.box),
                       msg.to, msg.gather ? " (an output, gathered)" : ""));
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
  for (const runtime::detail::RankReceive& r : rp_.receives) {
    if (waited_.contains(r.message)) continue;
    const auto& m = rp_.messages[r.message];
    line(fmt::format("ctx.wait({}, {});  // {}{} from rank {}", r.message + 1, var(m.slot),
                     tensor_name(m.slot), range_text(m.box), m.from));
    waited_.insert(r.message);
  }
  if (rp_.ranks > 1) line("ctx.finish();  // every send delivered");
  if (rp_.rank == 0) {
    std::vector<std::string> outs;
    for (std::uint32_t s = 0; s < p_.slots.size(); ++s) {
      if (!p_.slots[s].output) continue;
      std::string file = tensor_name(s);
      std::replace(file.begin(), file.end(), '/', '_');
      outs.push_back(fmt::format("{{{}, &{}}}", cpp_string(file), var(s)));
    }
    line(fmt::format("if (ctx.last) ctx.write_outputs({{{}}});", fmt::join(outs, ", ")));
  }

  std::string header = fmt::format("// Rank {} of {} ({}): {} of the {} applications.\n", rp_.rank,
                                   rp_.ranks, rank_name_, rp_.local.tasks.size(), p_.tasks.size());
  header += detail::commented("//", fmt::format("Generated by `{}`.", options_.command));
  header += detail::commented("//", fmt::format("Strategy: {}", options_.strategy));
  header += fmt::format(
      "#include \"program.h\"\n\n"
      "namespace program {{\n\n"
      "void rank{}(Context& ctx) {{\n",
      rp_.rank);
  return header + body_ + "}\n\n}  // namespace program\n";
}

}  // namespace

CppProgram generate_cpp(const ir::Graph& graph, const rewrite::LowerResult& lowered,
                        const runtime::RankSchedule& schedule, const CppOptions& options) {
  // The fast kernels, and the bodies of the kernel files' kernels the graph calls; any other
  // kernel (a plugin's function) is an Error naming it — the program links only the library.
  std::vector<runtime::BodySource> bodies;
  runtime::ExecutableKernels kernels = runtime::fast_kernels();
  for (const ir::OperationId id : lowered.graph.operations()) {
    std::string kernel(lowered.graph.operation(id).kernel());
    if (kernels.find(kernel) != nullptr) continue;
    if (kernel.starts_with("op:")) kernel.erase(0, 3);
    const metakernel::Metakernel* k =
        options.kernels != nullptr ? options.kernels->find(kernel) : nullptr;
    if (k == nullptr || !k->body) {
      throw Error(fmt::format(
          "operation '{}': kernel '{}' is {} — a generated program links only the kernel "
          "library and carries kernel files' kernels by their `body:`",
          lowered.graph.display_name(id), kernel,
          k != nullptr ? "a kernel file's without a body (a plugin's function?)"
                       : "neither built in nor a kernel file's"));
    }
    bodies.push_back(runtime::body_source(*k));
    kernels.add(kernel, runtime::body_kernel(bodies.back(), runtime::BodyEvaluation::kFast));
  }
  const BlockProgram whole = runtime::detail::compile_block_program(lowered.graph, kernels);
  std::vector<std::uint32_t> rank_of;
  for (const BlockTask& task : whole.tasks)
    rank_of.push_back(schedule.rank_of.at(task.application));
  std::vector<std::pair<std::string, std::string>> ranks;
  std::vector<std::vector<std::uint32_t>> groups;
  for (std::uint32_t r = 0; r < schedule.ranks(); ++r) {
    const RankProgram rp = runtime::detail::compile_rank_program(
        lowered.graph, whole, schedule, r, runtime::CollectiveUse::kExact,
        runtime::detail::SlotPieces::kWhole);
    if (r == 0) {
      for (const RankCollective& c : rp.collectives) groups.push_back(c.members);
    }
    ranks.emplace_back(
        fmt::format("rank{}.cpp", r),
        RankWriter(graph, lowered, whole, rp, rank_of, schedule.rank_names[r], options).write());
  }
  CppProgram program;
  program.files.emplace_back("CMakeLists.txt", detail::cpp_cmake(schedule.ranks(), options));
  program.files.emplace_back("program.h", detail::cpp_program_header(schedule.ranks()));
  program.files.emplace_back("main.cpp", detail::cpp_main(schedule.ranks()));
  program.files.emplace_back("ranks.cpp",
                             detail::cpp_ranks(schedule.ranks(), groups, bodies, options));
  for (auto& f : ranks) program.files.push_back(std::move(f));
  return program;
}

}  // namespace tapestry::codegen
