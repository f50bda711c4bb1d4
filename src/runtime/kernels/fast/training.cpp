// Fast training kernels (kernels/training.yaml): the index box as loops over raw pointers
// (fast_support.h) — elementwise updates as one loop nest over all ports, row kernels
// (softmax_grad, max_grad) per row, pooling gradients per plane, losses over whole tensors;
// conv2d's gradients are conv_grad.cpp's. The arithmetic is the reference kernels' (float64
// inside, rounded once; the same order), so both sets agree bitwise. Mixed dtypes and
// unexpected cells run the reference kernel.
#include <cmath>

#include <fmt/format.h>

#include "../scalar_ops.h"
#include "conv_grad.h"
#include "fast_support.h"

namespace tapestry::runtime::fast {

namespace {

double param_double(const KernelCall& call, std::string_view name, double fallback) {
  if (call.params == nullptr || !call.params->contains(name)) return fallback;
  return call.params->at(std::string(name)).get<double>();
}

bool all_unit_cells(const KernelCall& call) {
  for (const auto& e : call.inputs.entries()) {
    if (!has_unit_cells(*e.value.ipf)) return false;
  }
  for (const auto& e : call.outputs.entries()) {
    if (!has_unit_cells(*e.value.ipf)) return false;
  }
  return true;
}

// Runs `body<T>()` for a float32 or float64 call whose ports share the dtype and `ok()` holds;
// else the reference kernel.
template <typename Ok, typename Body>
void run_float(const KernelCall& call, Ok&& ok, Body&& body) {
  const std::optional<DType> dtype = uniform_dtype(call);
  if (!dtype || call.index.is_empty() || !ok()) {
    run_reference(call);
    return;
  }
  if (*dtype == DType::kFloat32) {
    body.template operator()<float>();
  } else if (*dtype == DType::kFloat64) {
    body.template operator()<double>();
  } else {
    run_reference(call);
    return;
  }
  count_fast();
}

// ---- softmax_grad: one row per index point ---------------------------------------------------
template <typename T>
void softmax_grad(const KernelCall& call) {
  const InputPort& y = call.input("y");
  const InputPort& d = call.input("d_result");
  const OutputPort& r = call.output("result");
  const std::size_t axis = y.view.rank() - 1;
  const std::int64_t n = y.ipf->shape()[axis];
  const std::int64_t sy = y.view.stride(axis), sd = d.view.stride(axis), sr = r.view.stride(axis);
  const Strided<const T> ys = strided<const T>(y, call.index), ds = strided<const T>(d, call.index);
  const Strided<T> rs = strided<T>(r, call.index);
  const Nest<3> nest = make_nest<3>(call.index, {&ys.coef, &ds.coef, &rs.coef});
  for_each_run(nest, [&](const auto& at, std::int64_t len, const auto& stride) {
    for (std::int64_t e = 0; e < len; ++e) {
      const T* yr = ys.base + at[0] + e * stride[0];
      const T* dr = ds.base + at[1] + e * stride[1];
      T* out = rs.base + at[2] + e * stride[2];
      double dot = 0;
      for (std::int64_t k = 0; k < n; ++k) {
        dot += static_cast<double>(yr[k * sy]) * static_cast<double>(dr[k * sd]);
      }
      for (std::int64_t k = 0; k < n; ++k) {
        out[k * sr] = static_cast<T>(static_cast<double>(yr[k * sy]) *
                                     (static_cast<double>(dr[k * sd]) - dot));
      }
    }
  });
}

bool rows_only(const KernelCall& call, std::string_view port) {
  const Point& s = call.input(port).ipf->shape();
  if (s.rank() == 0) return false;
  for (std::size_t k = 0; k + 1 < s.rank(); ++k) {
    if (s[k] != 1) return false;
  }
  return call.output("result").ipf->shape() == s;
}

// ---- max_grad: one reduced row per index point -----------------------------------------------
template <typename T>
void max_grad(const KernelCall& call) {
  const InputPort& x = call.input("x");
  const auto dim = static_cast<std::size_t>(call.param_int("dim", 0));
  const std::int64_t n = x.ipf->shape()[dim];
  const std::int64_t sx = x.view.stride(dim), sr = call.output("result").view.stride(dim);
  const Strided<const T> xs = strided<const T>(x, call.index);
  const Strided<const T> ys = strided<const T>(call.input("y"), call.index);
  const Strided<const T> ds = strided<const T>(call.input("d_result"), call.index);
  const Strided<T> rs = strided<T>(call.output("result"), call.index);
  const Nest<4> nest = make_nest<4>(call.index, {&xs.coef, &ys.coef, &ds.coef, &rs.coef});
  for_each_run(nest, [&](const auto& at, std::int64_t len, const auto& stride) {
    for (std::int64_t e = 0; e < len; ++e) {
      const T* xr = xs.base + at[0] + e * stride[0];
      const T m = ys.base[at[1] + e * stride[1]];
      const T d = ds.base[at[2] + e * stride[2]];
      T* out = rs.base + at[3] + e * stride[3];
      std::int64_t hit = n;
      for (std::int64_t k = 0; k < n && hit == n; ++k) {
        const T v = xr[k * sx];
        if (v == m || (std::isnan(v) && std::isnan(m))) hit = k;
      }
      for (std::int64_t k = 0; k < n; ++k) out[k * sr] = k == hit ? d : T{0};
    }
  });
}

bool max_grad_layout(const KernelCall& call) {
  const auto dim = static_cast<std::size_t>(call.param_int("dim", 0));
  const Point& s = call.input("x").ipf->shape();
  if (dim >= s.rank() || call.output("result").ipf->shape() != s) return false;
  for (std::size_t k = 0; k < s.rank(); ++k) {
    if (k != dim && s[k] != 1) return false;
  }
  return has_unit_cells(*call.input("y").ipf) && has_unit_cells(*call.input("d_result").ipf);
}

// ---- pooling gradients: index [n, c, oh, ow], planes of the result ---------------------------
// A split reduction (oh or ow) adds a leading block dim of extent 1 per call and a leading dim
// to the result: `z` counts it.
template <typename T, bool kAverage>
void pool_grad(const KernelCall& call) {
  const InputPort& x = call.input("x");
  const OutputPort& r = call.output("result");
  const std::int64_t k = call.param_int("kernel", 1);
  const Range& index = call.index;
  const std::size_t z = index.rank() - 4;
  const Strided<const T> xs = strided<const T>(x, index);
  const Strided<const T> ds = strided<const T>(call.input("d_result"), index);
  const Strided<T> rs = strided<T>(r, index);
  const std::size_t rr = r.view.rank();
  const std::int64_t x2 = x.view.stride(2), x3 = x.view.stride(3);
  const std::int64_t r2 = r.view.stride(rr - 2), r3 = r.view.stride(rr - 1);
  const std::int64_t h = r.ipf->shape()[rr - 2], w = r.ipf->shape()[rr - 1];
  // The first window of the box relative to x's first cell, and how oh and ow move it.
  const zspace::AffineMap& map = x.ipf->map();
  std::int64_t h0 = 0, w0 = 0;
  for (std::size_t j = 0; j < map.in_rank(); ++j) {
    h0 += map.at(2, j) * index.start()[j];
    w0 += map.at(3, j) * index.start()[j];
  }
  const std::int64_t sh = map.at(2, z + 2), sw = map.at(3, z + 3);
  for (std::int64_t a = 0; a < index.extent(z); ++a) {
    for (std::int64_t b = 0; b < index.extent(z + 1); ++b) {
      T* plane = rs.base + a * rs.coef[z] + b * rs.coef[z + 1];
      for (std::int64_t y = 0; y < h; ++y) {
        for (std::int64_t q = 0; q < w; ++q) plane[y * r2 + q * r3] = T{0};
      }
      for (std::int64_t oy = 0; oy < index.extent(z + 2); ++oy) {
        for (std::int64_t ox = 0; ox < index.extent(z + 3); ++ox) {
          const std::int64_t at =
              a * ds.coef[z] + b * ds.coef[z + 1] + oy * ds.coef[z + 2] + ox * ds.coef[z + 3];
          const T d = ds.base[at];
          T* win = plane + (h0 + oy * sh) * r2 + (w0 + ox * sw) * r3;
          if constexpr (kAverage) {
            const T share = static_cast<T>(static_cast<double>(d) / static_cast<double>(k * k));
            for (std::int64_t i = 0; i < k; ++i) {
              for (std::int64_t j = 0; j < k; ++j) win[i * r2 + j * r3] += share;
            }
          } else {
            const T* xw = xs.base + a * xs.coef[z] + b * xs.coef[z + 1] + oy * xs.coef[z + 2] +
                          ox * xs.coef[z + 3];
            std::int64_t bi = 0, bj = 0;
            T best = xw[0];
            for (std::int64_t i = 0; i < k && !std::isnan(best); ++i) {
              for (std::int64_t j = 0; j < k; ++j) {
                const T v = xw[i * x2 + j * x3];
                if (std::isnan(v) || v > best) {
                  best = v, bi = i, bj = j;
                  if (std::isnan(v)) break;
                }
              }
            }
            win[bi * r2 + bj * r3] += d;
          }
        }
      }
    }
  }
}

bool pool_grad_layout(const KernelCall& call) {
  const Range& index = call.index;
  const Point& rs = call.output("result").ipf->shape();
  const Point& xs = call.input("x").ipf->shape();
  const bool block = index.rank() == 5 && index.extent(0) == 1 && rs.rank() == 5 && rs[0] == 1;
  if (!(index.rank() == 4 && rs.rank() == 4) && !block) return false;
  const std::size_t z = rs.rank() - 4;
  return rs[z] == 1 && rs[z + 1] == 1 && xs.rank() == 4 && xs[0] == 1 && xs[1] == 1 &&
         has_unit_cells(*call.input("d_result").ipf);
}

// ---- losses: rows of [n, f] tensors, one row per index point --------------------------------
// The block's rows: the index's last dim (n); any dims before it (a split reduction's block dim)
// must have extent 1. Returns 0 when they do not (the reference kernel runs) or the index is
// empty.
std::int64_t loss_rows(const KernelCall& call) {
  const Range& index = call.index;
  if (index.rank() == 0 || index.is_empty()) return 0;
  for (std::size_t d = 0; d + 1 < index.rank(); ++d) {
    if (index.extent(d) != 1) return 0;
  }
  return index.extent(index.rank() - 1);
}

// The divisor the operation records; 0 when it is missing (the reference kernel reports it).
double loss_count(const KernelCall& call) {
  return static_cast<double>(std::max<std::int64_t>(call.param_int("count", 0), 0));
}

template <typename T>
bool mse(const KernelCall& call, bool grad) {
  const InputPort& p = call.input("pred");
  const InputPort& t = call.input("target");
  const OutputPort& r = call.output("result");
  const std::int64_t rows = loss_rows(call);
  const double count = loss_count(call);
  if (rows == 0 || count == 0) return false;
  const std::size_t n = call.index.rank() - 1;
  const Strided<const T> sp = strided<const T>(p, call.index), st = strided<const T>(t, call.index);
  const T* ps = sp.base;
  const T* ts = st.base;
  const Strided<T> sr = strided<T>(r, call.index);
  T* rs = sr.base;
  const std::int64_t cols = p.ipf->shape()[1];
  const std::int64_t p0 = sp.coef[n], p1 = p.view.stride(1);
  const std::int64_t t0 = st.coef[n], t1 = t.view.stride(1);
  if (grad) {
    const double scale =
        2 * static_cast<double>(*strided<const T>(call.input("d_result"), call.index).base) / count;
    const std::int64_t r0 = sr.coef[n], r1 = r.view.stride(1);
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t j = 0; j < cols; ++j) {
        rs[i * r0 + j * r1] = static_cast<T>(
            (static_cast<double>(ps[i * p0 + j * p1]) - static_cast<double>(ts[i * t0 + j * t1])) *
            scale);
      }
    }
    return true;
  }
  double sum = 0;
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) {
      const double e =
          static_cast<double>(ps[i * p0 + j * p1]) - static_cast<double>(ts[i * t0 + j * t1]);
      sum += e * e;
    }
  }
  *rs = static_cast<T>(sum / count);
  return true;
}

template <typename T, typename L>
bool cross_entropy(const KernelCall& call, bool grad) {
  const InputPort& logits = call.input("logits");
  const InputPort& labels = call.input("labels");
  const OutputPort& r = call.output("result");
  const std::int64_t rows = loss_rows(call);
  const double count = loss_count(call);
  if (rows == 0 || count == 0) return false;
  const std::size_t n = call.index.rank() - 1;
  const Strided<const T> sx = strided<const T>(logits, call.index);
  const Strided<const L> sls = strided<const L>(labels, call.index);
  const Strided<T> sr = strided<T>(r, call.index);
  const T* x = sx.base;
  const L* ls = sls.base;
  T* rs = sr.base;
  const std::int64_t classes = logits.ipf->shape()[1];
  const std::int64_t s0 = sx.coef[n], s1 = logits.view.stride(1);
  const std::int64_t sl = sls.coef[n];
  for (std::int64_t i = 0; i < rows; ++i) {
    const auto l = static_cast<std::int64_t>(ls[i * sl]);
    if (l < 0 || l >= classes) return false;  // the reference kernel reports it
  }
  if (grad) {
    const double scale =
        static_cast<double>(*strided<const T>(call.input("d_result"), call.index).base) / count;
    const std::int64_t r0 = sr.coef[n], r1 = r.view.stride(1);
    for (std::int64_t i = 0; i < rows; ++i) {
      const auto l = static_cast<std::int64_t>(ls[i * sl]);
      const double lse = kernels::scalar::log_sum_exp(x + i * s0, s1, classes);
      for (std::int64_t k = 0; k < classes; ++k) {
        const double prob = std::exp(static_cast<double>(x[i * s0 + k * s1]) - lse);
        rs[i * r0 + k * r1] = static_cast<T>((prob - (k == l ? 1.0 : 0.0)) * scale);
      }
    }
    return true;
  }
  double sum = 0;
  for (std::int64_t i = 0; i < rows; ++i) {
    const auto l = static_cast<std::int64_t>(ls[i * sl]);
    sum += kernels::scalar::log_sum_exp(x + i * s0, s1, classes) -
           static_cast<double>(x[i * s0 + l * s1]);
  }
  *rs = static_cast<T>(sum / count);
  return true;
}

template <bool kGrad>
void cross_entropy_kernel(const KernelCall& call) {
  const DType dtype = call.input("logits").view.dtype();
  const DType label_dtype = call.input("labels").view.dtype();
  bool done = false;
  const auto run = [&]<typename T>() {
    if (label_dtype == DType::kInt32) done = cross_entropy<T, std::int32_t>(call, kGrad);
    if (label_dtype == DType::kInt64) done = cross_entropy<T, std::int64_t>(call, kGrad);
  };
  if (!call.index.is_empty() && call.output("result").view.dtype() == dtype &&
      (!kGrad || call.input("d_result").view.dtype() == dtype)) {
    if (dtype == DType::kFloat32) run.template operator()<float>();
    if (dtype == DType::kFloat64) run.template operator()<double>();
  }
  if (done) {
    count_fast();
  } else {
    run_reference(call);
  }
}

// ---- optimizer updates: one loop nest over every port ----------------------------------------
template <typename T>
void sgd(const KernelCall& call, bool momentum) {
  const double lr = param_double(call, "lr", 0), wd = param_double(call, "weight_decay", 0);
  const double mu = param_double(call, "momentum", 0);
  const Range& index = call.index;
  const Strided<const T> p = strided<const T>(call.input("param"), index);
  const Strided<const T> g = strided<const T>(call.input("grad"), index);
  const Strided<T> r = strided<T>(call.output("result"), index);
  // Without momentum the velocity ports are the parameter's (read, never written).
  const Strided<const T> v = momentum ? strided<const T>(call.input("velocity"), index) : p;
  const Strided<T> vn = momentum ? strided<T>(call.output("velocity_next"), index) : r;
  const Nest<5> nest = make_nest<5>(index, {&p.coef, &g.coef, &r.coef, &v.coef, &vn.coef});
  for_each_run(nest, [&](const auto& at, std::int64_t len, const auto& stride) {
    for (std::int64_t e = 0; e < len; ++e) {
      const double w = p.base[at[0] + e * stride[0]];
      double step = static_cast<double>(g.base[at[1] + e * stride[1]]) + wd * w;
      if (momentum) {
        step = mu * static_cast<double>(v.base[at[3] + e * stride[3]]) + step;
        vn.base[at[4] + e * stride[4]] = static_cast<T>(step);
      }
      r.base[at[2] + e * stride[2]] = static_cast<T>(w - lr * step);
    }
  });
}

template <typename T, typename S>
bool adam(const KernelCall& call) {
  const double lr = param_double(call, "lr", 1e-3), b1 = param_double(call, "beta1", 0.9);
  const double b2 = param_double(call, "beta2", 0.999), eps = param_double(call, "eps", 1e-8);
  const double wd = param_double(call, "weight_decay", 0);
  const bool decoupled = call.param_bool("decoupled", false);
  const Range& index = call.index;
  const auto t = static_cast<double>(*strided<const S>(call.input("step"), index).base);
  if (t < 1) return false;  // the reference kernel reports it
  const Strided<const T> p = strided<const T>(call.input("param"), index);
  const Strided<const T> g = strided<const T>(call.input("grad"), index);
  const Strided<const T> m = strided<const T>(call.input("m"), index);
  const Strided<const T> v = strided<const T>(call.input("v"), index);
  const Strided<T> r = strided<T>(call.output("result"), index);
  const Strided<T> mn = strided<T>(call.output("m_next"), index);
  const Strided<T> vn = strided<T>(call.output("v_next"), index);
  const Nest<7> nest =
      make_nest<7>(index, {&p.coef, &g.coef, &m.coef, &v.coef, &r.coef, &mn.coef, &vn.coef});
  const double c1 = 1 - std::pow(b1, t), c2 = 1 - std::pow(b2, t);
  for_each_run(nest, [&](const auto& at, std::int64_t len, const auto& s) {
    for (std::int64_t e = 0; e < len; ++e) {
      double w = p.base[at[0] + e * s[0]];
      double gv = g.base[at[1] + e * s[1]];
      if (decoupled) {
        w *= 1 - lr * wd;
      } else {
        gv += wd * w;
      }
      const double m1 = b1 * static_cast<double>(m.base[at[2] + e * s[2]]) + (1 - b1) * gv;
      const double v1 = b2 * static_cast<double>(v.base[at[3] + e * s[3]]) + (1 - b2) * gv * gv;
      r.base[at[4] + e * s[4]] = static_cast<T>(w - lr * (m1 / c1) / (std::sqrt(v1 / c2) + eps));
      mn.base[at[5] + e * s[5]] = static_cast<T>(m1);
      vn.base[at[6] + e * s[6]] = static_cast<T>(v1);
    }
  });
  return true;
}

void adam_kernel(const KernelCall& call) {
  const DType dtype = call.input("param").view.dtype();
  const DType step_dtype = call.input("step").view.dtype();
  bool same = true;
  for (std::string_view port : {"grad", "m", "v"})
    same = same && call.input(port).view.dtype() == dtype;
  for (std::string_view port : {"result", "m_next", "v_next"}) {
    same = same && call.output(port).view.dtype() == dtype;
  }
  bool done = false;
  const auto run = [&]<typename T>() {
    if (step_dtype == DType::kInt32) done = adam<T, std::int32_t>(call);
    if (step_dtype == DType::kInt64) done = adam<T, std::int64_t>(call);
  };
  if (same && !call.index.is_empty() && all_unit_cells(call)) {
    if (dtype == DType::kFloat32) run.template operator()<float>();
    if (dtype == DType::kFloat64) run.template operator()<double>();
  }
  if (done) {
    count_fast();
  } else {
    run_reference(call);
  }
}

}  // namespace

void register_fast_training(ExecutableKernels& registry) {
  registry.add("softmax_grad", [](const KernelCall& c) {
    run_float(
        c, [&] { return rows_only(c, "y") && rows_only(c, "d_result"); },
        [&]<typename T>() { softmax_grad<T>(c); });
  });
  registry.add("conv2d_grad_input", &conv2d_grad_input_kernel);
  registry.add("conv2d_grad_weight", &conv2d_grad_weight_kernel);
  registry.add("max_grad", [](const KernelCall& c) {
    run_float(
        c, [&] { return max_grad_layout(c); }, [&]<typename T>() { max_grad<T>(c); });
  });
  registry.add("max_pool2d_grad", [](const KernelCall& c) {
    run_float(
        c, [&] { return pool_grad_layout(c); }, [&]<typename T>() { pool_grad<T, false>(c); });
  });
  registry.add("avg_pool2d_grad", [](const KernelCall& c) {
    run_float(
        c, [&] { return pool_grad_layout(c); }, [&]<typename T>() { pool_grad<T, true>(c); });
  });
  registry.add("mse", [](const KernelCall& c) {
    run_float(
        c, [&] { return loss_rows(c) > 0 && loss_count(c) > 0; },
        [&]<typename T>() { (void)mse<T>(c, false); });
  });
  registry.add("mse_grad", [](const KernelCall& c) {
    run_float(
        c, [&] { return loss_rows(c) > 0 && loss_count(c) > 0; },
        [&]<typename T>() { (void)mse<T>(c, true); });
  });
  registry.add("cross_entropy", &cross_entropy_kernel<false>);
  registry.add("cross_entropy_grad", &cross_entropy_kernel<true>);
  registry.add("sgd", [](const KernelCall& c) {
    run_float(
        c, [&] { return all_unit_cells(c); }, [&]<typename T>() { sgd<T>(c, false); });
  });
  registry.add("sgd_momentum", [](const KernelCall& c) {
    run_float(
        c, [&] { return all_unit_cells(c); }, [&]<typename T>() { sgd<T>(c, true); });
  });
  registry.add("adam", &adam_kernel);
}

}  // namespace tapestry::runtime::fast
