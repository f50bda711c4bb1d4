// Reference training kernels (kernels/training.yaml): gradients, losses, optimizer updates.
//
//   softmax_grad        result = y ⊙ (dy − Σ_row dy ⊙ y)                        one row per point
//   conv2d_grad_input   result[n, c, s·y + i, s·x + j] += w[o, c, i, j] · dy[n, o, y, x]
//   conv2d_grad_weight  result[o, c, i, j] = Σ_n,y,x x[n, c, s·y + i, s·x + j] · dy[n, o, y, x]
//   max_grad            dy to the first cell of each reduced row equal to max's result y
//   reduce_grad         reduce's: dy to every block (sum), the first extremal one (max, min), or
//                       times the product of the others (prod); one column of blocks per point
//   max/avg_pool2d_grad each window's dy to its first maximal cell / spread over it
//   mse, cross_entropy  rank-0 means over whole tensors; mse_grad, cross_entropy_grad
//   sgd, sgd_momentum, adam   elementwise updates
//
// Plain loops over the index points through the IPFs (kernel.h): a gradient whose output IPF
// selects a whole plane (conv2d_grad_input, the pool gradients: their sum reductions add into
// it) zeroes the plane when its group of index points begins and adds each point's terms, in
// ascending index order. The arithmetic is float64 where the YAML says so (row sums, losses,
// updates) and rounds once; the convolution gradients accumulate in the element type like
// conv2d.
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "kernel_support.h"
#include "reference_kernels.h"
#include "scalar_ops.h"
#include "tapestry/zspace/format.h"

namespace tapestry::runtime {

namespace {

double param_double(const KernelCall& call, std::string_view name, double fallback) {
  if (call.params == nullptr || !call.params->contains(name)) return fallback;
  const nlohmann::json& v = call.params->at(std::string(name));
  if (!v.is_number()) call.fail(fmt::format("param {} must be a number", name));
  return v.get<double>();
}

// Runs `body.template operator()<T>()` for the common float dtype of the call's ports.
template <typename Body>
void visit_float(const KernelCall& call, Body&& body) {
  const DType dtype = kernels::common_dtype(call);
  kernels::require_float(call, dtype);
  visit_dtype(dtype, [&]<typename T>() {
    if constexpr (kernels::kIsFloat<T>) body.template operator()<T>();
  });
}

// The last two dims of a port: a plane of an image tensor (a split reduction adds a leading
// block dim to the result, so planes are counted from the end).
template <typename T>
std::int64_t stride_h(const Operand<T>& port) {
  return port.stride(port.rank() - 2);
}
template <typename T>
std::int64_t stride_w(const Operand<T>& port) {
  return port.stride(port.rank() - 1);
}
template <typename T>
bool has_plane_cells(const Operand<T>& port) {
  if (port.rank() < 2) return false;
  for (std::size_t k = 0; k + 2 < port.rank(); ++k) {
    if (port.window(k) != 1) return false;
  }
  return true;
}

// Zeroes the plane window of `out` at `plane`.
template <typename T>
void zero_plane(T* plane, const Operand<T>& out) {
  const std::size_t h = out.rank() - 2;
  for (std::int64_t a = 0; a < out.window(h); ++a) {
    for (std::int64_t b = 0; b < out.window(h + 1); ++b)
      plane[a * stride_h(out) + b * stride_w(out)] = 0;
  }
}

// Where an index point's cell of a port lies relative to the tensor's first cell, in tensor dim
// `dim`: the linear part of the IPF's row (its offset is the tensor's start). A split reduction
// rewrites the row (i = block·chunk + i′) and keeps this value.
std::int64_t position(const InputPort& port, const Point& p, std::size_t dim) {
  const zspace::AffineMap& map = port.ipf->map();
  std::int64_t at = 0;
  for (std::size_t j = 0; j < map.in_rank(); ++j) at += map.at(dim, j) * p[j];
  return at;
}

// ---- softmax_grad -----------------------------------------------------------------------------
template <typename T>
void softmax_grad(const KernelCall& call) {
  const Operand<const T> y(call.input("y")), dy(call.input("d_result"));
  const Operand<T> r(call.output("result"));
  if (y.rank() == 0) call.fail("y must have rank >= 1");
  const std::size_t axis = y.rank() - 1;
  const std::int64_t n = y.window(axis);
  for (std::size_t k = 0; k < axis; ++k) {
    if (y.window(k) != 1) call.fail(fmt::format("y cells {} are not rows", y.window()));
  }
  for (const Point& p : call.index.points()) {
    const T* ys = y.cell(p);
    const T* ds = dy.cell(p);
    T* rs = r.cell(p);
    double dot = 0;
    for (std::int64_t k = 0; k < n; ++k) {
      dot += static_cast<double>(ys[k * y.stride(axis)]) *
             static_cast<double>(ds[k * dy.stride(axis)]);
    }
    for (std::int64_t k = 0; k < n; ++k) {
      const double yk = ys[k * y.stride(axis)];
      rs[k * r.stride(axis)] =
          static_cast<T>(yk * (static_cast<double>(ds[k * dy.stride(axis)]) - dot));
    }
  }
}

// ---- conv2d gradients -------------------------------------------------------------------------
template <typename T>
void conv2d_grad_input(const KernelCall& call) {
  const InputPort& wp = call.input("w");
  const Operand<const T> w(wp), dy(call.input("d_result"));
  const Operand<T> r(call.output("result"));
  const std::int64_t s = call.param_int("stride", 1);
  if (!kernels::has_unit_cells(*wp.ipf) || !has_plane_cells(r) || !has_plane_cells(dy) ||
      w.rank() != 4) {
    call.fail(
        "expects one filter tap (unit w cells) and whole d_result and result planes per index "
        "point");
  }
  const std::int64_t oh = dy.window(dy.rank() - 2), ow = dy.window(dy.rank() - 1);
  T* plane = nullptr;
  kernels::for_each_output_cell(
      call.index, call.reduced_dims(),
      [&](const Point& q) {
        plane = r.cell(q);
        zero_plane(plane, r);
      },
      [&](const Point& p) {
        const T wv = *w.cell(p);
        const T* d = dy.cell(p);
        T* at = plane + position(wp, p, 2) * stride_h(r) + position(wp, p, 3) * stride_w(r);
        for (std::int64_t a = 0; a < oh; ++a) {
          for (std::int64_t b = 0; b < ow; ++b) {
            T& out = at[s * a * stride_h(r) + s * b * stride_w(r)];
            out = kernels::add(out, kernels::mul(wv, d[a * stride_h(dy) + b * stride_w(dy)]));
          }
        }
      },
      [](const Point&) {});
}

template <typename T>
void conv2d_grad_weight(const KernelCall& call) {
  const Operand<const T> x(call.input("x")), dy(call.input("d_result"));
  const Operand<T> r(call.output("result"));
  const std::int64_t s = call.param_int("stride", 1);
  if (!kernels::has_unit_cells(*call.output("result").ipf) || !has_plane_cells(x) ||
      !has_plane_cells(dy)) {
    call.fail("expects unit result cells and x windows and d_result planes per index point");
  }
  const std::int64_t oh = dy.window(dy.rank() - 2), ow = dy.window(dy.rank() - 1);
  T acc{};
  kernels::for_each_output_cell(
      call.index, call.reduced_dims(), [&](const Point&) { acc = T{}; },
      [&](const Point& p) {
        const T* xc = x.cell(p);
        const T* d = dy.cell(p);
        for (std::int64_t a = 0; a < oh; ++a) {
          for (std::int64_t b = 0; b < ow; ++b) {
            acc = kernels::add(acc, kernels::mul(xc[s * a * stride_h(x) + s * b * stride_w(x)],
                                                 d[a * stride_h(dy) + b * stride_w(dy)]));
          }
        }
      },
      [&](const Point& q) { *r.cell(q) = acc; });
}

// ---- max_grad ---------------------------------------------------------------------------------
template <typename T>
bool same_value(T a, T b) {
  if constexpr (kernels::kIsFloat<T>) {
    if (std::isnan(a) && std::isnan(b)) return true;
  }
  return a == b;
}

template <typename T>
void max_grad(const KernelCall& call) {
  const Operand<const T> x(call.input("x")), y(call.input("y")), dy(call.input("d_result"));
  const Operand<T> r(call.output("result"));
  const auto dim = static_cast<std::size_t>(call.param_int("dim", 0));
  if (dim >= x.rank()) call.fail("dim out of range");
  const std::int64_t n = x.window(dim);
  for (const Point& p : call.index.points()) {
    const T* xs = x.cell(p);
    T* rs = r.cell(p);
    const T m = *y.cell(p);
    const T d = *dy.cell(p);
    bool found = false;
    for (std::int64_t k = 0; k < n; ++k) {
      const bool hit = !found && same_value(xs[k * x.stride(dim)], m);
      found = found || hit;
      rs[k * r.stride(dim)] = hit ? d : T{0};
    }
  }
}

// ---- reduce_grad ------------------------------------------------------------------------------
template <typename T>
void reduce_grad(const KernelCall& call) {
  const Operand<const T> x(call.input("x")), y(call.input("y")), dy(call.input("d_result"));
  const Operand<T> r(call.output("result"));
  const ir::Monoid monoid = call.monoid("op", ir::Monoid::kSum);
  const std::int64_t n = x.window(0);
  const std::int64_t xs = x.stride(0), rs = r.stride(0);
  for (const Point& p : call.index.points()) {
    const T* xp = x.cell(p);
    T* rp = r.cell(p);
    const T d = *dy.cell(p);
    switch (monoid) {
      case ir::Monoid::kSum:
        for (std::int64_t b = 0; b < n; ++b) rp[b * rs] = d;
        break;
      case ir::Monoid::kMax:
      case ir::Monoid::kMin: {
        const T m = *y.cell(p);
        bool found = false;
        for (std::int64_t b = 0; b < n; ++b) {
          const bool hit = !found && same_value(xp[b * xs], m);
          found = found || hit;
          rp[b * rs] = hit ? d : T{0};
        }
        break;
      }
      case ir::Monoid::kProd:
        for (std::int64_t b = 0; b < n; ++b) {
          T others{1};
          for (std::int64_t o = 0; o < n; ++o) {
            if (o != b) others *= xp[o * xs];
          }
          rp[b * rs] = d * others;
        }
        break;
    }
  }
}

// ---- pooling gradients ------------------------------------------------------------------------
template <typename T, bool kAverage>
void pool_grad(const KernelCall& call) {
  const InputPort& xp = call.input("x");
  const Operand<const T> x(xp), dy(call.input("d_result"));
  const Operand<T> r(call.output("result"));
  const std::int64_t k = call.param_int("kernel", 1);
  if (!has_plane_cells(r) || !has_plane_cells(x) || x.rank() != 4 ||
      !kernels::has_unit_cells(*call.input("d_result").ipf)) {
    call.fail("expects a window of x, one d_result cell and a whole result plane per index point");
  }
  const std::int64_t rh = stride_h(r), rw = stride_w(r);
  T* plane = nullptr;
  kernels::for_each_output_cell(
      call.index, call.reduced_dims(),
      [&](const Point& q) {
        plane = r.cell(q);
        zero_plane(plane, r);
      },
      [&](const Point& p) {
        const T d = *dy.cell(p);
        // The window's first cell, relative to x's first cell: the result plane's cell there.
        T* at = plane + position(xp, p, 2) * rh + position(xp, p, 3) * rw;
        if constexpr (kAverage) {
          const T share = static_cast<T>(static_cast<double>(d) / static_cast<double>(k * k));
          for (std::int64_t a = 0; a < k; ++a) {
            for (std::int64_t b = 0; b < k; ++b) at[a * rh + b * rw] += share;
          }
        } else {
          const T* xs = x.cell(p);
          std::int64_t best_a = 0, best_b = 0;
          T best = xs[0];
          for (std::int64_t a = 0; a < k && !std::isnan(best); ++a) {
            for (std::int64_t b = 0; b < k; ++b) {
              const T v = xs[a * x.stride(2) + b * x.stride(3)];
              if (std::isnan(v) || v > best) {
                best = v, best_a = a, best_b = b;
                if (std::isnan(v)) break;
              }
            }
          }
          at[best_a * rh + best_b * rw] += d;
        }
      },
      [](const Point&) {});
}

// ---- losses -----------------------------------------------------------------------------------
// Calls fn(a, b) for the cells of two [n, f] windows at one index point, row-major.
template <typename T, typename Fn>
void for_each_pair(const Operand<const T>& a, const Operand<const T>& b, const Point& p, Fn&& fn) {
  const T* as = a.cell(p);
  const T* bs = b.cell(p);
  for (std::int64_t i = 0; i < a.window(0); ++i) {
    for (std::int64_t j = 0; j < a.window(1); ++j) {
      fn(i, j, as[i * a.stride(0) + j * a.stride(1)], bs[i * b.stride(0) + j * b.stride(1)]);
    }
  }
}

// The losses' divisor: the `count` param the operation records (the whole tensor's element
// count or batch, whatever block this call computes).
double loss_count(const KernelCall& call) {
  const std::int64_t count = call.param_int("count", 0);
  if (count < 1) call.fail(fmt::format("count is {}: a loss divides by at least 1", count));
  return static_cast<double>(count);
}

template <typename T>
void mse(const KernelCall& call) {
  const Operand<const T> pred(call.input("pred")), target(call.input("target"));
  const Operand<T> r(call.output("result"));
  const double count = loss_count(call);
  double sum = 0;
  kernels::for_each_output_cell(
      call.index, call.reduced_dims(), [&](const Point&) { sum = 0; },
      [&](const Point& p) {
        for_each_pair(pred, target, p, [&](std::int64_t, std::int64_t, T a, T b) {
          const double d = static_cast<double>(a) - static_cast<double>(b);
          sum += d * d;
        });
      },
      [&](const Point& q) { *r.cell(q) = static_cast<T>(sum / count); });
}

template <typename T>
void mse_grad(const KernelCall& call) {
  const Operand<const T> pred(call.input("pred")), target(call.input("target"));
  const Operand<const T> dy(call.input("d_result"));
  const Operand<T> r(call.output("result"));
  const double count = loss_count(call);
  for (const Point& p : call.index.points()) {
    T* rs = r.cell(p);
    const double scale = 2 * static_cast<double>(*dy.cell(p)) / count;
    for_each_pair(pred, target, p, [&](std::int64_t i, std::int64_t j, T a, T b) {
      rs[i * r.stride(0) + j * r.stride(1)] =
          static_cast<T>((static_cast<double>(a) - static_cast<double>(b)) * scale);
    });
  }
}

// The class of row `i` of the labels index point `p` selects, checked against [0, classes); an
// error names the row of the whole labels tensor.
template <typename L>
std::int64_t label_of(const KernelCall& call, const Operand<const L>& labels, const Point& p,
                      std::int64_t i, std::int64_t classes) {
  const auto l = static_cast<std::int64_t>(labels.cell(p)[i * labels.stride(0)]);
  if (l < 0 || l >= classes) {
    const std::int64_t row = call.input("labels").ipf->apply(p).start()[0] + i;
    call.fail(fmt::format("label {} of row {} is not a class in 0..{}", l, row, classes - 1));
  }
  return l;
}

template <typename T, typename L, bool kGrad>
void cross_entropy(const KernelCall& call) {
  const Operand<const T> logits(call.input("logits"));
  const Operand<const L> labels(call.input("labels"));
  const Operand<T> r(call.output("result"));
  const std::int64_t rows = logits.window(0), classes = logits.window(1);
  const std::int64_t s0 = logits.stride(0), s1 = logits.stride(1);
  const double count = loss_count(call);
  if constexpr (!kGrad) {  // a sum over the rows of every index point, then / count
    double sum = 0;
    kernels::for_each_output_cell(
        call.index, call.reduced_dims(), [&](const Point&) { sum = 0; },
        [&](const Point& p) {
          const T* x = logits.cell(p);
          for (std::int64_t i = 0; i < rows; ++i) {
            const std::int64_t l = label_of(call, labels, p, i, classes);
            sum += kernels::scalar::log_sum_exp(x + i * s0, s1, classes) -
                   static_cast<double>(x[i * s0 + l * s1]);
          }
        },
        [&](const Point& q) { *r.cell(q) = static_cast<T>(sum / count); });
    return;
  }
  for (const Point& p : call.index.points()) {
    const T* x = logits.cell(p);
    {
      const Operand<const T> dy(call.input("d_result"));
      const double scale = static_cast<double>(*dy.cell(p)) / count;
      T* rs = r.cell(p);
      for (std::int64_t i = 0; i < rows; ++i) {
        const std::int64_t l = label_of(call, labels, p, i, classes);
        const double lse = kernels::scalar::log_sum_exp(x + i * s0, s1, classes);
        for (std::int64_t k = 0; k < classes; ++k) {
          const double prob = std::exp(static_cast<double>(x[i * s0 + k * s1]) - lse);
          rs[i * r.stride(0) + k * r.stride(1)] =
              static_cast<T>((prob - (k == l ? 1.0 : 0.0)) * scale);
        }
      }
    }
  }
}

template <bool kGrad>
void cross_entropy_kernel(const KernelCall& call) {
  const DType dtype = call.input("logits").view.dtype();
  kernels::require_float(call, dtype);
  const DType label_dtype = call.input("labels").view.dtype();
  if (label_dtype != DType::kInt32 && label_dtype != DType::kInt64) {
    call.fail(fmt::format("labels must be i32 or i64, not {}", ir::dtype_name(label_dtype)));
  }
  visit_dtype(dtype, [&]<typename T>() {
    if constexpr (kernels::kIsFloat<T>) {
      if (label_dtype == DType::kInt32) {
        cross_entropy<T, std::int32_t, kGrad>(call);
      } else {
        cross_entropy<T, std::int64_t, kGrad>(call);
      }
    }
  });
}

// ---- optimizer updates ------------------------------------------------------------------------
template <typename T>
void sgd(const KernelCall& call, bool momentum) {
  kernels::require_unit_cells(call);
  const Operand<const T> param(call.input("param")), grad(call.input("grad"));
  const Operand<T> r(call.output("result"));
  const double lr = param_double(call, "lr", 0), wd = param_double(call, "weight_decay", 0);
  const double mu = param_double(call, "momentum", 0);
  for (const Point& p : call.index.points()) {
    const double w = *param.cell(p);
    double g = static_cast<double>(*grad.cell(p)) + wd * w;
    if (momentum) {
      const Operand<const T> v(call.input("velocity"));
      const Operand<T> v_next(call.output("velocity_next"));
      g = mu * static_cast<double>(*v.cell(p)) + g;
      *v_next.cell(p) = static_cast<T>(g);
    }
    *r.cell(p) = static_cast<T>(w - lr * g);
  }
}

template <typename T, typename S>
void adam(const KernelCall& call) {
  kernels::require_unit_cells(call);
  const Operand<const T> param(call.input("param")), grad(call.input("grad"));
  const Operand<const T> m(call.input("m")), v(call.input("v"));
  const Operand<const S> step(call.input("step"));
  const Operand<T> r(call.output("result")), m_next(call.output("m_next")),
      v_next(call.output("v_next"));
  const double lr = param_double(call, "lr", 1e-3), b1 = param_double(call, "beta1", 0.9);
  const double b2 = param_double(call, "beta2", 0.999), eps = param_double(call, "eps", 1e-8);
  const double wd = param_double(call, "weight_decay", 0);
  const bool decoupled = call.param_bool("decoupled", false);
  for (const Point& p : call.index.points()) {
    const auto t = static_cast<double>(*step.cell(p));
    if (t < 1) call.fail(fmt::format("step is {}, but updates count from 1", t));
    double w = *param.cell(p);
    double g = *grad.cell(p);
    if (decoupled) {
      w *= 1 - lr * wd;
    } else {
      g += wd * w;
    }
    const double m1 = b1 * static_cast<double>(*m.cell(p)) + (1 - b1) * g;
    const double v1 = b2 * static_cast<double>(*v.cell(p)) + (1 - b2) * g * g;
    const double m_hat = m1 / (1 - std::pow(b1, t));
    const double v_hat = v1 / (1 - std::pow(b2, t));
    *r.cell(p) = static_cast<T>(w - lr * m_hat / (std::sqrt(v_hat) + eps));
    *m_next.cell(p) = static_cast<T>(m1);
    *v_next.cell(p) = static_cast<T>(v1);
  }
}

void adam_kernel(const KernelCall& call) {
  const DType dtype = call.input("param").view.dtype();
  kernels::require_float(call, dtype);
  const DType step_dtype = call.input("step").view.dtype();
  if (step_dtype != DType::kInt32 && step_dtype != DType::kInt64) {
    call.fail(fmt::format("step must be i32 or i64, not {}", ir::dtype_name(step_dtype)));
  }
  visit_dtype(dtype, [&]<typename T>() {
    if constexpr (kernels::kIsFloat<T>) {
      if (step_dtype == DType::kInt32) {
        adam<T, std::int32_t>(call);
      } else {
        adam<T, std::int64_t>(call);
      }
    }
  });
}

}  // namespace

void register_training_kernels(ExecutableKernels& registry) {
  registry.add("softmax_grad", [](const KernelCall& c) {
    visit_float(c, [&]<typename T>() { softmax_grad<T>(c); });
  });
  registry.add("conv2d_grad_input", [](const KernelCall& c) {
    visit_float(c, [&]<typename T>() { conv2d_grad_input<T>(c); });
  });
  registry.add("conv2d_grad_weight", [](const KernelCall& c) {
    visit_float(c, [&]<typename T>() { conv2d_grad_weight<T>(c); });
  });
  registry.add("max_grad", [](const KernelCall& c) {
    visit_dtype(kernels::common_dtype(c), [&]<typename T>() { max_grad<T>(c); });
  });
  registry.add("reduce_grad", [](const KernelCall& c) {
    visit_float(c, [&]<typename T>() { reduce_grad<T>(c); });
  });
  registry.add("max_pool2d_grad", [](const KernelCall& c) {
    visit_float(c, [&]<typename T>() { pool_grad<T, false>(c); });
  });
  registry.add("avg_pool2d_grad", [](const KernelCall& c) {
    visit_float(c, [&]<typename T>() { pool_grad<T, true>(c); });
  });
  registry.add("mse",
               [](const KernelCall& c) { visit_float(c, [&]<typename T>() { mse<T>(c); }); });
  registry.add("mse_grad",
               [](const KernelCall& c) { visit_float(c, [&]<typename T>() { mse_grad<T>(c); }); });
  registry.add("cross_entropy", &cross_entropy_kernel<false>);
  registry.add("cross_entropy_grad", &cross_entropy_kernel<true>);
  registry.add(
      "sgd", [](const KernelCall& c) { visit_float(c, [&]<typename T>() { sgd<T>(c, false); }); });
  registry.add("sgd_momentum",
               [](const KernelCall& c) { visit_float(c, [&]<typename T>() { sgd<T>(c, true); }); });
  registry.add("adam", &adam_kernel);
}

}  // namespace tapestry::runtime
