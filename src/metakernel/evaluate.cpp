// evaluate_signature: the metakernel evaluator. The steps, in order:
//   1. argument count;  2. parameters;  3. input dtypes and shapes (bindings);
//   4. a C++ hook, if the kernel has one, computes the rest; otherwise
//   5. lets, 6. checks, 7. output types, 8. index and reductions, 9. IPFs;
//   10. a self-check that every IPF stays inside its tensor (catches kernel-file mistakes).
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "bindings.h"
#include "tapestry/ir/dtype.h"
#include "tapestry/metakernel/hooks.h"
#include "tapestry/support/assert.h"
#include "tapestry/zspace/checked.h"
#include "tapestry/zspace/format.h"

namespace tapestry::metakernel {

namespace detail {

namespace {

void check_arg_count(const Bindings& b) {
  if (b.args.size() == b.kernel.inputs.size()) return;
  std::vector<std::string> names;
  for (const InputSpec& in : b.kernel.inputs) names.push_back(in.name);
  b.fail("expected {} input{} ({}), got {}", names.size(), names.size() == 1 ? "" : "s",
         fmt::join(names, ", "), b.args.size());
}

void reject_active_sugar(const Bindings& b) {
  for (const ParamSpec& spec : b.kernel.params) {
    if (spec.sugar && spec.default_value && b.params.at(spec.name) != *spec.default_value) {
      b.fail(
          "parameter {}={} is expanded by the kernel's sugar (apply it through the builder or "
          "a .tap file)",
          spec.name, b.params.at(spec.name).dump());
    }
  }
}

void evaluate_lets(Bindings& b) {
  for (const LetSpec& let : b.kernel.lets) {
    b.dims[let.name] = DimBinding{let.value.evaluate(b.scalar_env()), kNoInput, 0};
  }
}

// "{h}" in a message becomes the size of $h, the value of param h, or the label of input h.
std::string render_message(const Bindings& b, const std::string& message) {
  std::string out;
  for (std::size_t i = 0; i < message.size(); ++i) {
    const std::size_t close = message.find('}', i);
    if (message[i] != '{' || close == std::string::npos) {
      out += message[i];
      continue;
    }
    const std::string name = message.substr(i + 1, close - i - 1);
    if (auto d = b.dims.find(name); d != b.dims.end()) {
      out += fmt::format("{}", d->second.size);
    } else if (b.params.contains(name)) {
      const nlohmann::json& v = b.params.at(name);
      out += v.is_string() ? v.get<std::string>() : v.dump();
    } else if (const InputSpec* in = b.kernel.find_input(name)) {
      out += b.label(static_cast<std::size_t>(in - b.kernel.inputs.data()));
    } else {
      out += message.substr(i, close - i + 1);
    }
    i = close;
  }
  return out;
}

void run_checks(const Bindings& b) {
  for (const CheckSpec& check : b.kernel.checks) {
    if (check.condition.evaluate(b.scalar_env()) != 0) continue;
    if (!check.message.empty()) b.fail("{}", render_message(b, check.message));
    b.fail("check failed: {}", check.condition.to_string());
  }
}

DType output_dtype(const Bindings& b, const DTypeSpec& spec) {
  if (spec.fixed) return *spec.fixed;
  if (!spec.param.empty()) {  // a str param with dtype choices, resolved against them already
    const std::optional<DType> named =
        ir::parse_tap_dtype(b.params.at(spec.param).get<std::string>());
    TAPESTRY_ASSERT(named.has_value(), "kernel_check lets only dtype choices through");
    return *named;
  }
  return b.types.at(spec.var);  // the loader ensures an input binds every output type variable
}

zspace::Point output_start(const Bindings& b, const OutputSpec& out, std::size_t rank) {
  std::vector<std::int64_t> start(rank, 0);
  if (!out.start) return zspace::Point(start);
  const InputSpec* like = b.kernel.find_input(out.start->like);
  const TensorType& like_type =
      b.args[static_cast<std::size_t>(like - b.kernel.inputs.data())].type;
  if (like_type.rank() != rank || out.start->shift.size() > rank) {
    b.fail("output {} cannot start like {}: ranks differ ({} vs {})", out.name, like->name, rank,
           like_type.rank());
  }
  const std::size_t pad = rank - out.start->shift.size();
  for (std::size_t d = 0; d < rank; ++d) {
    start[d] = like_type.range.start()[d];
    if (d >= pad) {
      start[d] =
          zspace::checked_add(start[d], out.start->shift[d - pad].expr->evaluate(b.scalar_env()));
    }
  }
  return zspace::Point(start);
}

TensorType output_type(const Bindings& b, const OutputSpec& out) {
  std::vector<std::int64_t> shape;
  for (const ListEntry& e : out.shape) {
    if (e.kind == ListEntry::Kind::kGroup) {
      const std::vector<std::int64_t>& sizes = b.groups.at(e.group).sizes;
      shape.insert(shape.end(), sizes.begin(), sizes.end());
      continue;
    }
    const std::int64_t size = e.expr->evaluate(b.scalar_env());
    if (size < 0) {
      b.fail("output {} would have size {} in dim {} ({})", out.name, size, shape.size(),
             e.expr->to_string());
    }
    shape.push_back(size);
  }
  const zspace::Point start = output_start(b, out, shape.size());
  return TensorType{output_dtype(b, out.dtype),
                    zspace::Range::of_start_shape(start, zspace::Point(shape))};
}

// Index dims from the index list; a group of n > 1 dims is named g0 .. g{n-1}, of one dim g.
IndexLayout index_layout(const Bindings& b) {
  IndexLayout layout;
  std::set<std::string> seen;
  auto add = [&](std::string name, std::int64_t size) {
    if (!seen.insert(name).second) b.fail("index dimension name {} is used twice", name);
    layout.dims.push_back(IndexDim{std::move(name), size, std::nullopt});
  };
  for (const ListEntry& e : b.kernel.index) {
    const std::size_t first = layout.dims.size();
    if (e.kind == ListEntry::Kind::kGroup) {
      const std::vector<std::int64_t>& sizes = b.groups.at(e.group).sizes;
      for (std::size_t k = 0; k < sizes.size(); ++k) {
        add(sizes.size() == 1 ? e.group : fmt::format("{}{}", e.group, k), sizes[k]);
      }
    } else {
      add(e.dim_name(), b.dims.at(e.dim_name()).size);
    }
    layout.entries[e.dim_name()] = {first, layout.dims.size() - first};
  }
  return layout;
}

void mark_reductions(const Bindings& b, IndexLayout& layout) {
  for (const ReductionSpec& r : b.kernel.reductions) {
    const Monoid monoid =
        r.monoid ? *r.monoid : *parse_monoid(b.params.at(r.param).get<std::string>());
    const auto [first, count] = layout.entries.at(r.dim);
    for (std::size_t c = first; c < first + count; ++c) layout.dims[c].reduction = monoid;
  }
}

// A reduction over an empty range (`linear` with 0 input features) would give every output
// cell the monoid's identity, but no application would ever run to write it (the index is
// empty): refused here, with the dim, rather than leaving the result unwritten.
void reject_empty_reductions(const Bindings& b, const Signature& sig) {
  bool outputs_empty = true;
  for (const Port& p : sig.outputs) outputs_empty = outputs_empty && p.type.range.is_empty();
  if (outputs_empty) return;
  for (const IndexDim& d : sig.index_dims) {
    if (d.reduction && d.size == 0) {
      b.fail(
          "the reduction dimension {} is empty (extent 0); reducing over nothing is not "
          "supported",
          d.name);
    }
  }
}

void self_check(const Bindings& b, const Signature& sig) {
  const zspace::Range index = sig.index();
  if (index.is_empty()) return;
  const std::string where = b.kernel.file ? " (" + b.kernel.file->name() + ")" : "";
  for (const Port& p : sig.inputs) {
    const zspace::Range sel = p.ipf.apply(index);
    if (!p.type.range.contains(sel)) {
      b.fail("kernel definition error{}: the IPF of {} selects {} outside its range {}", where,
             p.name, sel, p.type.range);
    }
  }
  for (const Port& p : sig.outputs) {
    const zspace::Range sel = p.ipf.apply(index);
    if (sel != p.type.range) {
      b.fail("kernel definition error{}: the IPF of output {} covers {}, not its range {}", where,
             p.name, sel, p.type.range);
    }
  }
}

}  // namespace

Signature evaluate_template(Bindings& b) {
  evaluate_lets(b);
  run_checks(b);
  Signature sig;
  for (const OutputSpec& out : b.kernel.outputs)
    sig.outputs.push_back(Port{out.name, output_type(b, out), {}});
  IndexLayout layout = index_layout(b);
  mark_reductions(b, layout);
  for (std::size_t i = 0; i < b.kernel.inputs.size(); ++i) {
    const std::string& name = b.kernel.inputs[i].name;
    sig.inputs.push_back(Port{name, b.args[i].type, build_ipf(b, layout, name, b.args[i].type, i)});
  }
  for (Port& out : sig.outputs) out.ipf = build_ipf(b, layout, out.name, out.type, kNoInput);
  sig.index_dims = std::move(layout.dims);
  return sig;
}

}  // namespace detail

Signature evaluate_signature(const Metakernel& kernel, std::span<const Argument> args,
                             const nlohmann::json& params) {
  detail::Bindings b(kernel, args);
  detail::check_arg_count(b);
  detail::resolve_params(b, params);
  detail::reject_active_sugar(b);
  detail::bind_inputs(b);
  detail::resolve_size_defaults(b);
  Signature sig;
  if (!kernel.hook.empty()) {
    const Hook* hook = find_hook(kernel.hook);
    if (!hook) b.fail("unknown C++ hook '{}'", kernel.hook);
    sig = (*hook)(HookInput{kernel, args, b.params, b.types});
  } else {
    sig = detail::evaluate_template(b);
  }
  sig.kernel = kernel.name;
  sig.params = detail::recorded_params(b);
  detail::reject_empty_reductions(b, sig);
  detail::self_check(b, sig);
  return sig;
}

nlohmann::json resolve_parameters(const Metakernel& kernel, std::span<const Argument> args,
                                  const nlohmann::json& params) {
  detail::Bindings b(kernel, args);
  detail::check_arg_count(b);
  detail::resolve_params(b, params);
  const bool sized = std::any_of(kernel.params.begin(), kernel.params.end(),
                                 [](const ParamSpec& p) { return p.default_expr.has_value(); });
  if (sized) {
    detail::bind_inputs(b);
    detail::resolve_size_defaults(b);
  }
  return b.params;
}

}  // namespace tapestry::metakernel
