// Fast elementwise kernels: unary maps, broadcasting binary maps, bias_add and the masks
// (comparisons, boolean logic, where).
//
// Any IPFs with one element per index point are accepted: the index box becomes a loop nest
// over raw pointers (fast_support.h), broadcasting is a zero stride, and the innermost run is
// one of the vectorised loops of elementwise_ops.h, applying the formulas of ../scalar_ops.h
// (the reference kernels' own). Only integer division and pow (an Error on a zero divisor or a
// negative exponent), mixed dtypes and cells wider than one element go to the reference kernel.
//
// bf16/f16: the unary and binary maps (bias_add and the masks included) and the layout copies
// take 16-bit ports themselves. A map widens each cell in a register, applies the float32
// functor and rounds once into the result (elementwise_ops.h, unary_run_half): bitwise the
// float32 kernel on widened copies, which is what ran before, without the float32 blocks. A copy
// moves the 16-bit cells as they are (the widening round trip was exact, except that it quieted
// a signalling NaN). Anything else widens (executable_kernels.h).
#include <algorithm>
#include <type_traits>
#include <vector>

#include "elementwise_ops.h"
#include "fast_support.h"
#include "tapestry/runtime/buffer.h"

namespace tapestry::runtime::fast {

std::optional<UnaryOp> parse_unary_op(std::string_view kernel) {
  if (kernel.starts_with("op:")) kernel.remove_prefix(3);
  if (kernel == "relu") return UnaryOp::kRelu;
  if (kernel == "neg") return UnaryOp::kNeg;
  if (kernel == "exp") return UnaryOp::kExp;
  if (kernel == "tanh") return UnaryOp::kTanh;
  if (kernel == "sigmoid") return UnaryOp::kSigmoid;
  if (kernel == "gelu") return UnaryOp::kGelu;
  return std::nullopt;
}

namespace {

constexpr std::string_view kResult = "result";

// The single port `name`[0] of a list of exactly one, with unit cells; else null.
template <typename Port>
const Port* sole_unit_port(const ir::NamedLists<Port>& ports, std::string_view name) {
  auto list = ports.list(name);
  if (list.size() != 1 || !has_unit_cells(*list[0].ipf)) return nullptr;
  return &list[0];
}

// The dtype of a call whose ports are the named unit-cell ones (and no others), when the fast
// path may run it: one dtype, a float when `float_only`, a non-empty index.
std::optional<DType> fast_dtype(const KernelCall& call, std::size_t inputs, bool float_only) {
  if (call.index.is_empty() || call.inputs.size() != inputs || call.outputs.size() != 1) {
    return std::nullopt;
  }
  std::optional<DType> dtype = uniform_dtype(call);
  if (!dtype || !is_executable(*dtype)) return std::nullopt;
  if (float_only && !ir::is_float(*dtype)) return std::nullopt;
  return dtype;
}

template <typename Op>
void unary_kernel(const KernelCall& call) {
  const InputPort* x = sole_unit_port(call.inputs, "x");
  const OutputPort* r = sole_unit_port(call.outputs, kResult);
  const std::optional<DType> dtype = fast_dtype(call, 1, Op::kFloatOnly);
  if (x == nullptr || r == nullptr || !dtype) return run_reference(call);
  if (is_half_float(*dtype)) {
    visit_half_float(*dtype, [&]<typename H>() {
      const Strided<const H> xs = strided<const H>(*x, call.index);
      const Strided<H> rs = strided<H>(*r, call.index);
      for_each_run(make_nest<2>(call.index, {&xs.coef, &rs.coef}),
                   [&](const auto& at, std::int64_t n, const auto& step) {
                     unary_run_half<Op>(xs.base + at[0], step[0], rs.base + at[1], step[1], n);
                   });
    });
    count_half_native();
    return count_fast();
  }
  visit_dtype(*dtype, [&]<typename T>() {
    if constexpr (kernels::kIsFloat<T> || !Op::kFloatOnly) {
      const Strided<const T> xs = strided<const T>(*x, call.index);
      const Strided<T> rs = strided<T>(*r, call.index);
      for_each_run(make_nest<2>(call.index, {&xs.coef, &rs.coef}),
                   [&](const auto& at, std::int64_t n, const auto& step) {
                     unary_run<Op>(xs.base + at[0], step[0], rs.base + at[1], step[1], n);
                   });
    }
  });
  count_fast();
}

// Integer division throws on a zero divisor, integer pow on a negative exponent: they run on the
// reference kernel, floats only here.
template <typename Op>
constexpr bool kIsDiv = std::is_same_v<Op, scalar::Div> || std::is_same_v<Op, scalar::Pow>;

template <typename Op>
void binary_map(const KernelCall& call, std::string_view lhs, std::string_view rhs) {
  const InputPort* a = sole_unit_port(call.inputs, lhs);
  const InputPort* b = sole_unit_port(call.inputs, rhs);
  const OutputPort* r = sole_unit_port(call.outputs, kResult);
  const std::optional<DType> dtype = fast_dtype(call, 2, kIsDiv<Op>);
  if (a == nullptr || b == nullptr || r == nullptr || !dtype) return run_reference(call);
  if (is_half_float(*dtype)) {
    visit_half_float(*dtype, [&]<typename H>() {
      const Strided<const H> as = strided<const H>(*a, call.index);
      const Strided<const H> bs = strided<const H>(*b, call.index);
      const Strided<H> rs = strided<H>(*r, call.index);
      for_each_run(make_nest<3>(call.index, {&as.coef, &bs.coef, &rs.coef}),
                   [&](const auto& at, std::int64_t n, const auto& step) {
                     binary_run_half<Op>(as.base + at[0], step[0], bs.base + at[1], step[1],
                                         rs.base + at[2], step[2], n);
                   });
    });
    count_half_native();
    return count_fast();
  }
  visit_dtype(*dtype, [&]<typename T>() {
    if constexpr (kernels::kIsFloat<T> || !kIsDiv<Op>) {
      const Strided<const T> as = strided<const T>(*a, call.index);
      const Strided<const T> bs = strided<const T>(*b, call.index);
      const Strided<T> rs = strided<T>(*r, call.index);
      for_each_run(make_nest<3>(call.index, {&as.coef, &bs.coef, &rs.coef}),
                   [&](const auto& at, std::int64_t n, const auto& step) {
                     binary_run<Op>(as.base + at[0], step[0], bs.base + at[1], step[1],
                                    rs.base + at[2], step[2], n);
                   });
    }
  });
  count_fast();
}

template <typename Op>
void binary_kernel(const KernelCall& call) {
  binary_map<Op>(call, "a", "b");
}

void bias_add_kernel(const KernelCall& call) {
  binary_map<scalar::Add>(call, "x", "bias");
}

// where(cond, a, b) (kernels/masks.yaml): scalar::Where over a loop nest of four strided
// operands; cond may have its own executable dtype, a, b and the result share one. Anything
// else (wide cells, other dtypes) goes to the reference kernel.
void where_kernel(const KernelCall& call) {
  const InputPort* cond = sole_unit_port(call.inputs, "cond");
  const InputPort* a = sole_unit_port(call.inputs, "a");
  const InputPort* b = sole_unit_port(call.inputs, "b");
  const OutputPort* r = sole_unit_port(call.outputs, kResult);
  if (cond == nullptr || a == nullptr || b == nullptr || r == nullptr || call.index.is_empty() ||
      call.inputs.size() != 3 || call.outputs.size() != 1) {
    return run_reference(call);
  }
  const DType cond_dtype = cond->view.dtype(), dtype = a->view.dtype();
  if (!is_executable(cond_dtype) || !is_executable(dtype) || b->view.dtype() != dtype ||
      r->view.dtype() != dtype) {
    return run_reference(call);
  }
  visit_dtype(cond_dtype, [&]<typename C>() {
    visit_dtype(dtype, [&]<typename T>() {
      const Strided<const C> cs = strided<const C>(*cond, call.index);
      const Strided<const T> as = strided<const T>(*a, call.index);
      const Strided<const T> bs = strided<const T>(*b, call.index);
      const Strided<T> rs = strided<T>(*r, call.index);
      const scalar::Where op;
      for_each_run(make_nest<4>(call.index, {&cs.coef, &as.coef, &bs.coef, &rs.coef}),
                   [&](const auto& at, std::int64_t n, const auto& step) {
                     const C* cp = cs.base + at[0];
                     const T* ap = as.base + at[1];
                     const T* bp = bs.base + at[2];
                     T* rp = rs.base + at[3];
                     if (step[0] == 1 && step[1] == 1 && step[2] == 1 && step[3] == 1) {
                       for (std::int64_t i = 0; i < n; ++i) rp[i] = op(cp[i], ap[i], bp[i]);
                     } else {
                       for (std::int64_t i = 0; i < n; ++i)
                         rp[i * step[3]] = op(cp[i * step[0]], ap[i * step[1]], bp[i * step[2]]);
                     }
                   });
    });
  });
  count_fast();
}

// A transpose's two innermost loops: the result contiguous along the inner one, x along the one
// outside it. Copied element by element, every read of x lands in another cache line (1.6 GB/s
// on a 1024×2048 f32 transpose); in kTile × kTile tiles a tile's lines stay in L1 while it is
// read. False (nothing copied) when the nest is not that shape.
template <typename T>
bool transpose_in_tiles(const Nest<2>& nest, const T* from, T* to) {
  constexpr std::int64_t kTile = 32;
  const std::size_t depth = nest.extent.size();
  if (depth < 2) return false;
  const auto& inner = nest.stride[depth - 1];
  const auto& outer = nest.stride[depth - 2];
  if (inner[1] != 1 || inner[0] == 1 || outer[0] != 1) return false;
  const std::int64_t ni = nest.extent[depth - 1], no = nest.extent[depth - 2];
  if (ni < kTile || no < kTile) return false;
  const std::int64_t xi = inner[0], ro = outer[1];
  const auto tile = [&](const T* x, T* r) {
    for (std::int64_t o0 = 0; o0 < no; o0 += kTile) {
      const std::int64_t o1 = std::min(no, o0 + kTile);
      for (std::int64_t i0 = 0; i0 < ni; i0 += kTile) {
        const std::int64_t i1 = std::min(ni, i0 + kTile);
        for (std::int64_t o = o0; o < o1; ++o) {
          const T* xo = x + o;  // x's stride along o is 1
          T* ro_ptr = r + o * ro;
          for (std::int64_t i = i0; i < i1; ++i) ro_ptr[i] = xo[i * xi];
        }
      }
    }
  };
  if (depth == 2) {
    tile(from, to);
    return true;
  }
  // The loops outside the two: one tiled transpose per point.
  Nest<2> rest;
  rest.extent.assign(nest.extent.begin(), nest.extent.end() - 2);
  rest.stride.assign(nest.stride.begin(), nest.stride.end() - 2);
  for_each_run(rest, [&](const auto& at, std::int64_t n, const auto& step) {
    for (std::int64_t k = 0; k < n; ++k) tile(from + at[0] + k * step[0], to + at[1] + k * step[1]);
  });
  return true;
}

// transpose, permute, reshape: every index point's result cell is a copy of its x cell, so they
// are a strided copy through the same loop nest as the unary maps (bitwise equal, any dtype).
// The reference kernels locate both cells for every element: ~40 M elements/s, which made the
// layout ops 3/4 of the transformer example's time.
void copy_kernel(const KernelCall& call) {
  const InputPort* x = sole_unit_port(call.inputs, "x");
  const OutputPort* r = sole_unit_port(call.outputs, kResult);
  const std::optional<DType> dtype = fast_dtype(call, 1, false);
  if (x == nullptr || r == nullptr || !dtype) return run_reference(call);
  visit_storage_dtype(*dtype, [&]<typename T>() {
    const Strided<const T> xs = strided<const T>(*x, call.index);
    const Strided<T> rs = strided<T>(*r, call.index);
    Nest<2> nest = make_nest<2>(call.index, {&xs.coef, &rs.coef});
    if (transpose_in_tiles(nest, xs.base, rs.base)) return;
    for_each_run(nest, [&](const auto& at, std::int64_t n, const auto& step) {
      const T* from = xs.base + at[0];
      T* to = rs.base + at[1];
      if (step[0] == 1 && step[1] == 1) {
        std::copy(from, from + n, to);
      } else {
        for (std::int64_t i = 0; i < n; ++i) to[i * step[1]] = from[i * step[0]];
      }
    });
  });
  if (is_half_float(*dtype)) count_half_native();
  count_fast();
}

// cast: with unit cells each port's view is exactly its box of the call's index, of the same
// shape, so the whole call is one row-wise convert_elements (the same conversion as the reference
// kernel's: storage_cast from the float64 value, bitwise equal).
void cast_kernel(const KernelCall& call) {
  const InputPort* x = sole_unit_port(call.inputs, "x");
  const OutputPort* r = sole_unit_port(call.outputs, kResult);
  if (x == nullptr || r == nullptr || call.index.is_empty()) return run_reference(call);
  convert_elements(x->view, r->view);
  count_fast();
}

// One pad row: `n` cells of result row `r` starting at column `c0`; x's row `xr` (null when the
// row lies outside x) holds columns [x0, x1).
template <typename T>
void pad_row(T* r, std::int64_t c0, std::int64_t n, const T* xr, std::int64_t x0, std::int64_t x1,
             T value) {
  std::fill(r, r + n, value);
  if (xr == nullptr) return;
  const std::int64_t lo = std::max(c0, x0), hi = std::min(c0 + n, x1);
  if (lo < hi) std::copy(xr + (lo - x0), xr + (hi - x0), r + (lo - c0));
}

// pad (f32, f64): result cells inside x's range copy x, the others take `value`; row by row
// (fill, then copy the overlap) instead of deciding per element. Result and x share their
// coordinates: only the range differs.
void pad_kernel(const KernelCall& call) {
  const InputPort* x = call.find_input("x");
  const OutputPort* r = sole_unit_port(call.outputs, kResult);
  const std::optional<DType> dtype = uniform_dtype(call);
  const nlohmann::json* value =
      call.params != nullptr && call.params->is_object() && call.params->contains("value")
          ? &call.params->at("value")
          : nullptr;
  if (x == nullptr || r == nullptr || call.inputs.size() != 1 || call.index.is_empty() || !dtype ||
      !ir::is_float(*dtype) || (value != nullptr && !value->is_number()) || r->view.rank() < 2 ||
      r->view.stride(r->view.rank() - 1) != 1 || x->view.stride(x->view.rank() - 1) != 1) {
    return run_reference(call);
  }
  visit_dtype(*dtype, [&]<typename T>() {
    if constexpr (kernels::kIsFloat<T>) {
      const TypedView<T> out = r->view.template typed<T>();
      const TypedView<const T> in = x->view.template typed<T>();
      const T fill = value != nullptr ? static_cast<T>(value->get<double>()) : T{0};
      const std::size_t rank = out.rank();
      const Range& ob = out.box();
      const Range& xb = in.box();
      // Every row of the output box, by an odometer over its leading dims (no Point per row):
      // the output row's pointer and, when the row lies inside x on every leading dim, x's.
      const std::size_t lead = rank - 1;
      std::vector<std::int64_t> at(ob.start().begin(), ob.start().end());
      T* const out_origin = out.origin();
      const T* const in_origin = in.origin();
      const std::int64_t n = ob.extent(lead);
      bool done = false;
      while (!done) {
        std::int64_t out_offset = 0, in_offset = 0;
        bool inside = in_origin != nullptr;
        for (std::size_t d = 0; d < lead; ++d) {
          out_offset += (at[d] - ob.start()[d]) * out.stride(d);
          inside = inside && at[d] >= xb.start()[d] && at[d] < xb.end()[d];
          if (inside) in_offset += (at[d] - xb.start()[d]) * in.stride(d);
        }
        pad_row(out_origin + out_offset, ob.start()[lead], n,
                inside ? in_origin + in_offset : nullptr, xb.start()[lead], xb.end()[lead], fill);
        done = true;
        for (std::size_t d = lead; d-- > 0;) {
          if (++at[d] < ob.end()[d]) {
            done = false;
            break;
          }
          at[d] = ob.start()[d];
        }
      }
    }
  });
  count_fast();
}

}  // namespace

void register_fast_elementwise(ExecutableKernels& registry) {
  // Native: the maps and copies take bf16/f16 ports themselves (file comment); where, pad and
  // the calls they refuse widen.
  registry.add_native("relu", &unary_kernel<scalar::Relu>);
  registry.add_native("neg", &unary_kernel<scalar::Neg>);
  registry.add_native("exp", &unary_kernel<scalar::Exp>);
  registry.add_native("tanh", &unary_kernel<scalar::Tanh>);
  registry.add_native("sigmoid", &unary_kernel<scalar::Sigmoid>);
  registry.add_native("gelu", &unary_kernel<scalar::Gelu>);
  registry.add_native("sqrt", &unary_kernel<scalar::Sqrt>);
  registry.add_native("log", &unary_kernel<scalar::Log>);
  registry.add_native("floor", &unary_kernel<scalar::Floor>);
  registry.add_native("ceil", &unary_kernel<scalar::Ceil>);
  registry.add_native("round", &unary_kernel<scalar::RoundHalfEven>);
  registry.add_native("add", &binary_kernel<scalar::Add>);
  registry.add_native("sub", &binary_kernel<scalar::Sub>);
  registry.add_native("mul", &binary_kernel<scalar::Mul>);
  registry.add_native("div", &binary_kernel<scalar::Div>);
  registry.add_native("maximum", &binary_kernel<scalar::Maximum>);
  registry.add_native("pow", &binary_kernel<scalar::Pow>);
  registry.add_native("bias_add", &bias_add_kernel);
  // Masks (kernels/masks.yaml): the binary and unary maps' loops over scalar_ops.h's selects.
  registry.add_native("equal", &binary_kernel<scalar::Equal>);
  registry.add_native("less", &binary_kernel<scalar::Less>);
  registry.add_native("less_equal", &binary_kernel<scalar::LessEqual>);
  registry.add_native("greater", &binary_kernel<scalar::Greater>);
  registry.add_native("greater_equal", &binary_kernel<scalar::GreaterEqual>);
  registry.add_native("logical_and", &binary_kernel<scalar::LogicalAnd>);
  registry.add_native("logical_or", &binary_kernel<scalar::LogicalOr>);
  registry.add_native("logical_xor", &binary_kernel<scalar::LogicalXor>);
  registry.add_native("logical_not", &unary_kernel<scalar::LogicalNot>);
  registry.add("where", &where_kernel);
  registry.add_native("transpose", &copy_kernel);
  registry.add_native("permute", &copy_kernel);
  registry.add_native("reshape", &copy_kernel);
  registry.add_native("slice", &copy_kernel);
  registry.add("pad", &pad_kernel);
  registry.add("pad2d", &pad_kernel);  // pad with an amount per side: the same row loop
  registry.add("pad3d", &pad_kernel);
  registry.add_native("cast", &cast_kernel);  // converts 16-bit ports itself
}

}  // namespace tapestry::runtime::fast
