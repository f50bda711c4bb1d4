// mlp_openblas: baseline (a) of bench/mlp_vs_baselines.sh — examples/mlp.tap computed directly:
//
//   H = relu(X·W1ᵀ + b1)     two cblas_sgemm calls (OpenBLAS, --threads threads), the biases
//   Y = H·W2ᵀ + b2           pre-filled into C (beta = 1) and a ReLU pass over H
//
// X [4096, 1024], W1 [4096, 1024], W2 [1024, 4096] by default. Prints one line per repetition
// and a final `median_s <seconds>` line the script reads.
//
//   build/release/bench/mlp_openblas [--threads 2] [--reps 5] [--batch 4096]
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

extern "C" void openblas_set_num_threads(int);  // not declared by every cblas.h

namespace {

void fill_random(std::vector<float>& v, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  for (float& x : v) x = dist(gen);
}

// C[rows, cols] = A[rows, k] · B[cols, k]ᵀ + bias, optionally followed by ReLU.
void linear(const std::vector<float>& a, const std::vector<float>& b,
            const std::vector<float>& bias, std::vector<float>& c, int rows, int cols, int k,
            bool relu) {
  for (int r = 0; r < rows; ++r)
    std::memcpy(&c[static_cast<std::size_t>(r) * cols], bias.data(), sizeof(float) * cols);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, cols, k, 1.0F, a.data(), k, b.data(),
              k, 1.0F, c.data(), cols);
  if (relu) {
    for (float& x : c) x = x > 0.0F ? x : 0.0F;
  }
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, reps = 5, batch = 4096;
  const int in = 1024, hidden = 4096, out = 1024;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--batch") == 0) batch = std::atoi(argv[i + 1]);
  }
  openblas_set_num_threads(threads);
  std::vector<float> x(static_cast<std::size_t>(batch) * in),
      w1(static_cast<std::size_t>(hidden) * in), b1(hidden),
      w2(static_cast<std::size_t>(out) * hidden), b2(out),
      h(static_cast<std::size_t>(batch) * hidden), y(static_cast<std::size_t>(batch) * out);
  fill_random(x, 1);
  fill_random(w1, 2);
  fill_random(b1, 3);
  fill_random(w2, 4);
  fill_random(b2, 5);
  const double flops = 2.0 * batch * in * hidden + 2.0 * batch * hidden * out;
  std::vector<double> times;
  for (int r = -1; r < reps; ++r) {  // two warm-up runs (page faults, thread start) first
    const auto t0 = std::chrono::steady_clock::now();
    linear(x, w1, b1, h, batch, hidden, in, true);
    linear(h, w2, b2, y, batch, out, hidden, false);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r < 1) continue;
    times.push_back(s);
    std::printf("openblas run %d: %.4f s  %.1f GFLOP/s\n", r, s, flops / s / 1e9);
  }
  std::sort(times.begin(), times.end());
  std::printf("median_s %.6f\n", times[times.size() / 2]);
  return 0;
}
