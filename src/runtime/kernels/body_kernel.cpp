// Kernels from kernel bodies (runtime/body_kernels.h). Steps:
//   1. compile the body to postfix code once per kernel (inputs and params become slots);
//   2. per call: check the ports, resolve the params, pick the dtype;
//   3. evaluate: per point (reference) or per run of points (fast), folding over reduced dims.
#include "tapestry/runtime/body_kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <memory>

#include "kernel_support.h"
#include "scalar_ops.h"
#include "tapestry/runtime/element.h"
#include "tapestry/runtime/kernel_path.h"
#include "tapestry/support/error.h"

namespace tapestry::runtime {

namespace {

namespace scalar = kernels::scalar;

enum class Code {
  kConst,
  kInput,
  kParam,
  kNeg,
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMax,
  kMin,
  kExp,
  kTanh,
  kSigmoid,
  kRelu,
  kGelu
};

struct Instr {
  Code code;
  std::size_t slot = 0;  // kInput, kParam
  double value = 0;      // kConst
};

struct Param {
  std::string name;
  std::optional<double> fallback;  // the default
};

struct Program {
  std::string kernel;
  std::vector<Instr> code;
  std::vector<std::string> inputs;  // input port names, by slot
  std::vector<Param> params;        // by slot
  std::size_t depth = 0;            // stack depth the code needs
  bool float_only = false;          // uses exp, tanh, sigmoid or gelu
};

// ---- 1. compile ---------------------------------------------------------------------------------

class Compiler {
 public:
  explicit Compiler(const metakernel::Metakernel& k) : k_(k) { p_.kernel = k.name; }

  Program run() {
    emit(*k_.body);
    return std::move(p_);
  }

 private:
  void push(Instr i, int delta) {
    p_.code.push_back(i);
    depth_ += delta;
    p_.depth = std::max(p_.depth, static_cast<std::size_t>(depth_));
  }

  std::size_t slot(std::vector<std::string>& names, const std::string& name) {
    auto it = std::find(names.begin(), names.end(), name);
    if (it != names.end()) return static_cast<std::size_t>(it - names.begin());
    names.push_back(name);
    return names.size() - 1;
  }

  void emit(const metakernel::BodyExpr& e) {
    using Kind = metakernel::BodyExpr::Kind;
    for (const metakernel::BodyExpr& a : e.args) emit(a);
    switch (e.kind) {
      case Kind::kNumber:
        return push({Code::kConst, 0, e.number}, 1);
      case Kind::kName:
        if (k_.find_input(e.name)) return push({Code::kInput, slot(p_.inputs, e.name)}, 1);
        return push({Code::kParam, param_slot(e.name)}, 1);
      case Kind::kNegate:
        return push({Code::kNeg}, 0);
      case Kind::kBinary: {
        const Code code = e.op == '+'   ? Code::kAdd
                          : e.op == '-' ? Code::kSub
                          : e.op == '*' ? Code::kMul
                                        : Code::kDiv;
        return push({code}, -1);
      }
      case Kind::kCall:
        return push({function(e.name)}, 1 - static_cast<int>(e.args.size()));
    }
  }

  std::size_t param_slot(const std::string& name) {
    for (std::size_t i = 0; i < p_.params.size(); ++i) {
      if (p_.params[i].name == name) return i;
    }
    const metakernel::ParamSpec* spec = k_.find_param(name);
    TAPESTRY_ASSERT(spec != nullptr, "the loader checked the body's names");
    std::optional<double> fallback;
    if (spec->default_value && spec->default_value->is_number())
      fallback = spec->default_value->get<double>();
    p_.params.push_back({name, fallback});
    return p_.params.size() - 1;
  }

  Code function(const std::string& name) {
    static constexpr std::pair<std::string_view, Code> kCodes[] = {
        {"exp", Code::kExp},   {"tanh", Code::kTanh}, {"sigmoid", Code::kSigmoid},
        {"relu", Code::kRelu}, {"gelu", Code::kGelu}, {"neg", Code::kNeg},
        {"max", Code::kMax},   {"min", Code::kMin}};
    for (const auto& [n, code] : kCodes) {
      if (n != name) continue;
      p_.float_only |= code == Code::kExp || code == Code::kTanh || code == Code::kSigmoid ||
                       code == Code::kGelu;
      return code;
    }
    TAPESTRY_ASSERT(false, "the parser knows only body_functions()");
    return Code::kNeg;
  }

  const metakernel::Metakernel& k_;
  Program p_;
  int depth_ = 0;
};

// ---- the one definition of every instruction ---------------------------------------------------

template <Element T>
T apply_unary(Code code, T x) {
  if constexpr (kernels::kIsFloat<T>) {
    switch (code) {
      case Code::kExp:
        return scalar::Exp{}(x);
      case Code::kTanh:
        return scalar::Tanh{}(x);
      case Code::kSigmoid:
        return scalar::Sigmoid{}(x);
      case Code::kGelu:
        return scalar::Gelu{}(x);
      default:
        break;
    }
  }
  return code == Code::kRelu ? scalar::Relu{}(x) : scalar::Neg{}(x);
}

template <Element T>
T apply_binary(Code code, T a, T b) {
  switch (code) {
    case Code::kAdd:
      return scalar::Add{}(a, b);
    case Code::kSub:
      return scalar::Sub{}(a, b);
    case Code::kMul:
      return scalar::Mul{}(a, b);
    case Code::kDiv:
      return scalar::Div{}(a, b);
    case Code::kMax:
      return scalar::Maximum{}(a, b);
    default:
      return kernels::min(a, b);
  }
}

bool is_binary(Code code) {
  return code == Code::kAdd || code == Code::kSub || code == Code::kMul || code == Code::kDiv ||
         code == Code::kMax || code == Code::kMin;
}

// ---- 2. per call
// ---------------------------------------------------------------------------------

// The call's ports and params, resolved for the program.
template <Element T>
struct Bound {
  std::vector<Operand<const T>> inputs;  // by slot
  std::vector<T> params;                 // by slot
  Operand<T> result;
};

template <Element T>
Bound<T> bind(const Program& p, const KernelCall& call) {
  std::vector<Operand<const T>> inputs;
  for (const std::string& name : p.inputs) inputs.emplace_back(call.input(name));
  std::vector<T> params;
  for (const Param& param : p.params) {
    const nlohmann::json* given =
        call.params && call.params->is_object() && call.params->contains(param.name)
            ? &call.params->at(param.name)
            : nullptr;
    if (given && !given->is_number())
      call.fail(fmt::format("param {} must be a number, got {}", param.name, given->dump()));
    if (!given && !param.fallback) call.fail(fmt::format("param {} is required", param.name));
    params.push_back(static_cast<T>(given ? given->get<double>() : *param.fallback));
  }
  return {std::move(inputs), std::move(params), Operand<T>(call.output("result"))};
}

// ---- 3a. the reference: one point at a time -------------------------------------------------

template <Element T>
T evaluate(const Program& p, const Bound<T>& b, const Point& point, T* stack) {
  std::size_t top = 0;
  for (const Instr& i : p.code) {
    switch (i.code) {
      case Code::kConst:
        stack[top++] = static_cast<T>(i.value);
        break;
      case Code::kInput:
        stack[top++] = *b.inputs[i.slot].cell(point);
        break;
      case Code::kParam:
        stack[top++] = b.params[i.slot];
        break;
      default:
        if (is_binary(i.code)) {
          --top;
          stack[top - 1] = apply_binary(i.code, stack[top - 1], stack[top]);
        } else {
          stack[top - 1] = apply_unary(i.code, stack[top - 1]);
        }
    }
  }
  return stack[0];
}

// The monoid of the operation's reduction dims (sum when it has none: unused then).
ir::Monoid monoid_of(const KernelCall& call) {
  if (call.reductions.empty()) return ir::Monoid::kSum;
  for (const ir::Reduction& r : call.reductions) {
    if (r.monoid != call.reductions.front().monoid)
      call.fail("a kernel body folds its reduction dims with one monoid; they have several");
  }
  return call.reductions.front().monoid;
}

template <Element T>
void run_reference(const Program& p, const KernelCall& call) {
  const Bound<T> b = bind<T>(p, call);
  std::vector<T> stack(p.depth);
  kernels::Fold<T> acc(monoid_of(call));
  kernels::for_each_output_cell(
      call.index, call.reduced_dims(), [&](const Point&) { acc.reset(); },
      [&](const Point& point) { acc.add(evaluate(p, b, point, stack.data())); },
      [&](const Point& q) { *b.result.cell(q) = acc.result(); });
}

// ---- 3b. fast: runs of points ---------------------------------------------------------------

constexpr std::int64_t kRun = 256;

// Evaluates the program over `n` points whose inputs start at `starts` (stepping `steps`);
// returns the registers' row that holds the values.
template <Element T>
const T* evaluate_run(const Program& p, const Bound<T>& b, std::span<const T* const> starts,
                      std::span<const std::int64_t> steps, std::int64_t n, std::vector<T>& regs) {
  std::size_t top = 0;
  auto row = [&](std::size_t r) { return regs.data() + r * kRun; };
  for (const Instr& i : p.code) {
    switch (i.code) {
      case Code::kConst:
        std::fill_n(row(top++), n, static_cast<T>(i.value));
        break;
      case Code::kParam:
        std::fill_n(row(top++), n, b.params[i.slot]);
        break;
      case Code::kInput: {
        T* out = row(top++);
        const T* in = starts[i.slot];
        const std::int64_t s = steps[i.slot];
        if (s == 1) {
          std::copy_n(in, n, out);
        } else {
          for (std::int64_t k = 0; k < n; ++k) out[k] = in[k * s];
        }
        break;
      }
      default:
        if (is_binary(i.code)) {
          --top;
          T* x = row(top - 1);
          const T* y = row(top);
          const auto loop = [&](auto op) {
            for (std::int64_t k = 0; k < n; ++k) x[k] = op(x[k], y[k]);
          };
          switch (i.code) {  // one loop per instruction kind, so each vectorises
            case Code::kAdd:
              loop(scalar::Add{});
              break;
            case Code::kSub:
              loop(scalar::Sub{});
              break;
            case Code::kMul:
              loop(scalar::Mul{});
              break;
            case Code::kMax:
              loop(scalar::Maximum{});
              break;
            default:
              for (std::int64_t k = 0; k < n; ++k) x[k] = apply_binary(i.code, x[k], y[k]);
          }
        } else {
          T* x = row(top - 1);
          for (std::int64_t k = 0; k < n; ++k) x[k] = apply_unary(i.code, x[k]);
        }
    }
  }
  return row(0);
}

template <Element T>
void run_fast(const Program& p, const KernelCall& call) {
  const std::vector<std::size_t> reduced = call.reduced_dims();
  const Range& index = call.index;
  if (index.is_empty()) return;
  const std::size_t rank = index.rank();
  // The fast path walks runs along the last index dim; reductions must be the trailing dims
  // (as built-in metakernels declare them) for its order to be the reference's.
  if (rank == 0 || !kernels::detail::are_trailing(reduced, rank)) return run_reference<T>(p, call);
  const Bound<T> b = bind<T>(p, call);
  const std::size_t last = rank - 1;
  const std::int64_t length = index.shape()[last];
  const Range rows = index.with_dim(last, index.start()[last], index.start()[last] + 1);
  std::vector<std::int64_t> steps;
  for (const auto& in : b.inputs) steps.push_back(in.step(last));
  const std::int64_t out_step = b.result.step(last);
  std::vector<const T*> starts(b.inputs.size());
  std::vector<T> regs(std::max<std::size_t>(p.depth, 1) * kRun);
  kernels::Fold<T> acc(monoid_of(call));
  const std::size_t first_reduced = rank - reduced.size();
  const Point end = index.inclusive_end();
  for (const Point& row : rows.points()) {
    const bool folds = !reduced.empty();
    if (folds && kernels::detail::matches_from(row, index.start(), first_reduced)) acc.reset();
    T* out = b.result.cell(row);
    for (std::int64_t done = 0; done < length; done += kRun) {
      const std::int64_t n = std::min(kRun, length - done);
      for (std::size_t s = 0; s < starts.size(); ++s)
        starts[s] = b.inputs[s].cell(row) + done * steps[s];
      const T* values = evaluate_run<T>(p, b, starts, steps, n, regs);
      if (folds) {
        for (std::int64_t k = 0; k < n; ++k) acc.add(values[k]);
      } else if (out_step == 1) {
        std::copy_n(values, n, out + done);
      } else {
        for (std::int64_t k = 0; k < n; ++k) out[(done + k) * out_step] = values[k];
      }
    }
    // The group of an output cell ends at the row whose reduced dims (but the last, which the
    // row spans) are at their end.
    if (folds) {
      bool group_end = true;
      for (std::size_t k = first_reduced; k < last; ++k) group_end &= row[k] == end[k];
      if (group_end) *out = acc.result();
    }
  }
}

// ---- the kernel -------------------------------------------------------------------------------

template <BodyEvaluation kEvaluation>
void run(const Program& p, const KernelCall& call) {
  kernels::require_unit_cells(call);
  const DType dtype = kernels::common_dtype(call);
  if (p.float_only) kernels::require_float(call, dtype);
  try {
    visit_dtype(dtype, [&]<typename T>() {
      if constexpr (kEvaluation == BodyEvaluation::kFast) {
        note_kernel_path(KernelPath::kBody);
        run_fast<T>(p, call);
      } else {
        run_reference<T>(p, call);
      }
    });
  } catch (const Error& e) {
    if (std::string_view(e.what()).starts_with("operation ")) throw;
    call.fail(e.what());  // integer division by zero
  }
}

}  // namespace

KernelFn body_kernel(const metakernel::Metakernel& kernel, BodyEvaluation evaluation) {
  TAPESTRY_ASSERT(kernel.body.has_value(), "body_kernel: the kernel has no body");
  auto program = std::make_shared<const Program>(Compiler(kernel).run());
  if (evaluation == BodyEvaluation::kFast)
    return [program](const KernelCall& call) { run<BodyEvaluation::kFast>(*program, call); };
  return [program](const KernelCall& call) { run<BodyEvaluation::kReference>(*program, call); };
}

BodySource body_source(const metakernel::Metakernel& kernel) {
  TAPESTRY_ASSERT(kernel.body.has_value(), "body_source: the kernel has no body");
  BodySource source{.name = kernel.name, .body = kernel.body_text};
  for (const metakernel::InputSpec& in : kernel.inputs) source.inputs.push_back(in.name);
  for (const metakernel::ParamSpec& p : kernel.params) {
    source.params.emplace_back(p.name, p.default_value ? p.default_value->dump() : "null");
  }
  return source;
}

KernelFn body_kernel(const BodySource& source, BodyEvaluation evaluation) {
  metakernel::Metakernel kernel;
  kernel.name = source.name;
  for (const std::string& in : source.inputs) kernel.inputs.push_back({.name = in});
  for (const auto& [name, fallback] : source.params) {
    metakernel::ParamSpec spec{.name = name, .type = metakernel::ParamType::kFloat};
    nlohmann::json value = nlohmann::json::parse(fallback, nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded()) {
      throw Error(fmt::format("kernel '{}': param '{}': default {} is not JSON", source.name, name,
                              fallback));
    }
    if (!value.is_null()) spec.default_value = std::move(value);
    kernel.params.push_back(std::move(spec));
  }
  try {
    kernel.body = metakernel::parse_body(source.body);
  } catch (const Error& e) {
    throw Error(fmt::format("kernel '{}': body: {}", source.name, e.what()));
  }
  kernel.body_text = source.body;
  // The names the body uses are the kernel's (the loader checks this for a kernel file).
  for (const std::string& name : metakernel::body_names(*kernel.body)) {
    if (kernel.find_input(name) == nullptr && kernel.find_param(name) == nullptr) {
      throw Error(fmt::format("kernel '{}': body: '{}' is neither an input nor a param",
                              source.name, name));
    }
  }
  return body_kernel(kernel, evaluation);
}

ExecutableKernels with_body_kernels(const ExecutableKernels& base,
                                    const metakernel::SignatureRegistry& signatures,
                                    BodyEvaluation evaluation) {
  ExecutableKernels out = base;
  for (const metakernel::Metakernel* k : signatures.metakernels()) {
    if (k->body && !out.find(k->name)) out.add(k->name, body_kernel(*k, evaluation));
  }
  return out;
}

}  // namespace tapestry::runtime
