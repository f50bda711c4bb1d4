// mlp_openblas: baseline (a) of bench/mlp_baselines.sh — examples/mlp.tap computed directly:
//
//   H = relu(X·W1ᵀ + b1)     two cblas_sgemm calls (OpenBLAS, --threads threads), the biases
//   Y = H·W2ᵀ + b2           pre-filled into C (beta = 1) and a ReLU pass over H
//
// The bias fill and the ReLU pass are split over --threads std::threads too, so no part of the
// baseline runs single-threaded. Set OPENBLAS_CORETYPE (e.g. SKYLAKEX for its AVX-512 kernels)
// to force a kernel; `coretype` names the one OpenBLAS chose.
//
//   build/ci/bench/mlp_openblas [--threads 2] [--reps 5] [--batch 4096] [--inputs DIR] [--out
//   Y.npy]
//
// --inputs reads X, W1, b1, W2, b2 from DIR/<name>.npy (float32; else seeded random values);
// --out writes Y. Prints one line per timed repetition (after two untimed ones) and
// `median_s <seconds>` (the middle one, or the mean of the middle two).
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "mlp_inputs.h"
#include "tapestry/runtime/npy.h"

extern "C" void openblas_set_num_threads(int);  // not declared by every cblas.h
extern "C" char* openblas_get_corename(void);

namespace {

using tapestry::runtime::Buffer;

// fn(first_row, end_row) on `threads` threads, rows split evenly.
template <typename Fn>
void parallel_rows(int threads, long rows, Fn fn) {
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    const long a = rows * t / threads, b = rows * (t + 1) / threads;
    pool.emplace_back([=] { fn(a, b); });
  }
  for (std::thread& t : pool) t.join();
}

// C[rows, cols] = A[rows, k] · B[cols, k]ᵀ + bias, optionally followed by ReLU.
void linear(const std::vector<float>& a, const std::vector<float>& b,
            const std::vector<float>& bias, std::vector<float>& c, long rows, long cols, long k,
            bool relu, int threads) {
  parallel_rows(threads, rows, [&](long r0, long r1) {
    for (long r = r0; r < r1; ++r) std::memcpy(&c[r * cols], bias.data(), sizeof(float) * cols);
  });
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rows),
              static_cast<int>(cols), static_cast<int>(k), 1.0F, a.data(), static_cast<int>(k),
              b.data(), static_cast<int>(k), 1.0F, c.data(), static_cast<int>(cols));
  if (relu) {
    parallel_rows(threads, rows, [&](long r0, long r1) {
      float* p = c.data() + r0 * cols;
      for (long i = 0, n = (r1 - r0) * cols; i < n; ++i) p[i] = p[i] > 0.0F ? p[i] : 0.0F;
    });
  }
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, reps = 5;
  long batch = 4096;
  std::string inputs, out;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--batch") == 0) batch = std::atol(argv[i + 1]);
    if (std::strcmp(argv[i], "--inputs") == 0) inputs = argv[i + 1];
    if (std::strcmp(argv[i], "--out") == 0) out = argv[i + 1];
  }
  if (threads < 1 || reps < 1 || batch < 1) {
    std::fprintf(stderr, "mlp_openblas: --threads, --reps and --batch must be >= 1\n");
    return 2;
  }
  const long in = 1024, hidden = 4096, outs = 1024;
  openblas_set_num_threads(threads);
  std::printf("coretype %s\n", openblas_get_corename());
  std::vector<float> x = mlp_bench::load("mlp_openblas", inputs, "X", batch * in, 1),
                     w1 = mlp_bench::load("mlp_openblas", inputs, "W1", hidden * in, 2),
                     b1 = mlp_bench::load("mlp_openblas", inputs, "b1", hidden, 3),
                     w2 = mlp_bench::load("mlp_openblas", inputs, "W2", outs * hidden, 4),
                     b2 = mlp_bench::load("mlp_openblas", inputs, "b2", outs, 5);
  std::vector<float> h(batch * hidden), y(batch * outs);
  const double flops = 2.0 * batch * in * hidden + 2.0 * batch * hidden * outs;
  std::vector<double> times;
  for (int r = -2; r < reps; ++r) {  // two untimed runs first (page faults, thread start)
    const auto t0 = std::chrono::steady_clock::now();
    linear(x, w1, b1, h, batch, hidden, in, true, threads);
    linear(h, w2, b2, y, batch, outs, hidden, false, threads);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r < 0) continue;
    times.push_back(s);
    std::printf("openblas run %d: %.4f s  %.1f GFLOP/s\n", r + 1, s, flops / s / 1e9);
  }
  std::printf("median_s %.6f\n", mlp_bench::median(times));
  if (!out.empty()) {
    tapestry::runtime::write_npy(
        out, Buffer::from_values<float>(tapestry::zspace::Range::of_shape({batch, outs}), y));
  }
  return 0;
}
