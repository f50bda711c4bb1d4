// fma_peak: the hardware limit the MLP benchmarks are measured against — a register-only loop of
// independent fused multiply-adds on every thread (no memory traffic), widest vectors the CPU has
// (AVX-512 when present, else AVX2 + FMA, chosen at run time).
//
//   build/ci/bench/fma_peak [--threads 2] [--seconds 0.5] [--op fma|bf16dot]
//
// Prints `isa <avx512|avx2>`, then `gflops <GFLOP/s>` for the whole machine over the given
// threads (2 FLOPs per lane per FMA), the best of 5 timed rounds. `--op bf16dot` measures the
// bfloat16 dot-product peak instead — the same loop on `vdpbf16ps` (AVX512_BF16: each float32
// lane adds the products of two bf16 pairs, 4 FLOPs per lane), the instruction oneDNN's bf16
// matmul runs on: it prints `isa avx512_bf16` and its gflops, or exits 3 when the CPU has no
// AVX512_BF16.
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

// 16 independent accumulators hide the FMA latency on two FMA pipes (4 cycles × 2 pipes = 8
// chains suffice; 16 leaves room for deeper pipelines).
constexpr int kChains = 16;

__attribute__((target("avx512f"))) double fma_loop_avx512(long iterations) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(0.001F * static_cast<float>(c));
  const __m512 a = _mm512_set1_ps(0.999999F);
  const __m512 b = _mm512_set1_ps(1e-7F);
  for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  }
  __m512 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm512_add_ps(sum, acc[c]);
  return static_cast<double>(_mm512_reduce_add_ps(sum));
}

__attribute__((target("avx2,fma"))) double fma_loop_avx2(long iterations) {
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(0.001F * static_cast<float>(c));
  const __m256 a = _mm256_set1_ps(0.999999F);
  const __m256 b = _mm256_set1_ps(1e-7F);
  for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  }
  __m256 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm256_add_ps(sum, acc[c]);
  float lanes[8];
  _mm256_storeu_ps(lanes, sum);
  double s = 0;
  for (float v : lanes) s += v;
  return s;
}

// vdpbf16ps: acc += a[2i]·b[2i] + a[2i+1]·b[2i+1] per float32 lane, 16 independent chains.
__attribute__((target("avx512f,avx512bf16"))) double bf16dot_loop_avx512(long iterations) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(0.001F * static_cast<float>(c));
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.999F), _mm512_set1_ps(0.998F));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-7F), _mm512_set1_ps(2e-7F));
  for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
  }
  __m512 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm512_add_ps(sum, acc[c]);
  return static_cast<double>(_mm512_reduce_add_ps(sum));
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  double seconds = 0.5;
  std::string op = "fma";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--seconds") == 0) seconds = std::atof(argv[i + 1]);
    if (std::strcmp(argv[i], "--op") == 0) op = argv[i + 1];
  }
  if (op != "fma" && op != "bf16dot") {
    std::fprintf(stderr, "fma_peak: --op must be fma or bf16dot\n");
    return 2;
  }
  if (threads < 1) {
    std::fprintf(stderr, "fma_peak: --threads must be >= 1\n");
    return 2;
  }
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f");
  const bool bf16 = op == "bf16dot";
  if (bf16 && !__builtin_cpu_supports("avx512bf16")) {
    std::fprintf(stderr, "fma_peak: this CPU has no AVX512_BF16 (vdpbf16ps)\n");
    return 3;
  }
  // FLOPs per chain per iteration: 2 per lane for an FMA, 4 per lane for a bf16 pair dot.
  const int lanes = bf16 ? 2 * 16 : avx512 ? 16 : 8;
  const auto loop = bf16 ? bf16dot_loop_avx512 : avx512 ? fma_loop_avx512 : fma_loop_avx2;
  // Calibrate the iteration count to about seconds / 5 per round on one thread.
  long iterations = 1 << 20;
  for (;;) {
    const auto t0 = std::chrono::steady_clock::now();
    volatile double sink = loop(iterations);
    (void)sink;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > seconds / 10) {
      iterations = static_cast<long>(static_cast<double>(iterations) * (seconds / 5) / s) + 1;
      break;
    }
    iterations *= 2;
  }
  double best = 0;
  for (int round = 0; round < 5; ++round) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<double> sinks(static_cast<std::size_t>(threads));
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        ready.fetch_add(1);
        while (!go.load()) {
        }
        sinks[static_cast<std::size_t>(t)] = loop(iterations);
      });
    }
    while (ready.load() < threads) {
    }
    const auto t0 = std::chrono::steady_clock::now();
    go.store(true);
    for (std::thread& t : pool) t.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double flops = 2.0 * lanes * kChains * static_cast<double>(iterations) * threads;
    best = std::max(best, flops / s / 1e9);
  }
  std::printf("isa %s\ngflops %.1f\n", bf16 ? "avx512_bf16" : avx512 ? "avx512" : "avx2", best);
  return 0;
}
