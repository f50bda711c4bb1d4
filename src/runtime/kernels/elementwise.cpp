// Reference elementwise kernels: unary maps, broadcasting binary maps, bias_add.
//
// Every operand has one element per index point; broadcasting lives entirely in the IPFs (a
// broadcast dim is a zero row, a missing leading dim no row at all), so one loop serves every
// shape: for each index point i, result[IPF_r(i)] = f(a[IPF_a(i)], b[IPF_b(i)]).
// Ports as in kernels/elementwise_unary.yaml (x → result), elementwise_binary.yaml (a, b →
// result) and bias_add.yaml (x, bias → result).
#include <cmath>
#include <numbers>

#include "kernel_support.h"
#include "reference_kernels.h"

namespace tapestry::runtime {

namespace {

using kernels::kIsFloat;

// Port names, as the metakernel files declare them.
constexpr std::string_view kX = "x";
constexpr std::string_view kA = "a";
constexpr std::string_view kB = "b";
constexpr std::string_view kBias = "bias";
constexpr std::string_view kResult = "result";

// ---- unary ------------------------------------------------------------------------------------

struct Relu {
  static constexpr bool kFloatOnly = false;
  template <typename T>
  T operator()(T x) const {
    return kernels::max(x, T{0});
  }
};

struct Neg {
  static constexpr bool kFloatOnly = false;
  template <typename T>
  T operator()(T x) const {
    return kernels::neg(x);
  }
};

struct Exp {
  static constexpr bool kFloatOnly = true;
  template <typename T>
  T operator()(T x) const {
    return std::exp(x);
  }
};

struct Tanh {
  static constexpr bool kFloatOnly = true;
  template <typename T>
  T operator()(T x) const {
    return std::tanh(x);
  }
};

struct Sigmoid {
  static constexpr bool kFloatOnly = true;
  template <typename T>
  T operator()(T x) const {
    return T{1} / (T{1} + std::exp(-x));
  }
};

// The exact (erf) form, PyTorch's default: x · Φ(x) = x/2 · (1 + erf(x/√2)).
struct Gelu {
  static constexpr bool kFloatOnly = true;
  template <typename T>
  T operator()(T x) const {
    return T{0.5} * x * (T{1} + std::erf(x / std::numbers::sqrt2_v<T>));
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

struct Add {
  template <typename T>
  T operator()(T a, T b) const {
    return kernels::add(a, b);
  }
};

struct Sub {
  template <typename T>
  T operator()(T a, T b) const {
    return kernels::sub(a, b);
  }
};

struct Mul {
  template <typename T>
  T operator()(T a, T b) const {
    return kernels::mul(a, b);
  }
};

struct Max {
  template <typename T>
  T operator()(T a, T b) const {
    return kernels::max(a, b);
  }
};

// Floats: IEEE division. Integers: C division, rounding toward zero (elementwise_binary.yaml);
// the overflowing INT_MIN / -1 wraps; division by zero is an error.
struct Div {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsFloat<T>) {
      return a / b;
    } else {
      if (b == 0) throw Error("integer division by zero");
      if (b == -1) return kernels::neg(a);
      return a / b;
    }
  }
};

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
  binary_map<Add>(call, kX, kBias);
}

}  // namespace

void register_elementwise_kernels(KernelRegistry& registry) {
  registry.add("relu", &unary_kernel<Relu>);
  registry.add("gelu", &unary_kernel<Gelu>);
  registry.add("exp", &unary_kernel<Exp>);
  registry.add("neg", &unary_kernel<Neg>);
  registry.add("tanh", &unary_kernel<Tanh>);
  registry.add("sigmoid", &unary_kernel<Sigmoid>);
  registry.add("add", &binary_kernel<Add>);
  registry.add("sub", &binary_kernel<Sub>);
  registry.add("mul", &binary_kernel<Mul>);
  registry.add("div", &binary_kernel<Div>);
  registry.add("maximum", &binary_kernel<Max>);
  registry.add("bias_add", &bias_add_kernel);
}

}  // namespace tapestry::runtime
