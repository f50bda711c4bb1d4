#include "derive_operation.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>

#include "mixed_precision.h"
#include "spec_transforms.h"
#include "tapestry/metakernel/apply.h"
#include "tapestry/metakernel/signature.h"
#include "tapestry/rewrite/fused.h"
#include "tapestry/rewrite/plan.h"
#include "tapestry/support/error.h"

namespace tapestry::rewrite::detail {

namespace {

using metakernel::TensorType;
using nlohmann::json;

// One input of a kernel use: port name, tensor (possibly a fused intermediate), type, and the
// label the kernel's messages name it by.
struct Input {
  std::string name;
  ir::TensorId tensor;
  TensorType type;
  std::string label;
};

// The recorded IPFs of a use's ports, by port name.
using RecordedIpfs = std::map<std::string, zspace::IndexProjection, std::less<>>;

// One output of a use: port name, tensor, and where the tensor sits — `start` for a tensor of
// the graph, else (an intermediate of a fused operation) where the IPF its stage records puts it.
struct Output {
  std::string name;
  ir::TensorId tensor;
  std::optional<zspace::Point> start;
  std::optional<zspace::IndexProjection> recorded;
};

// One use of a kernel, as the graph records it: an operation, or a stage of a fused one.
struct Use {
  std::string kernel;
  std::string label;
  json params;
  std::vector<Input> inputs;
  std::vector<Output> outputs;
  // The recorded index and input IPFs, which show the form (an operation, a first stage).
  std::optional<zspace::Range> index;
  RecordedIpfs input_ipfs;
  // The recorded index names (d0, d1, … when the operation names none).
  std::vector<std::string> index_names;
};

template <typename Ports, typename NameOf>
std::string port_list(const Ports& ports, NameOf name_of) {
  std::vector<std::string> names;
  for (const auto& p : ports) names.push_back(name_of(p));
  return fmt::format("({})", fmt::join(names, ", "));
}

// evaluate_signature on `use`, its inputs matched to the kernel's ports by name.
metakernel::Signature evaluate(const metakernel::SignatureRegistry& signatures, const Use& use) {
  const metakernel::Metakernel* kernel = signatures.find(use.kernel);
  if (kernel == nullptr) throw Error(fmt::format("unknown kernel '{}'", use.kernel));
  std::vector<metakernel::Argument> args;
  for (const metakernel::InputSpec& spec : kernel->inputs) {
    auto it = std::find_if(use.inputs.begin(), use.inputs.end(),
                           [&](const Input& in) { return in.name == spec.name; });
    if (it == use.inputs.end() || use.inputs.size() != kernel->inputs.size()) {
      throw Error(fmt::format(
          "{} takes the inputs {}, the operation has {}", kernel->name,
          port_list(kernel->inputs, [](const metakernel::InputSpec& s) { return s.name; }),
          port_list(use.inputs, [](const Input& in) { return in.name; })));
    }
    args.push_back({it->label, it->type});
  }
  read_as_one_precision(args);  // float32 intermediates of a 16-bit graph (mixed_precision.h)
  return metakernel::evaluate_signature(*kernel, args,
                                        use.params.is_null() ? json::object() : use.params);
}

// The signature as an operation of `use` at the signature's own index (the origin). Ports are
// in name order, as spec_of lists them.
DerivedOperation from_signature(const metakernel::Signature& sig, const Use& use) {
  DerivedOperation d;
  OpSpec& s = d.spec;
  s.label = use.label;
  s.kernel = sig.kernel;
  s.params = use.params;
  s.index = sig.index();
  s.index_names = sig.dim_names();
  for (const metakernel::IndexDim& dim : sig.index_dims) {
    if (dim.reduction) s.reductions.push_back({dim.name, *dim.reduction});
  }
  std::sort(s.reductions.begin(), s.reductions.end(),
            [](const ir::Reduction& a, const ir::Reduction& b) { return a.dim < b.dim; });
  for (const metakernel::Port& port : sig.inputs) {
    for (const Input& in : use.inputs) {
      if (in.name == port.name) s.inputs.push_back({port.name, in.tensor, port.ipf});
    }
  }
  std::vector<metakernel::Port> outputs = sig.outputs;
  const auto by_name = [](const auto& a, const auto& b) { return a.name < b.name; };
  std::sort(s.inputs.begin(), s.inputs.end(), by_name);
  std::sort(outputs.begin(), outputs.end(), by_name);
  for (const metakernel::Port& port : outputs) {
    auto it = std::find_if(use.outputs.begin(), use.outputs.end(),
                           [&](const Output& out) { return out.name == port.name; });
    if (it == use.outputs.end() || use.outputs.size() != sig.outputs.size()) {
      throw Error(
          fmt::format("{} has the outputs {}, the operation has {}", sig.kernel,
                      port_list(sig.outputs, [](const metakernel::Port& p) { return p.name; }),
                      port_list(use.outputs, [](const Output& out) { return out.name; })));
    }
    s.outputs.push_back({port.name, it->tensor, port.ipf});
    d.output_types.push_back(port.type);
  }
  d.form = "kernel";
  return d;
}

// Records one more rewrite form in `d.form` ("kernel" until the first).
void add_form(DerivedOperation& d, const std::string& form) {
  d.form = d.form == "kernel" ? form : d.form + ", " + form;
}

// Moves output `j` (IPF and type) so that its tensor starts at `start`.
void place_output(DerivedOperation& d, std::size_t j, const zspace::Point& start) {
  TensorType& type = d.output_types[j];
  if (start.rank() != type.rank()) return;  // the comparison reports the rank
  const zspace::Point shift = start - type.range.start();
  d.spec.outputs[j].ipf = d.spec.outputs[j].ipf.translate(shift);
  type.range = type.range.translate(shift);
}

// Restricts reduction dims to the recorded sub-ranges (split-reduction's uneven blocks).
void restrict_partial(DerivedOperation& d, const zspace::Range& recorded) {
  if (recorded.rank() != d.spec.index.rank()) return;
  for (const ir::Reduction& r : d.spec.reductions) {
    const std::size_t k = *d.spec.dim(r.dim);
    const zspace::Range& index = d.spec.index;
    const std::int64_t lo = recorded.start()[k], hi = recorded.end()[k];
    if (lo == index.start()[k] && hi == index.end()[k]) continue;
    if (lo < index.start()[k] || hi > index.end()[k] || lo >= hi) continue;
    if (!d.whole_index) d.whole_index = index;
    d.spec.index = index.with_dim(k, lo, hi);
    d.partial = r.monoid;
    add_form(d, fmt::format("partial over {} [{}:{}]", r.dim, lo, hi));
  }
}

// Every form of `d` whose index has the rank of `recorded` (see the header): `blocks` leading
// block dims peeled from the earliest split (recorded position blocks-1) on, each from any
// reduction dim the recorded extents fit; then the sub-ranges.
void candidate_forms(const DerivedOperation& d, const zspace::Range& recorded, std::size_t blocks,
                     std::vector<DerivedOperation>& out) {
  if (blocks == 0) {
    out.push_back(d);
    restrict_partial(out.back(), recorded);
    return;
  }
  const std::size_t i = blocks - 1;
  const std::int64_t p = recorded.extent(i);
  for (const ir::Reduction& r : d.spec.reductions) {
    const std::size_t k = *d.spec.dim(r.dim);
    const std::int64_t extent = d.spec.index.extent(k);
    if (p < 1 || extent % p != 0 || recorded.extent(i + 1 + k) != extent / p ||
        recorded.start()[i + 1 + k] != d.spec.index.start()[k]) {
      continue;
    }
    DerivedOperation c = d;
    c.spec = split_exact(d.spec, k, p);
    for (TensorType& t : c.output_types) {
      t.range = zspace::Range::of_shape(zspace::Point{p}).product(t.range);
    }
    add_form(c, fmt::format("block split of {} into {}", r.dim, p));
    candidate_forms(c, recorded, blocks - 1, out);
  }
}

bool inputs_match(const OpSpec& spec, const RecordedIpfs& recorded) {
  for (const Port& in : spec.inputs) {
    auto it = recorded.find(in.name);
    if (it == recorded.end() || !(it->second == in.ipf)) return false;
  }
  return true;
}

// Puts `d` in the form the recorded index (and input IPFs) show: the first candidate whose index
// and input IPFs are the recorded ones, else the first candidate (the comparison then reports
// what differs), else `d` unchanged.
void reconcile(DerivedOperation& d, const zspace::Range& recorded, const RecordedIpfs& ipfs) {
  if (recorded.rank() < d.spec.index.rank()) return;
  std::vector<DerivedOperation> forms;
  candidate_forms(d, recorded, recorded.rank() - d.spec.index.rank(), forms);
  for (DerivedOperation& f : forms) {
    if (f.spec.index == recorded && inputs_match(f.spec, ipfs)) {
      d = std::move(f);
      return;
    }
  }
  if (!forms.empty()) d = std::move(forms.front());
}

// `d` with the index dims named d0, d1, … (what an operation that names none has).
DerivedOperation anonymous(DerivedOperation d) {
  std::vector<std::string> names;
  for (std::size_t k = 0; k < d.spec.index_names.size(); ++k)
    names.push_back(fmt::format("d{}", k));
  for (ir::Reduction& r : d.spec.reductions) r.dim = names[*d.spec.dim(r.dim)];
  std::sort(d.spec.reductions.begin(), d.spec.reductions.end(),
            [](const ir::Reduction& a, const ir::Reduction& b) { return a.dim < b.dim; });
  d.spec.index_names = std::move(names);
  return d;
}

// Places every output of `d` where `use` says its tensor sits.
void place_outputs(DerivedOperation& d, const Use& use) {
  for (std::size_t j = 0; j < d.spec.outputs.size(); ++j) {
    const Port& port = d.spec.outputs[j];
    for (const Output& out : use.outputs) {
      if (out.name != port.name) continue;
      if (out.start) {
        place_output(d, j, *out.start);
      } else if (out.recorded && out.recorded->tensor_rank() == port.ipf.tensor_rank()) {
        place_output(d, j,
                     d.output_types[j].range.start() +
                         (out.recorded->map().offset() - port.ipf.map().offset()));
      }
    }
  }
}

class Deriver {
 public:
  Deriver(const ir::Graph& graph, const metakernel::SignatureRegistry& signatures)
      : graph_(graph), signatures_(signatures) {}

  DerivedOperation derive(const Use& use) {
    return use.kernel == kFusedKernel ? derive_fused(use) : derive_kernel(use);
  }

  // The use an operation of the graph is.
  Use operation_use(ir::OperationId op) const {
    const ir::OperationView view = graph_.operation(op);
    Use use{
        view.kernel(),     operation_name(graph_, op), view.params(), {}, {}, view.ipf_index(), {},
        view.index_names()};
    for (const auto& e : view.inputs().entries()) {
      const ir::TensorId t = e.value.tensor;
      use.inputs.push_back({e.name, t, metakernel::tensor_type(graph_, t), graph_.display_name(t)});
    }
    for (const auto& e : view.outputs().entries()) {
      const ir::TensorId t = e.value.tensor;
      use.outputs.push_back({e.name, t, graph_.tensor(t).range().start(), std::nullopt});
    }
    if (const ir::IpfSignature* sig = view.ipf_signature()) {
      for (const auto& e : sig->inputs.entries()) use.input_ipfs.emplace(e.name, e.value);
    }
    return use;
  }

 private:
  // The signature in the form `use` has. An operation whose index dims are anonymous (d0, d1, …:
  // it names none) is derived with anonymous dims, as the rewrites then saw it.
  DerivedOperation derive_kernel(const Use& use) const {
    const DerivedOperation named = from_signature(evaluate(signatures_, use), use);
    DerivedOperation d = in_form(named, use);
    if (use.index_names != d.spec.index_names) {
      DerivedOperation a = in_form(anonymous(named), use);
      if (a.spec.index_names == use.index_names) return a;
    }
    return d;
  }

  static DerivedOperation in_form(DerivedOperation d, const Use& use) {
    if (use.index) reconcile(d, *use.index, use.input_ipfs);
    place_outputs(d, use);
    return d;
  }

  // The stages derived in turn, the chain fused link by link as fuse-elementwise made it.
  DerivedOperation derive_fused(const Use& use) {
    const std::vector<FusedStage> stages = fused_stages(use.params);
    if (stages.size() < 2) throw Error("a fused operation has at least two stages");
    DerivedOperation chain;
    std::vector<std::string> forms;
    std::optional<Input> previous;  // the intermediate the stage before writes
    for (std::size_t i = 0; i < stages.size(); ++i) {
      DerivedOperation s;
      try {
        s = derive(stage_use(use, stages, i, previous));
      } catch (const Error& e) {
        throw Error(fmt::format("stage {} ({}): {}", i, stages[i].label, e.what()));
      }
      forms.push_back(s.form == "kernel" ? s.spec.kernel
                                         : fmt::format("{} ({})", s.spec.kernel, s.form));
      if (i == 0) {
        chain = s;
      } else {
        chain.spec = fuse(std::move(chain.spec), s.spec, previous->tensor, previous->type.dtype);
        chain.output_types = s.output_types;
      }
      previous = Input{"", s.spec.outputs[0].tensor, s.output_types[0], ""};
    }
    chain.form = fmt::format("fused: {}", fmt::join(forms, ", "));
    return chain;
  }

  // The use of stage `i` of the fused `use`; `previous` is the intermediate the stage before
  // writes (none for stage 0).
  Use stage_use(const Use& use, const std::vector<FusedStage>& stages, std::size_t i,
                const std::optional<Input>& previous) {
    const FusedStage& stage = stages[i];
    Use s{stage.kernel, stage.label, stage.params, {}, {}, std::nullopt, {}, stage.index_names};
    int reads_previous = 0;
    for (const FusedPort& port : stage.inputs) {
      if (port.source.empty()) {
        if (!previous) throw Error("the first stage reads a previous stage");
        ++reads_previous;
        s.inputs.push_back({port.name, previous->tensor, previous->type, port.name});
        continue;
      }
      auto it = std::find_if(use.inputs.begin(), use.inputs.end(),
                             [&](const Input& in) { return in.name == port.source; });
      if (it == use.inputs.end()) {
        throw Error(fmt::format("input '{}' names '{}', which is not an input of the operation",
                                port.name, port.source));
      }
      s.inputs.push_back({port.name, it->tensor, it->type, it->label});
    }
    if (i > 0 && reads_previous != 1) {
      throw Error(
          fmt::format("reads the previous stage's output {} times, not once", reads_previous));
    }
    const bool last = i + 1 == stages.size();
    if (!last && stage.outputs.size() != 1) {
      throw Error(
          fmt::format("is not the last stage but has {} outputs, not one", stage.outputs.size()));
    }
    for (const FusedPort& port : stage.outputs) {
      if (!last) {
        s.outputs.push_back({port.name, next_intermediate(), std::nullopt, port.ipf});
        continue;
      }
      auto it = std::find_if(use.outputs.begin(), use.outputs.end(),
                             [&](const Output& out) { return out.name == port.source; });
      if (it == use.outputs.end()) {
        throw Error(fmt::format("output '{}' names '{}', which is not an output of the operation",
                                port.name, port.source));
      }
      s.outputs.push_back({port.name, it->tensor, it->start, port.ipf});
    }
    if (i == 0) {
      s.index = use.index;
      for (const FusedPort& port : stage.inputs) s.input_ipfs.emplace(port.name, port.ipf);
    }
    return s;
  }

  // An intermediate has no tensor in the graph: an id past the graph's end stands for it.
  ir::TensorId next_intermediate() {
    return ir::TensorId(ir::NodeId(static_cast<std::uint32_t>(graph_.size() + intermediates_++)));
  }

  const ir::Graph& graph_;
  const metakernel::SignatureRegistry& signatures_;
  std::size_t intermediates_ = 0;
};

}  // namespace

DerivedOperation derive_operation(const ir::Graph& graph, ir::OperationId op,
                                  const metakernel::SignatureRegistry& signatures) {
  Deriver deriver(graph, signatures);
  return deriver.derive(deriver.operation_use(op));
}

}  // namespace tapestry::rewrite::detail
