// Reference elementwise kernels: unary maps, broadcasting binary maps, bias_add, and the masks
// (comparisons, boolean logic, where: kernels/masks.yaml).
//
// Every operand has one element per index point; broadcasting lives entirely in the IPFs (a
// broadcast dim is a zero row, a missing leading dim no row at all), so one loop serves every
// shape: for each index point i, result[IPF_r(i)] = f(a[IPF_a(i)], b[IPF_b(i)]).
// Ports as in kernels/elementwise_unary.yaml (x → result), elementwise_binary.yaml (a, b →
// result) and bias_add.yaml (x, bias → result). The formulas themselves are the functors of
// scalar_ops.h, shared with the fast kernels.
#include <fmt/format.h>

#include "kernel_support.h"
#include "reference_kernels.h"
#include "scalar_ops.h"

namespace tapestry::runtime {

namespace {

using kernels::kIsFloat;
namespace scalar = kernels::scalar;

// Port names, as the metakernel files declare them.
constexpr std::string_view kX = "x";
constexpr std::string_view kA = "a";
constexpr std::string_view kB = "b";
constexpr std::string_view kBias = "bias";
constexpr std::string_view kCond = "cond";
constexpr std::string_view kResult = "result";

// ---- unary ------------------------------------------------------------------------------------

// f32 gelu one element at a time, with the FMA instruction where the CPU has it. The runtime is
// built for the baseline x86-64, where gelu_f32's 15 fused multiply-adds are calls to glibc's
// fmaf (57 ns per element on this machine, against 5.6 ns with the instruction: the naive run
// that --verify compares against spends its gelu time there). The same correctly rounded
// operations either way, so the same bits as the fast kernels.
[[gnu::target("fma")]] float gelu_f32_fma(float x) {
  return scalar::gelu_f32(x);
}

struct ReferenceGelu : scalar::Gelu {
  template <std::floating_point T>
  T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>) {
      static const bool has_fma = __builtin_cpu_supports("fma") != 0;
      if (has_fma) return gelu_f32_fma(x);
    }
    return scalar::Gelu::operator()(x);
  }
};

template <typename Op>
void unary_kernel(const KernelCall& call) {
  kernels::require_unit_cells(call);
  const DType dtype = kernels::common_dtype(call);
  if (Op::kFloatOnly) kernels::require_float(call, dtype);
  visit_dtype(dtype, [&]<typename T>() {
    if constexpr (!Op::kFloatOnly || kIsFloat<T>) {
      const Operand<const T> x(call.input(kX));
      const Operand<T> result(call.output(kResult));
      const Op op;
      for (const Point& p : call.index.points()) *result.cell(p) = op(*x.cell(p));
    }
  });
}

// ---- binary -----------------------------------------------------------------------------------

template <typename Op>
void binary_map(const KernelCall& call, std::string_view lhs, std::string_view rhs) {
  kernels::require_unit_cells(call);
  visit_dtype(kernels::common_dtype(call), [&]<typename T>() {
    const Operand<const T> a(call.input(lhs));
    const Operand<const T> b(call.input(rhs));
    const Operand<T> result(call.output(kResult));
    const Op op;
    try {
      for (const Point& p : call.index.points()) *result.cell(p) = op(*a.cell(p), *b.cell(p));
    } catch (const Error& e) {
      call.fail(e.what());
    }
  });
}

template <typename Op>
void binary_kernel(const KernelCall& call) {
  binary_map<Op>(call, kA, kB);
}

// bias_add(x, bias): x + bias, the bias indexed by the last dim of x (its IPF says how).
void bias_add_kernel(const KernelCall& call) {
  binary_map<scalar::Add>(call, kX, kBias);
}

// where(cond, a, b): a where cond ≠ 0, else b (kernels/masks.yaml). cond has its own dtype
// (an integer mask may choose between floats); a, b and the result share theirs.
void where_kernel(const KernelCall& call) {
  kernels::require_unit_cells(call);
  const DType cond_dtype = call.input(kCond).view.dtype();
  const DType dtype = call.input(kA).view.dtype();
  if (call.input(kB).view.dtype() != dtype || call.output(kResult).view.dtype() != dtype) {
    call.fail(fmt::format("a is {}, b {} and result {}: they must be alike", ir::dtype_name(dtype),
                          ir::dtype_name(call.input(kB).view.dtype()),
                          ir::dtype_name(call.output(kResult).view.dtype())));
  }
  visit_dtype(cond_dtype, [&]<typename C>() {
    visit_dtype(dtype, [&]<typename T>() {
      const Operand<const C> cond(call.input(kCond));
      const Operand<const T> a(call.input(kA));
      const Operand<const T> b(call.input(kB));
      const Operand<T> result(call.output(kResult));
      const scalar::Where op;
      for (const Point& p : call.index.points())
        *result.cell(p) = op(*cond.cell(p), *a.cell(p), *b.cell(p));
    });
  });
}

}  // namespace

void register_elementwise_kernels(ExecutableKernels& registry) {
  registry.add("relu", &unary_kernel<scalar::Relu>);
  registry.add("gelu", &unary_kernel<ReferenceGelu>);
  registry.add("exp", &unary_kernel<scalar::Exp>);
  registry.add("neg", &unary_kernel<scalar::Neg>);
  registry.add("tanh", &unary_kernel<scalar::Tanh>);
  registry.add("sigmoid", &unary_kernel<scalar::Sigmoid>);
  registry.add("sqrt", &unary_kernel<scalar::Sqrt>);
  registry.add("log", &unary_kernel<scalar::Log>);
  registry.add("floor", &unary_kernel<scalar::Floor>);
  registry.add("ceil", &unary_kernel<scalar::Ceil>);
  registry.add("round", &unary_kernel<scalar::RoundHalfEven>);
  registry.add("add", &binary_kernel<scalar::Add>);
  registry.add("sub", &binary_kernel<scalar::Sub>);
  registry.add("mul", &binary_kernel<scalar::Mul>);
  registry.add("div", &binary_kernel<scalar::Div>);
  registry.add("maximum", &binary_kernel<scalar::Maximum>);
  registry.add("pow", &binary_kernel<scalar::Pow>);
  registry.add("bias_add", &bias_add_kernel);
  // Masks (kernels/masks.yaml).
  registry.add("equal", &binary_kernel<scalar::Equal>);
  registry.add("less", &binary_kernel<scalar::Less>);
  registry.add("less_equal", &binary_kernel<scalar::LessEqual>);
  registry.add("greater", &binary_kernel<scalar::Greater>);
  registry.add("greater_equal", &binary_kernel<scalar::GreaterEqual>);
  registry.add("logical_and", &binary_kernel<scalar::LogicalAnd>);
  registry.add("logical_or", &binary_kernel<scalar::LogicalOr>);
  registry.add("logical_xor", &binary_kernel<scalar::LogicalXor>);
  registry.add("logical_not", &unary_kernel<scalar::LogicalNot>);
  registry.add("where", &where_kernel);
}

}  // namespace tapestry::runtime
