// Calibration: what `tapestry calibrate` measures on this machine, and the Target it writes.
//
// Every figure comes from the real block executor running the fast kernels on small generated
// graphs, on one thread and on every hardware thread (one shard per thread):
//
//   benchmark     graph (the measured operation is Y)                    rate
//   matmul f32    Y = matmul(A, B), A [1024·t, 1024], B [1024, 1024]     FLOP/s
//   matmul f64    the same in f64, 512 instead of 1024                   FLOP/s
//   add           Y = add(A, B), 4096 × 8192 f32 (128 MiB per tensor)     bytes/s (read + written)
//   relu          Y = relu(A), same size                                 bytes/s
//   copy          Y = reshape(A) to one dim (a strided copy), same size   bytes/s
//   add L2        Y = add(A, B) with A, B and Y in half of one core's L2   bytes/s; one thread's
//                 per thread (its size from Linux sysfs; skipped when        rate is the device's
//                 unknown), the inputs just written by the graph            cache bandwidth
//   dispatch      Y = relu(A), A 1024 × 1024 cut into 128 × 128 blocks    seconds per application
//                 of 8 × 8 (16,384 applications), one thread
//   run           Y = relu(A) of 1 × 1, every thread: the run's wall time    seconds per run
//                 beyond Y's own (pool start and join)
//   kernels       Y = gelu(A), softmax, exp, tanh, sigmoid, transpose over  seconds per shard vs
//                 1024·t × 2048 f32; Y = conv2d(A, K), A [8·t, 16, 34, 34],  the roofline of
//                 K [32, 16, 3, 3]; every hardware thread, one shard each     the rates above
//
//   16-bit        matmul in bf16 and f16 (1024³ per thread), add in bf16   FLOP/s, B/s: the
//                 and f16, gelu in f32, bf16 and f16 (1024 × 8192)           16-bit peaks and
//                                                                          the "dtypes" factors
//
//   gemm          Y = matmul(A, B) of n×n·n×n calls, n = 32, 64, 128, 256,   seconds per call vs
//                 512, 1024: A [n·c·t, n] cut into c·t row blocks, c calls   the peak: the
//                 per thread (c = (512/n)³, at most 64; 1 from 512 up)       gemm_efficiency table
//
// A kernel more than 10% slower than the roofline of the measured rates (peak from matmul,
// bandwidth from add/relu) gets its own rate in the target's "kernels": `efficiency` when its
// time is more than twice the memory term (it is computing, e.g. an erf per element), else
// `bandwidth_efficiency` — the fraction that makes the roofline give the measured time.
//
// The GEMM efficiency table (target.h) has one entry per size: [2n³, (2n³ / peak) / the time of
// one call in the run whose calls took least (others' processes only ever add time)], at most 1
// (the peak is the whole machine's rate over 1024³ products), and never below a smaller size's (a
// size measured slower than a smaller one is noise, or the dispatch of the smaller calls
// overlapping: efficiency is taken not to fall as GEMMs grow).
//
// Only Y's applications are timed: from the first one's start to the last one's end. Its inputs
// are made inside the graph (A = add(P, Q) of a column and a row, unsplit, so every shard of Y
// starts together once they are done) and its result is consumed by an unsplit `sum`, so Y
// reads and writes buffers the executor's pool reuses between runs: no graph input is copied
// and no page of Y is touched for the first time in a timed run (fresh pages cost more than the
// kernel here). One untimed run first, then runs until the benchmark's share of the time budget
// is spent (at least 3); the median run counts.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/cost/target.h"

namespace tapestry::workflow {

/// One benchmark: its rate on one thread and on all of them.
struct BenchmarkResult {
  std::string name;   // "matmul f32"
  std::string shape;  // the measured operation's size, e.g. "1024×1024×1024 per thread"
  std::string unit;   // "FLOP/s" or "B/s"
  double one_thread = 0;
  double all_threads = 0;  // the whole machine's rate
  int runs_one = 0;
  int runs_all = 0;
};

/// One kernel's measured time per shard against its work under the cost model (work.h).
struct KernelResult {
  std::string kernel;  // "gelu"
  std::string shape;   // "1024×2048 per thread"
  double seconds = 0;  // median time of one shard (every thread running one)
  double flops = 0;    // of one shard, as the cost model counts them
  double bytes = 0;    // read + written by one shard
  int runs = 0;
};

/// One GEMM size's measured time per call against the peak (matmul f32 on every thread).
struct GemmResult {
  std::int64_t n = 0;      // an n×n·n×n product
  std::int64_t calls = 0;  // per thread per run (n×n blocks of rows)
  double seconds = 0;      // time of one call in the fastest run (every thread running its calls)
  double flops = 0;        // of one call: 2n³
  int runs = 0;
};

struct Calibration {
  int threads = 1;  // hardware threads measured (= devices of the target)
  std::string cpu_model;
  std::int64_t memory_bytes = 0;
  double seconds = 0;  // the time budget asked for
  double elapsed_s = 0;
  std::vector<BenchmarkResult> benchmarks;  // matmul f32, matmul f64, add, relu, copy, add f32 L2
  std::int64_t cache_bytes = 0;  // one core's L2 (sysfs), 0 when unknown: no cache benchmark
  std::int64_t dispatch_applications = 0;
  double dispatch_s = 0;           // per application, wall (kernel included), one thread
  double dispatch_overhead_s = 0;  // per application, beyond the kernel
  double run_overhead_s = 0;  // per run: wall time beyond its one tiny application, all threads
  // When the other pool threads join a run of back-to-back runs (cost::Target::worker_start_s),
  // and the shard length (seconds) of the runs it was measured on; 0 with one thread.
  double worker_start_s = 0;
  double worker_start_shard_s = 0;
  std::vector<KernelResult> kernels;
  std::vector<GemmResult> gemms;  // by n, increasing

  [[nodiscard]] const BenchmarkResult& benchmark(std::string_view name) const;
  /// The benchmark called `name`, or nullptr (the cache benchmark runs only where L2 is known).
  [[nodiscard]] const BenchmarkResult* find_benchmark(std::string_view name) const;
};

/// A measuring budget calibrate accepts: finite, in (0, 3600] seconds.
bool valid_calibration_budget(double seconds);

/// Runs every benchmark within about `seconds` (plus set-up); `progress` hears each one's name.
/// The steps, in order (each one a function of calibration.cpp): the rates (matmul, add, relu,
/// copy, add in L2) on one and on every thread, dispatch, run overhead, when the workers join,
/// the kernels against the roofline, the GEMM sizes.
///
///   const Calibration c = calibrate(10, [](std::string_view name) { fmt::print("{}\n", name); });
///   const cost::Target t = calibrated_target(c);   // what `tapestry calibrate` writes
///   fmt::print("{}", calibration_table(c));        // what it prints
Calibration calibrate(double seconds, const std::function<void(std::string_view)>& progress);

/// The target `tapestry calibrate` writes (docs/cost.md lists how each member is derived).
cost::Target calibrated_target(const Calibration& calibration);

/// The table `tapestry calibrate` prints.
std::string calibration_table(const Calibration& calibration);

}  // namespace tapestry::workflow
