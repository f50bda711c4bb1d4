#include "tapestry/workflow/calibration.h"

#include <fmt/chrono.h>
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <thread>

#include "tapestry/cost/work.h"
#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/metakernel/tap_frontend.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/runtime/block_executor.h"
#include "tapestry/runtime/input_generation.h"
#include "tapestry/runtime/memory_budget.h"
#include "tapestry/support/assert.h"
#include "tapestry/support/diagnostic.h"
#include "tapestry/support/error.h"
#include "tapestry/version.h"

namespace tapestry::workflow {

namespace {

using Clock = std::chrono::steady_clock;

// Power is not measured (no portable counters; none in containers): an estimate per hardware
// thread from the TDP of current server CPUs over their threads (AMD EPYC 9654: 360 W over 192
// threads, 1.9 W; Intel Xeon Platinum 8480+: 350 W over 112, 3.1 W), rounded up for memory and
// uncore; idle taken as a quarter of busy. docs/cost.md states the same.
constexpr double kBusyWattsPerThread = 4.0;
constexpr double kIdleWattsPerThread = 1.0;

// One benchmark's graph: a .tap program whose measured operation is `Y`, and the split of Y's
// dims that gives every thread one shard (empty: unsplit).
struct BenchGraph {
  std::string tap;
  std::map<std::string, std::int64_t> split;
};

// Y's rate in one run: its work over the window from its first application's start to its last
// one's end.
struct Sample {
  double window_s = 0;
  double busy_s = 0;
  std::int64_t flops = 0;
  std::int64_t bytes = 0;
  std::int64_t applications = 0;
};

Sample sample_of(const runtime::RunMetrics& metrics) {
  Sample s;
  double first = 1e300;
  double last = 0;
  for (const runtime::ApplicationMetrics& a : metrics.applications) {
    if (a.operation != "Y") continue;
    first = std::min(first, a.start_s);
    last = std::max(last, a.start_s + a.duration_s);
    s.busy_s += a.duration_s;
    s.flops += a.flops;
    s.bytes += a.bytes_read + a.bytes_written;
    ++s.applications;
  }
  TAPESTRY_ASSERT(s.applications > 0, "a calibration graph names its measured operation Y");
  s.window_s = std::max(last - first, 1e-9);
  return s;
}

struct Measured {
  Sample median;
  Sample least_busy;  // the run whose applications of Y took the least time in all
  int runs = 0;
};

// A calibration graph (.tap text) built and lowered with `split` (when not empty) on `op`.
rewrite::LowerResult lowered_bench(const std::string& tap, const char* op,
                                   const std::map<std::string, std::int64_t>& split) {
  auto file = std::make_shared<metakernel::SourceFile>("calibrate.tap", tap);
  metakernel::BuildResult built = metakernel::build_tap(file, metakernel::builtin_signatures());
  if (!built.ok()) throw support::DiagnosticError(built.diagnostics);
  rewrite::Plan plan;
  if (!split.empty()) plan.ops[op].split = split;
  return rewrite::lower(*built.graph, plan);
}

// Builds, lowers and runs `bench` on `threads` threads: one untimed run, then runs until
// `budget_s` is spent (at least 3, at most 1000); the run of median window counts. `work`, when
// given, receives the cost model's work of Y's first application.
Measured measure(const BenchGraph& bench, int threads, double budget_s,
                 cost::Work* work = nullptr) {
  const rewrite::LowerResult lowered = lowered_bench(bench.tap, "Y", bench.split);
  if (work != nullptr) {
    for (ir::OperationId op : lowered.graph.operations()) {
      if (rewrite::operation_name(lowered.graph, op) != "Y") continue;
      *work = cost::application_work(lowered.graph, lowered.graph.operation(op).applications()[0]);
    }
  }
  const runtime::BufferMap inputs = runtime::generate_inputs(lowered.graph, {.seed = 1});
  const runtime::BlockExecutor executor(lowered.graph, {.threads = threads});
  (void)executor.run(inputs);  // buffers into the pool, libraries initialised
  std::vector<Sample> samples;
  const Clock::time_point start = Clock::now();
  while (samples.size() < 3 ||
         (samples.size() < 1000 &&
          std::chrono::duration<double>(Clock::now() - start).count() < budget_s)) {
    samples.push_back(sample_of(executor.run_measured(inputs).metrics));
  }
  std::sort(samples.begin(), samples.end(),
            [](const Sample& a, const Sample& b) { return a.window_s < b.window_s; });
  const Sample least_busy =
      *std::min_element(samples.begin(), samples.end(),
                        [](const Sample& a, const Sample& b) { return a.busy_s < b.busy_s; });
  return {samples[samples.size() / 2], least_busy, static_cast<int>(samples.size())};
}

// `Y = matmul(A, B)` with one m×k·k×n product per thread.
BenchGraph matmul_graph(std::string_view dtype, std::int64_t n, int threads) {
  return {fmt::format("P: {0}[{1}, 1]\nQ: {0}[1, {2}]\nR: {0}[{2}, 1]\n"
                      "A = add(P, Q)\nB = add(R, Q)\nY = matmul(A, B)\nS = sum(Y)\noutput S\n",
                      dtype, n * threads, n),
          threads > 1 ? std::map<std::string, std::int64_t>{{"m", threads}}
                      : std::map<std::string, std::int64_t>{}};
}

// A memory-bound `Y = <expression of A and B>` over rows × 8192 (f32 unless `dtype` says),
// rows cut among the threads.
BenchGraph streaming_graph(std::string_view expression, std::int64_t rows, int threads,
                           std::string_view dtype = "f32") {
  return {fmt::format("P: {2}[{0}, 1]\nQ: {2}[1, 8192]\n"
                      "A = add(P, Q)\nB = mul(P, Q)\nY = {1}\nS = sum(Y)\noutput S\n",
                      rows, expression, dtype),
          threads > 1 ? std::map<std::string, std::int64_t>{{"d0", threads}}
                      : std::map<std::string, std::int64_t>{}};
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("model name")) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown CPU";
}

// The size of one core's level-2 cache (Linux sysfs, cpu0), or 0 when it cannot be read.
std::int64_t l2_cache_bytes() {
  for (int i = 0; i < 8; ++i) {
    const std::string dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", i);
    std::ifstream level(dir + "level");
    std::ifstream type(dir + "type");
    std::ifstream size(dir + "size");
    int l = 0;
    std::string t;
    std::string s;
    if (!(level >> l) || !(type >> t) || !(size >> s) || l != 2 || t == "Instruction") continue;
    std::int64_t bytes = 0;
    std::size_t used = 0;
    try {
      bytes = std::stoll(s, &used);
    } catch (const std::exception&) {
      return 0;
    }
    const std::string unit = s.substr(used);
    if (unit == "K") bytes <<= 10;
    if (unit == "M") bytes <<= 20;
    return bytes > 0 ? bytes : 0;
  }
  return 0;
}

std::string si(double value, std::string_view unit) {
  static constexpr std::pair<double, const char*> kPrefixes[] = {
      {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}, {1, ""}};
  for (const auto& [scale, prefix] : kPrefixes) {
    if (value >= scale) return fmt::format("{:.1f} {}{}", value / scale, prefix, unit);
  }
  return fmt::format("{:.2f} µ{}", value * 1e6, unit);  // dispatch costs: 1e-8 … 1e-5 s
}

}  // namespace

const BenchmarkResult* Calibration::find_benchmark(std::string_view name) const {
  for (const BenchmarkResult& b : benchmarks) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

const BenchmarkResult& Calibration::benchmark(std::string_view name) const {
  const BenchmarkResult* found = find_benchmark(name);
  TAPESTRY_ASSERT(found != nullptr, "calibration benchmarks are fixed");
  return *found;
}

namespace {

using Progress = std::function<void(std::string_view)>;

void report(const Progress& progress, std::string_view name) {
  if (progress) progress(name);
}

// The rates: matmul f32 and f64, add, relu, copy and (where L2 is known) add in cache, each on
// one thread and on all `t`, `share` seconds each; then the 16-bit ones (matmul, add and gelu in
// bf16 and f16, and gelu in f32 to compare with) at half a share each.
std::vector<BenchmarkResult> measure_rates(int t, std::int64_t cache_bytes, double share,
                                           const Progress& progress) {
  const std::int64_t rows = std::max<std::int64_t>(4096 / t, 1) * t;  // ~4096, a multiple of t
  struct Spec {
    std::string name;
    std::string shape;
    const char* unit;
    std::function<BenchGraph(int threads)> graph;
    double weight = 1;  // of `share`
  };
  std::vector<Spec> specs = {
      {"matmul f32", "1024×1024×1024 per thread", "FLOP/s",
       [](int n) { return matmul_graph("f32", 1024, n); }},
      {"matmul f64", "512×512×512 per thread", "FLOP/s",
       [](int n) { return matmul_graph("f64", 512, n); }},
      {"add f32", fmt::format("{}×8192", rows), "B/s",
       [rows](int n) { return streaming_graph("add(A, B)", rows, n); }},
      {"relu f32", fmt::format("{}×8192", rows), "B/s",
       [rows](int n) { return streaming_graph("relu(A)", rows, n); }},
      {"copy f32", fmt::format("{}×8192", rows), "B/s",
       [rows](int n) {
         return streaming_graph(fmt::format("reshape(A, shape=[{}])", rows * 8192), rows, n);
       }},
  };
  // The same add with A, B and Y together in half of one core's L2 per thread, just written by
  // the operations before it: what an elementwise operation on a producer's fresh output gets.
  if (cache_bytes > 0) {
    const std::int64_t per_thread = std::max<std::int64_t>(1, cache_bytes / 2 / (3 * 8192 * 4));
    specs.push_back(
        {"add f32 L2", fmt::format("{}×8192 per thread", per_thread), "B/s",
         [per_thread](int n) { return streaming_graph("add(A, B)", per_thread * n, n); }});
  }
  // Per dtype: the GEMM peak (bf16 and f16 run oneDNN's 16-bit matmul where the CPU has it, else
  // widen to f32) and the rates of the work outside GEMMs — a streaming add and a computing gelu,
  // against the same in f32 (target.h "dtypes").
  const std::string gelu_shape = fmt::format("{}×8192", rows / 4);
  const auto gelu = [rows](std::string_view dtype) {
    return [rows, dtype](int n) { return streaming_graph("gelu(A)", rows / 4, n, dtype); };
  };
  specs.push_back({"gelu f32", gelu_shape, "FLOP/s", gelu("f32"), 0.5});
  for (const char* dtype : {"bf16", "f16"}) {
    specs.push_back({fmt::format("matmul {}", dtype), "1024×1024×1024 per thread", "FLOP/s",
                     [dtype](int n) { return matmul_graph(dtype, 1024, n); }, 0.5});
    specs.push_back({fmt::format("add {}", dtype), fmt::format("{}×8192", rows), "B/s",
                     [rows, dtype](int n) { return streaming_graph("add(A, B)", rows, n, dtype); },
                     0.5});
    specs.push_back({fmt::format("gelu {}", dtype), gelu_shape, "FLOP/s", gelu(dtype), 0.5});
  }
  std::vector<BenchmarkResult> results;
  for (const Spec& spec : specs) {
    report(progress, spec.name);
    BenchmarkResult r{spec.name, spec.shape, spec.unit};
    const bool flops = std::string_view(spec.unit) == "FLOP/s";
    const auto rate = [&](const Sample& s) {
      return static_cast<double>(flops ? s.flops : s.bytes) / s.window_s;
    };
    const Measured one = measure(spec.graph(1), 1, share * spec.weight);
    const Measured all = measure(spec.graph(t), t, share * spec.weight);
    r.one_thread = rate(one.median);
    r.all_threads = rate(all.median);
    r.runs_one = one.runs;
    r.runs_all = all.runs;
    results.push_back(std::move(r));
  }
  return results;
}

// The cost of dispatching an application: 16,384 relu of 8×8 on one thread.
void measure_dispatch(Calibration& c, double share, const Progress& progress) {
  report(progress, "dispatch");
  const BenchGraph tiny{
      "P: f32[1024, 1]\nQ: f32[1, 1024]\nA = add(P, Q)\nY = relu(A)\nS = sum(Y)\noutput S\n",
      {{"d0", 128}, {"d1", 128}}};
  const Measured d = measure(tiny, 1, share);
  c.dispatch_applications = d.median.applications;
  const auto n = static_cast<double>(d.median.applications);
  c.dispatch_s = d.median.window_s / n;
  c.dispatch_overhead_s = std::max(0.0, d.median.window_s - d.median.busy_s) / n;
}

// The fixed cost of a run: the wall time of a run of one tiny application beyond the kernel,
// on `t` threads (median of at least 20 runs within `budget_s`).
double measure_run_overhead(int t, double budget_s, const Progress& progress) {
  report(progress, "run");
  const rewrite::LowerResult lowered =
      lowered_bench("P: f32[1, 1]\nY = relu(P)\noutput Y\n", "Y", {});
  const runtime::BufferMap inputs = runtime::generate_inputs(lowered.graph, {.seed = 1});
  const runtime::BlockExecutor executor(lowered.graph, {.threads = t});
  (void)executor.run(inputs);
  std::vector<double> overheads;
  const Clock::time_point begin = Clock::now();
  while (overheads.size() < 20 ||
         (overheads.size() < 2000 &&
          std::chrono::duration<double>(Clock::now() - begin).count() < budget_s)) {
    const runtime::RunMetrics m = executor.run_measured(inputs).metrics;
    overheads.push_back(std::max(0.0, m.wall_s - m.busy_s));
  }
  std::sort(overheads.begin(), overheads.end());
  return overheads[overheads.size() / 2];
}

// When the pool's other threads join a run (cost::Target::worker_start_s): one unsplit relu
// X, then t independent relu shards of Y = relu(X), run back to back as `run --repeat` runs
// them; per run, from X's end (Y's shards ready) to the first start of a Y shard on another
// thread than X's, or to the run's end when no other thread took part. Parallel work that
// appears after a run has started is the common case (a pad before a sharded conv, a split
// after an unsplit layer). Shards of ~0.03 to 2 ms (the cache keeps them short): the first
// length at which most runs see a join gives the median join. Nothing with one thread.
void measure_worker_start(Calibration& c, const Progress& progress) {
  const int t = c.threads;
  if (t <= 1) return;
  report(progress, "workers");
  for (const std::int64_t rows : {28, 112, 448, 1792}) {  // 64 KiB of relu traffic per row
    const rewrite::LowerResult lowered = lowered_bench(
        fmt::format("A: f32[{}, 8192]\nX = relu(A)\nY = relu(X)\noutput Y\n", rows * t), "Y",
        {{"d0", t}});
    const runtime::BufferMap inputs = runtime::generate_inputs(lowered.graph, {.seed = 1});
    const runtime::BlockExecutor executor(lowered.graph, {.threads = t});
    (void)executor.run(inputs);
    std::vector<double> joins;
    std::vector<double> shards;
    int joined = 0;
    for (int run = 0; run < 25; ++run) {
      const runtime::RunMetrics m = executor.run_measured(inputs).metrics;
      const runtime::ApplicationMetrics* x = nullptr;
      for (const runtime::ApplicationMetrics& a : m.applications) {
        if (a.operation == "X") x = &a;
      }
      TAPESTRY_ASSERT(x != nullptr, "the calibration graph has X");
      const double ready = x->start_s + x->duration_s;
      double first_other = m.wall_s;
      for (const runtime::ApplicationMetrics& a : m.applications) {
        if (a.operation != "Y") continue;
        shards.push_back(a.duration_s);
        if (a.thread != x->thread) first_other = std::min(first_other, a.start_s);
      }
      joined += first_other < m.wall_s ? 1 : 0;
      joins.push_back(std::max(0.0, first_other - ready));
    }
    std::sort(joins.begin(), joins.end());
    std::sort(shards.begin(), shards.end());
    c.worker_start_s = joins[joins.size() / 2];
    c.worker_start_shard_s = shards[shards.size() / 2];
    if (2 * joined > static_cast<int>(joins.size())) break;
  }
}

// Kernels whose rate may differ from the roofline of the rates above: one shard per thread.
std::vector<KernelResult> measure_kernels(int t, double share, const Progress& progress) {
  const std::int64_t r = 1024;
  const std::string rows_shape = fmt::format("{}×2048 per thread", r);
  const auto unary = [&](std::string_view kernel, const char* dim) {
    return BenchGraph{fmt::format("P: f32[{0}, 1]\nQ: f32[1, 2048]\nA = add(P, Q)\nY = {1}(A)\n"
                                  "S = sum(Y)\noutput S\n",
                                  r * t, kernel),
                      t > 1 ? std::map<std::string, std::int64_t>{{dim, t}}
                            : std::map<std::string, std::int64_t>{}};
  };
  struct KernelSpec {
    const char* kernel;
    std::string shape;
    BenchGraph graph;
  };
  std::vector<KernelSpec> kernel_specs;
  for (const char* k : {"gelu", "softmax", "exp", "tanh", "sigmoid"}) {
    kernel_specs.push_back(
        {k, rows_shape, unary(k, std::string_view(k) == "softmax" ? "batch" : "d0")});
  }
  kernel_specs.push_back(
      {"transpose",
       rows_shape,
       {fmt::format("P: f32[{0}, 1]\nQ: f32[1, 2048]\nA = add(P, Q)\nY = transpose(A)\n"
                    "S = sum(Y)\noutput S\n",
                    r * t),
        t > 1 ? std::map<std::string, std::int64_t>{{"m", t}}
              : std::map<std::string, std::int64_t>{}}});
  kernel_specs.push_back(
      {"conv2d",
       "8×16×34×34 ⊛ 32×16×3×3 per thread",
       {fmt::format("P: f32[{0}, 16, 1, 1]\nQ: f32[1, 1, 34, 34]\nK: f32[32, 16, 3, 3]\n"
                    "A = add(P, Q)\nY = conv2d(A, K)\nS = sum(Y)\noutput S\n",
                    8 * t),
        t > 1 ? std::map<std::string, std::int64_t>{{"n", t}}
              : std::map<std::string, std::int64_t>{}}});
  std::vector<KernelResult> results;
  for (const KernelSpec& k : kernel_specs) {
    report(progress, k.kernel);
    cost::Work work;
    const Measured m = measure(k.graph, t, share / 2, &work);
    results.push_back({k.kernel, k.shape,
                       m.median.busy_s / static_cast<double>(m.median.applications), work.flops,
                       static_cast<double>(work.bytes_read + work.bytes_written), m.runs});
  }
  return results;
}

// GEMMs of several sizes, every thread running its calls: time per call (kernel durations), in
// the run whose calls took least: another process taking the core only ever adds time, and a
// call of 1 µs is easily taken.
std::vector<GemmResult> measure_gemms(int t, double share, const Progress& progress) {
  std::vector<GemmResult> results;
  for (const std::int64_t n : {32, 64, 128, 256, 512, 1024}) {
    report(progress, fmt::format("gemm {}", n));
    const std::int64_t calls = std::clamp<std::int64_t>((512 / n) * (512 / n) * (512 / n), 1, 64);
    BenchGraph g = matmul_graph("f32", n, static_cast<int>(calls) * t);
    if (calls * t > 1) g.split = {{"m", calls * t}};
    const Measured m = measure(g, t, share / 2);
    results.push_back({n, calls,
                       m.least_busy.busy_s / static_cast<double>(m.least_busy.applications),
                       2.0 * static_cast<double>(n * n * n), m.runs});
  }
  return results;
}

}  // namespace

namespace {

// The 16-bit members of the target, from the benchmarks that measured them (a calibration
// without them — an older one — gives none): peak_flops.bfloat16 / .float16 from the 16-bit
// matmul, and the "dtypes" factors for the work outside GEMMs (target.h), each set only when it
// is more than 10% below 1:
//   efficiency            (gelu rate in the dtype / gelu rate in f32) · (f32 peak / dtype peak):
//                         the dtype's gelu FLOPs are priced at its GEMM peak, so the factor
//                         takes that back and applies the measured slow-down;
//   bandwidth_efficiency  add rate in the dtype / memory_bandwidth_Bps (bytes per second).
void add_half_float_rates(const Calibration& c, cost::DeviceType& core) {
  const double t = c.threads;
  const BenchmarkResult* gelu32 = c.find_benchmark("gelu f32");
  for (const auto& [dtype, name] :
       {std::pair{ir::DType::kBFloat16, "bf16"}, std::pair{ir::DType::kFloat16, "f16"}}) {
    const BenchmarkResult* matmul = c.find_benchmark(fmt::format("matmul {}", name));
    if (matmul == nullptr || !(matmul->all_threads > 0)) continue;
    const double peak = matmul->all_threads / t;
    core.peak_flops[dtype] = peak;
    cost::KernelRates rates;
    const BenchmarkResult* gelu = c.find_benchmark(fmt::format("gelu {}", name));
    if (gelu != nullptr && gelu32 != nullptr && gelu32->all_threads > 0 && gelu->all_threads > 0) {
      const double e = std::min(1.0, gelu->all_threads / gelu32->all_threads *
                                         core.peak_flops.at(ir::DType::kFloat32) / peak);
      if (e < 0.9) rates.efficiency = e;
    }
    const BenchmarkResult* add = c.find_benchmark(fmt::format("add {}", name));
    if (add != nullptr && add->all_threads > 0) {
      const double b = std::min(1.0, add->all_threads / t / core.memory_bandwidth_Bps);
      if (b < 0.9) rates.bandwidth_efficiency = b;
    }
    if (rates.efficiency || rates.bandwidth_efficiency) core.dtypes[dtype] = rates;
  }
}

}  // namespace

bool valid_calibration_budget(double seconds) {
  return std::isfinite(seconds) && seconds > 0 && seconds <= 3600;
}

Calibration calibrate(double seconds, const std::function<void(std::string_view)>& progress) {
  const Clock::time_point start = Clock::now();
  Calibration c;
  c.threads = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  c.cpu_model = cpu_model();
  c.memory_bytes = runtime::physical_memory_bytes();
  c.seconds = seconds;
  c.cache_bytes = l2_cache_bytes();
  // The budget in shares: 6 rates × 2 thread counts, 7 16-bit rates × 2 (1/2 each), dispatch,
  // run (1/2), 7 kernels (1/2 each), 6 GEMM sizes (1/2 each).
  const double share = seconds / 27;
  c.benchmarks = measure_rates(c.threads, c.cache_bytes, share, progress);
  measure_dispatch(c, share, progress);
  c.run_overhead_s = measure_run_overhead(c.threads, share / 2, progress);
  measure_worker_start(c, progress);
  c.kernels = measure_kernels(c.threads, share, progress);
  c.gemms = measure_gemms(c.threads, share, progress);
  c.elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
  return c;
}

cost::Target calibrated_target(const Calibration& c) {
  const double t = c.threads;
  const BenchmarkResult& add = c.benchmark("add f32");
  const BenchmarkResult& relu = c.benchmark("relu f32");
  const BenchmarkResult& copy = c.benchmark("copy f32");
  const BenchmarkResult* cached = c.find_benchmark("add f32 L2");
  cost::Target target;
  target.name = "cpu-local";
  const std::string date = fmt::format("{:%Y-%m-%d}", fmt::gmtime(std::time(nullptr)));
  target.about = fmt::format("{} hardware threads ({}), measured by tapestry calibrate on {}",
                             c.threads, c.cpu_model, date);
  cost::DeviceType core;
  core.name = "hw-thread";
  core.kind = "cpu";
  core.peak_flops = {{ir::DType::kFloat32, c.benchmark("matmul f32").all_threads / t},
                     {ir::DType::kFloat64, c.benchmark("matmul f64").all_threads / t}};
  core.efficiency = 1.0;  // measured rates are achieved rates
  core.launch_s = c.dispatch_s;
  core.memory_bandwidth_Bps = std::max(add.all_threads, relu.all_threads) / t;
  add_half_float_rates(c, core);
  core.bandwidth_efficiency = 1.0;
  core.memory_bytes = c.memory_bytes;
  // One thread's rate: the cache is a core's own, and a shard this short often runs before the
  // other threads join (worker_start_s), which the all-threads window would count.
  if (cached != nullptr && cached->one_thread > core.memory_bandwidth_Bps) {
    core.cache_bytes = c.cache_bytes;
    core.cache_bandwidth_Bps = cached->one_thread;
  }
  core.idle_w = kIdleWattsPerThread;
  core.busy_w = kBusyWattsPerThread;
  for (const KernelResult& k : c.kernels) {
    const double compute = k.flops / core.peak_flops.at(ir::DType::kFloat32);
    const double memory = k.bytes / core.memory_bandwidth_Bps;
    const double seconds = k.seconds - core.launch_s;
    if (seconds <= 1.1 * std::max(compute, memory)) continue;  // the roofline holds
    if (seconds > 2 * memory && compute > 0) {
      core.kernels[k.kernel].efficiency = compute / seconds;
    } else {
      core.kernels[k.kernel].bandwidth_efficiency = memory / seconds;
    }
  }
  double floor = 0;
  for (const GemmResult& g : c.gemms) {
    const double achieved = g.flops / g.seconds / core.peak_flops.at(ir::DType::kFloat32);
    floor = std::max(floor, std::min(1.0, achieved));
    core.gemm_efficiency.push_back({g.flops, floor});
  }
  target.device_types.push_back(core);
  for (int i = 0; i < c.threads; ++i) {
    const auto index = static_cast<std::size_t>(i);
    target.devices.push_back({fmt::format("cpu:{}", i), 0, 0, index});
  }
  target.intra_node = {copy.all_threads / t, 0.0, true};
  target.run_overhead_s = c.run_overhead_s;
  target.worker_start_s = c.worker_start_s;

  nlohmann::json benchmarks = nlohmann::json::object();
  for (const BenchmarkResult& b : c.benchmarks) {
    benchmarks[b.name] = {{"shape", b.shape},
                          {"unit", b.unit},
                          {"one_thread", b.one_thread},
                          {"all_threads", b.all_threads},
                          {"per_thread_all", b.all_threads / t},
                          {"runs_one_thread", b.runs_one},
                          {"runs_all_threads", b.runs_all}};
  }
  target.calibration = {
      {"tapestry", kVersion},
      {"date", date},
      {"cpu_model", c.cpu_model},
      {"hardware_threads", c.threads},
      {"seconds", c.seconds},
      {"elapsed_s", c.elapsed_s},
      {"benchmarks", std::move(benchmarks)},
      {"dispatch",
       {{"applications", c.dispatch_applications},
        {"per_application_s", c.dispatch_s},
        {"overhead_per_application_s", c.dispatch_overhead_s}}},
      {"run_overhead_s", c.run_overhead_s},
      {"worker_start", {{"seconds", c.worker_start_s}, {"shard_s", c.worker_start_shard_s}}},
      {"power", "estimated, not measured: 1 W idle, 4 W busy per hardware thread"}};
  nlohmann::json kernels = nlohmann::json::object();
  for (const KernelResult& k : c.kernels) {
    kernels[k.kernel] = {{"shape", k.shape},
                         {"seconds_per_shard", k.seconds},
                         {"flops_per_shard", k.flops},
                         {"bytes_per_shard", k.bytes},
                         {"runs", k.runs}};
  }
  target.calibration["kernels"] = std::move(kernels);
  nlohmann::json gemms = nlohmann::json::object();
  for (const GemmResult& g : c.gemms) {
    gemms[fmt::format("{0}x{0}x{0}", g.n)] = {{"calls_per_thread", g.calls},
                                              {"seconds_per_call", g.seconds},
                                              {"flops_per_call", g.flops},
                                              {"runs", g.runs}};
  }
  target.calibration["gemm"] = std::move(gemms);
  // Round trip through the parser: what is written is what `--target` will read.
  return cost::parse_target(cost::to_json(target).dump(), "cpu-local (calibrated)");
}

std::string calibration_table(const Calibration& c) {
  std::string out =
      fmt::format("{} hardware threads ({}), {} of memory; measured in {:.1f} s\n", c.threads,
                  c.cpu_model, runtime::format_bytes(c.memory_bytes), c.elapsed_s);
  out += fmt::format("{:<12} {:<28} {:>14} {:>14} {:>14}\n", "benchmark", "size", "1 thread",
                     fmt::format("{} threads", c.threads), "per thread");
  for (const BenchmarkResult& b : c.benchmarks) {
    out += fmt::format("{:<12} {:<28} {:>14} {:>14} {:>14}\n", b.name, b.shape,
                       si(b.one_thread, b.unit), si(b.all_threads, b.unit),
                       si(b.all_threads / c.threads, b.unit));
  }
  out += fmt::format("{:<12} {:<28} {:>14} per application ({} beyond the kernel)\n", "dispatch",
                     fmt::format("{} relu of 8×8, 1 thread", c.dispatch_applications),
                     si(c.dispatch_s, "s"), si(c.dispatch_overhead_s, "s"));
  out += fmt::format("{:<12} {:<28} {:>11.2f} µs per run beyond its kernels ({} threads)\n", "run",
                     "one relu of 1×1", c.run_overhead_s * 1e6, c.threads);
  if (c.threads > 1) {
    out += fmt::format(
        "{:<12} {:<28} {:>11.2f} µs into a run, back to back (median)\n", "workers join",
        fmt::format("{} relu shards of {:.2f} ms", c.threads, c.worker_start_shard_s * 1e3),
        c.worker_start_s * 1e6);
  }
  const cost::Target target = calibrated_target(c);
  const cost::DeviceType& core = target.device_types.front();
  for (const KernelResult& k : c.kernels) {
    const double compute = k.flops / core.peak_flops.at(ir::DType::kFloat32);
    const double memory = k.bytes / core.memory_bandwidth_Bps;
    const double model = core.launch_s + std::max(compute, memory);
    std::string rate = "the roofline holds";
    if (auto found = core.kernels.find(k.kernel); found != core.kernels.end()) {
      rate = found->second.efficiency
                 ? fmt::format("efficiency {:.3g}", *found->second.efficiency)
                 : fmt::format("bandwidth efficiency {:.3g}", *found->second.bandwidth_efficiency);
    }
    out += fmt::format("{:<12} {:<28} {:>11.3f} ms per shard, {:.1f}× the roofline: {}\n", k.kernel,
                       k.shape, k.seconds * 1e3, k.seconds / model, rate);
  }
  for (std::size_t i = 0; i < c.gemms.size(); ++i) {
    const GemmResult& g = c.gemms[i];
    out += fmt::format("{:<12} {:<28} {:>11.3f} µs per call, {:>14}: efficiency {:.3g}\n",
                       fmt::format("gemm {}", g.n),
                       fmt::format("{0}×{0}×{0}, {1} per thread", g.n, g.calls), g.seconds * 1e6,
                       si(g.flops / g.seconds, "FLOP/s"), core.gemm_efficiency[i].efficiency);
  }
  return out;
}

}  // namespace tapestry::workflow
