// unary_bench: the fast unary kernels' times, for bench/unary_vs_torch.py (which runs PyTorch on
// the same arrays in the same run and prints the ratios; docs/performance.md, "Unary kernels").
//
//   unary_bench N THREADS REPEATS
//
// For each kernel (relu, neg, exp, tanh, sigmoid, gelu, sqrt, add, softmax over rows of 1024)
// on N float32 elements (values in [−4, 4), like activations), and for a memcpy of the same
// bytes (read N·4, write N·4: the copy bandwidth a memory-bound unary map is held against), one
// line
//
//   tapestry <kernel> <N> <THREADS> <best ms over REPEATS>
//
// THREADS = 2 splits the array in two halves, each with its own buffers, run by two threads that
// wait on a barrier between repeats (what the block executor does with two tiles, without its
// scheduling); the time is the slower half's. The kernel is fast_kernels()'s, called directly with
// a KernelCall, and so runs the instruction-set clone cpuid picks (stderr names it).
#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "tapestry/runtime/buffer.h"
#include "tapestry/runtime/fast_kernels.h"

namespace {

using namespace tapestry;
using namespace tapestry::runtime;
using zspace::AffineMap;
using zspace::IndexProjection;

constexpr std::int64_t kRow = 1024;  // softmax's row length

void fill_values(Buffer& b, std::uint32_t seed) {
  std::uint32_t s = seed * 2654435761u + 1;
  for (float& x : b.values<float>()) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(s >> 8) * 0x1p-24f * 8.0f - 4.0f;
  }
}

// One thread's share: its arrays and the call that maps them.
struct Share {
  Buffer a, b, r;
  IndexProjection id = IndexProjection::identity(2);
  IndexProjection row;
  std::vector<std::string> names{"d0", "d1"};
  std::vector<std::string> row_names{"batch"};
  KernelCall call;
  KernelFn fn = nullptr;
  std::vector<float> from, to;  // memcpy's

  Share(const std::string& kernel, std::int64_t n, std::uint32_t seed)
      : a(DType::kFloat32, Range::of_shape({n / kRow, kRow})),
        b(a),
        r(a),
        row(AffineMap::from_rows({{1}, {0}}, Point::zeros(2)), Point{1, kRow}) {
    fill_values(a, seed);
    fill_values(b, seed + 7);
    if (kernel == "memcpy") {
      from.assign(static_cast<std::size_t>(n), 0.5f);
      to.assign(static_cast<std::size_t>(n), 0.0f);
      return;
    }
    if (kernel == "softmax") {
      call = KernelCall{.kernel = kernel,
                        .operation = "bench",
                        .index = Range::of_shape({n / kRow}),
                        .index_names = row_names};
      call.inputs.append("x", InputPort{std::as_const(a).view(), &row});
      call.outputs.append("result", OutputPort{r.view(), &row});
    } else {
      const bool binary = kernel == "add";
      call = KernelCall{
          .kernel = kernel, .operation = "bench", .index = a.range(), .index_names = names};
      call.inputs.append(binary ? "a" : "x", InputPort{std::as_const(a).view(), &id});
      if (binary) call.inputs.append("b", InputPort{std::as_const(b).view(), &id});
      call.outputs.append("result", OutputPort{r.view(), &id});
    }
    fn = fast_kernels().find(kernel);
  }

  void run() {
    if (fn == nullptr) {
      std::memcpy(to.data(), from.data(), from.size() * sizeof(float));
    } else {
      fn(call);
    }
  }
};

double best_ms(const std::string& kernel, std::int64_t n, int threads, int repeats) {
  std::vector<Share> shares;
  shares.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) shares.emplace_back(kernel, n / threads, t + 1);
  std::vector<double> seconds(static_cast<std::size_t>(threads));  // this repeat's, per thread
  double best = 1e30;  // the best repeat's slowest thread (thread 0 keeps it)
  std::barrier sync(threads);
  const auto work = [&](int t) {
    Share& s = shares[static_cast<std::size_t>(t)];
    s.run();  // warm: page faults, caches
    for (int k = 0; k < repeats; ++k) {
      sync.arrive_and_wait();
      const auto t0 = std::chrono::steady_clock::now();
      s.run();
      const std::chrono::duration<double> d = std::chrono::steady_clock::now() - t0;
      seconds[static_cast<std::size_t>(t)] = d.count();
      sync.arrive_and_wait();
      if (t == 0) best = std::min(best, *std::max_element(seconds.begin(), seconds.end()));
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
  work(0);
  for (std::thread& th : pool) th.join();
  return best * 1e3;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: unary_bench N THREADS REPEATS\n");
    return 2;
  }
  const std::int64_t n = std::atoll(argv[1]);
  const int threads = std::atoi(argv[2]);
  const int repeats = std::atoi(argv[3]);
  if (n <= 0 || n % (kRow * threads) != 0 || threads < 1 || repeats < 1) {
    std::fprintf(stderr, "N must be a positive multiple of %lld·THREADS\n",
                 static_cast<long long>(kRow));
    return 2;
  }
  limit_library_threads_to_one();
  for (const char* kernel :
       {"memcpy", "relu", "neg", "add", "exp", "tanh", "sigmoid", "gelu", "sqrt", "softmax"}) {
    std::printf("tapestry %s %lld %d %.6f\n", kernel, static_cast<long long>(n), threads,
                best_ms(kernel, n, threads, repeats));
    std::fflush(stdout);
  }
}
