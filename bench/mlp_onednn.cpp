// mlp_onednn: the strongest baseline a C++ user could write by hand for examples/mlp.tap —
// two oneDNN matmul primitives, bias and ReLU fused as the primitives' own bias and post-op:
//
//   H = relu(X·W1ᵀ + b1)     matmul(src X [B, 1024], weights W1ᵀ, bias b1) + eltwise_relu post-op
//   Y = H·W2ᵀ + b2           matmul(src H [B, 4096], weights W2ᵀ, bias b2)
//
// The weights stay in the graph's [out, in] layout, read as [in, out] through a transposed
// memory descriptor (format tag `ba`), as Tapestry reads them. Primitives are created once, before
// timing. oneDNN's OpenMP runtime runs --threads threads.
//
//   build/ci/bench/mlp_onednn [--threads 2] [--reps 5] [--batch 4096] [--inputs DIR] [--out Y.npy]
//                             [--dtype f32|bf16]
//
// --inputs reads X, W1, b1, W2, b2 from DIR/<name>.npy (float32; else seeded random values);
// --out writes Y (float32). --dtype bf16 stores every tensor in bfloat16 (the inputs rounded to
// nearest even, as `tapestry run` rounds them into a bf16 graph) and runs oneDNN's bf16 matmul
// (f32 accumulation, bias and ReLU on the accumulator, H and Y rounded once) — the baseline of
// examples/mlp.tap in bf16 (bench/mixed_precision.sh). Prints one line per timed repetition (after
// two untimed ones) and `median_s <seconds>`.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "mlp_inputs.h"
#include "tapestry/runtime/half_float.h"
#include "tapestry/runtime/npy.h"

extern "C" void omp_set_num_threads(int num_threads);

using tapestry::runtime::Buffer;

int main(int argc, char** argv) {
  int threads = 2, reps = 5;
  long batch = 4096;
  std::string inputs, out, dtype = "f32";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--batch") == 0) batch = std::atol(argv[i + 1]);
    if (std::strcmp(argv[i], "--inputs") == 0) inputs = argv[i + 1];
    if (std::strcmp(argv[i], "--out") == 0) out = argv[i + 1];
    if (std::strcmp(argv[i], "--dtype") == 0) dtype = argv[i + 1];
  }
  if (threads < 1 || reps < 1 || batch < 1 || (dtype != "f32" && dtype != "bf16")) {
    std::fprintf(stderr,
                 "mlp_onednn: --threads, --reps and --batch must be >= 1, --dtype f32 or bf16\n");
    return 2;
  }
  omp_set_num_threads(threads);
  const long in = 1024, hidden = 4096, outs = 1024;
  std::vector<float> x = mlp_bench::load("mlp_onednn", inputs, "X", batch * in, 1),
                     w1 = mlp_bench::load("mlp_onednn", inputs, "W1", hidden * in, 2),
                     b1 = mlp_bench::load("mlp_onednn", inputs, "b1", hidden, 3),
                     w2 = mlp_bench::load("mlp_onednn", inputs, "W2", outs * hidden, 4),
                     b2 = mlp_bench::load("mlp_onednn", inputs, "b2", outs, 5);
  std::vector<float> h(batch * hidden), y(batch * outs);
  // bf16: the same tensors rounded, stored in 16 bits (H and Y written by oneDNN).
  const bool bf16 = dtype == "bf16";
  const auto narrow = [&](const std::vector<float>& v) {
    std::vector<tapestry::runtime::BFloat16> r;
    if (bf16) {
      r.reserve(v.size());
      for (float f : v) r.push_back(tapestry::runtime::to_bfloat16(f));
    }
    return r;
  };
  auto x16 = narrow(x), w116 = narrow(w1), b116 = narrow(b1), w216 = narrow(w2), b216 = narrow(b2),
       h16 = narrow(h), y16 = narrow(y);
  const auto data = [&](std::vector<float>& f, std::vector<tapestry::runtime::BFloat16>& b) {
    return bf16 ? static_cast<void*>(b.data()) : static_cast<void*>(f.data());
  };

  using dnnl::memory;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const auto type = bf16 ? memory::data_type::bf16 : memory::data_type::f32;
  const auto md = [&](memory::dims dims, memory::format_tag tag) {
    return memory::desc(dims, type, tag);
  };
  // First layer: bias + ReLU post-op.
  const memory::desc x_md = md({batch, in}, memory::format_tag::ab);
  const memory::desc w1_md =
      md({in, hidden}, memory::format_tag::ba);  // W1 [hidden, in] read transposed
  const memory::desc b1_md = md({1, hidden}, memory::format_tag::ab);
  const memory::desc h_md = md({batch, hidden}, memory::format_tag::ab);
  dnnl::post_ops relu;
  relu.append_eltwise(1.0F, dnnl::algorithm::eltwise_relu, 0.0F, 0.0F);  // oneDNN 2.x
  dnnl::primitive_attr attr1;
  attr1.set_post_ops(relu);
  const dnnl::matmul::primitive_desc pd1(dnnl::matmul::desc(x_md, w1_md, b1_md, h_md), attr1,
                                         engine);
  const dnnl::matmul mm1(pd1);
  // Second layer: bias only.
  const memory::desc w2_md = md({hidden, outs}, memory::format_tag::ba);
  const memory::desc b2_md = md({1, outs}, memory::format_tag::ab);
  const memory::desc y_md = md({batch, outs}, memory::format_tag::ab);
  const dnnl::matmul::primitive_desc pd2(dnnl::matmul::desc(h_md, w2_md, b2_md, y_md), engine);
  const dnnl::matmul mm2(pd2);
  memory x_m(x_md, engine, data(x, x16)), w1_m(w1_md, engine, data(w1, w116)),
      b1_m(b1_md, engine, data(b1, b116)), h_m(h_md, engine, data(h, h16)),
      w2_m(w2_md, engine, data(w2, w216)), b2_m(b2_md, engine, data(b2, b216)),
      y_m(y_md, engine, data(y, y16));

  const double flops = 2.0 * batch * in * hidden + 2.0 * batch * hidden * outs;
  std::vector<double> times;
  for (int r = -2; r < reps; ++r) {  // two untimed runs first (JIT, page faults, OpenMP start)
    const auto t0 = std::chrono::steady_clock::now();
    mm1.execute(stream, {{DNNL_ARG_SRC, x_m},
                         {DNNL_ARG_WEIGHTS, w1_m},
                         {DNNL_ARG_BIAS, b1_m},
                         {DNNL_ARG_DST, h_m}});
    mm2.execute(stream, {{DNNL_ARG_SRC, h_m},
                         {DNNL_ARG_WEIGHTS, w2_m},
                         {DNNL_ARG_BIAS, b2_m},
                         {DNNL_ARG_DST, y_m}});
    stream.wait();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r < 0) continue;
    times.push_back(s);
    std::printf("onednn %s run %d: %.4f s  %.1f GFLOP/s\n", dtype.c_str(), r + 1, s,
                flops / s / 1e9);
  }
  std::printf("median_s %.6f\n", mlp_bench::median(times));
  if (!out.empty()) {
    if (bf16) {
      for (std::size_t i = 0; i < y.size(); ++i) y[i] = tapestry::runtime::to_float(y16[i]);
    }
    tapestry::runtime::write_npy(
        out, Buffer::from_values<float>(tapestry::zspace::Range::of_shape({batch, outs}), y));
  }
  return 0;
}
