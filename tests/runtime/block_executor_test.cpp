// The block executor: with reference kernels it must be bitwise equal to the sequential
// application executor whatever the thread interleaving; buffers are freed after their last use;
// metrics add up; bad inputs and an exceeded memory limit fail before any work.
#include "tapestry/runtime/block_executor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "kernel_cases.h"
#include "kernel_graphs.h"
#include "run_helpers.h"
#include "tapestry/runtime/compare.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/input_generation.h"
#include "tapestry/zspace/format.h"

namespace tapestry::runtime {
namespace {

using namespace testing;  // NOLINT: test helpers
using ::testing::HasSubstr;

const ExecutableKernels* reference() {
  return &ExecutableKernels::reference();
}

void expect_no_nan(const Buffer& buffer) {
  visit_dtype(buffer.dtype(), [&]<typename T>() {
    if constexpr (std::is_floating_point_v<T>) {
      for (T v : buffer.values<T>()) ASSERT_FALSE(std::isnan(v)) << buffer.describe();
    }
  });
}

TEST(BlockExecutor, EveryKernelEveryShardingBitwiseEqualsTheApplicationExecutor) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    for (const auto& parts : c.shardings) {
      GraphBuilder b;
      const Built built = c.build(b);
      b.shard(built.op, parts);
      const BufferMap inputs = generate_inputs(b.graph, {.seed = 3});
      const BufferMap expected = ApplicationExecutor(b.graph).run(inputs);
      for (int threads : {1, 3}) {
        const BlockExecutor exec(b.graph,
                                 {.threads = threads, .kernels = reference(), .poison = true});
        const BufferMap got = exec.run(inputs);
        const TensorsComparison cmp =
            compare_tensors(b.graph, expected, got, std::vector<TensorId>{built.result});
        EXPECT_TRUE(cmp.all_bitwise_equal()) << "threads " << threads << "\n" << cmp.summary();
        expect_no_nan(got.at(built.result));
      }
    }
  }
}

// Y = softmax(relu(linear(X, W, b))), each operation sharded differently so shards read from
// several producers: run many times on 4 threads to shake out ordering races.
struct Chain {
  GraphBuilder b;
  Built lin, relu, sm;
  Chain() {
    TensorId x = b.tensor("X", "float32", Range({-40, 20}, {-7, 49}));
    lin = add_linear(b, x, b.tensor("W", "float32", Range::of_shape({24, 29})),
                     b.tensor("b", "float32", Range::of_shape({24})));
    relu = add_unary(b, "relu", lin.result);
    sm = add_softmax(b, relu.result);
    b.shard(lin.op, {5, 3, 1});
    b.shard(relu.op, {4, 5});
    b.shard(sm.op, {7});
  }
};

TEST(BlockExecutor, ChainsAreBitwiseStableAcrossRunsAndThreads) {
  Chain c;
  const BufferMap inputs = generate_inputs(c.b.graph, {.seed = 5});
  const BufferMap expected = ApplicationExecutor(c.b.graph).run(inputs);
  const BlockExecutor exec(c.b.graph, {.threads = 4, .kernels = reference(), .poison = true});
  EXPECT_EQ(exec.application_count(), 15u + 20u + 7u);
  for (int run = 0; run < 25; ++run) {
    const BufferMap got = exec.run(inputs);
    const TensorsComparison cmp =
        compare_tensors(c.b.graph, expected, got, std::vector<TensorId>{c.sm.result});
    ASSERT_TRUE(cmp.all_bitwise_equal()) << "run " << run << "\n" << cmp.summary();
  }
}

// Fast softmax rows (vectorised max, exponentials and an eight-lane sum in a fixed order) give
// the reference kernel's bits on any thread count and any sharding of the rows: a row is never
// split, and its order does not depend on which thread runs it.
TEST(BlockExecutor, FastSoftmaxIsBitwiseTheSameOnAnyThreadCountAndSharding) {
  for (const std::int64_t n : {3, 17, 1000}) {
    for (const std::int64_t parts : {1, 5, 24}) {
      GraphBuilder b;
      const Built sm = add_softmax(b, b.tensor("X", "float32", Range::of_shape({24, n})));
      b.shard(sm.op, {parts});
      const BufferMap inputs = generate_inputs(b.graph, {.seed = 13});
      const BufferMap expected = NaiveExecutor(b.graph).run(inputs);
      for (int threads : {1, 2, 4}) {
        const BlockExecutor exec(b.graph, {.threads = threads, .kernels = &fast_kernels()});
        const TensorsComparison cmp =
            compare_tensors(b.graph, expected, exec.run(inputs), std::vector<TensorId>{sm.result});
        EXPECT_TRUE(cmp.all_bitwise_equal())
            << "n " << n << ", " << parts << " shards, " << threads << " threads\n"
            << cmp.summary();
      }
    }
  }
}

TEST(BlockExecutor, IntermediatesAreFreedAndNotReturned) {
  Chain c;
  const BufferMap inputs = generate_inputs(c.b.graph, {.seed = 5});
  const BlockExecutor exec(c.b.graph, {.threads = 1, .kernels = reference()});
  const auto [buffers, metrics] = exec.run_measured(inputs);
  EXPECT_TRUE(buffers.contains(c.sm.result));
  EXPECT_FALSE(buffers.contains(c.lin.result));  // freed after relu read it
  EXPECT_FALSE(buffers.contains(c.relu.result));
  // Inputs X 33×29, W 24×29, b 24; intermediates/outputs 33×24 floats each. At most two of the
  // three 33×24 tensors are ever live at once.
  const std::int64_t inputs_bytes = 4 * (33 * 29 + 24 * 29 + 24);
  const std::int64_t tensor = 4 * 33 * 24;
  EXPECT_EQ(exec.estimated_peak_memory_bytes(), inputs_bytes + 2 * tensor);
  EXPECT_LE(metrics.peak_memory_bytes, inputs_bytes + 3 * tensor);
  EXPECT_GE(metrics.peak_memory_bytes, inputs_bytes + tensor);
}

// On one thread the measured peak is the estimate: X → P (unsplit) → B (2 shards) → Y (2 shards),
// every tensor T bytes. In the program's order P is freed after B's second shard, before Y is
// allocated: 3T at most. Depth-first (B1, Y1, B2, Y2 — TBB's feeder on one thread) Y would be
// allocated while P is still live: 4T.
TEST(BlockExecutor, OnOneThreadTheMeasuredPeakIsTheEstimate) {
  GraphBuilder b;
  const Built p = add_unary(b, "relu", b.tensor("X", "float32", Range::of_shape({64, 32})));
  b.shard(p.op, {1, 1});
  const Built bb = add_unary(b, "relu", p.result);
  b.shard(bb.op, {2, 1});
  const Built y = add_unary(b, "relu", bb.result);
  b.shard(y.op, {2, 1});
  const std::int64_t tensor = 4 * 64 * 32;
  const BufferMap inputs = generate_inputs(b.graph, {.seed = 2});
  const BlockExecutor one(b.graph, {.threads = 1, .kernels = &fast_kernels()});
  EXPECT_EQ(one.estimated_peak_memory_bytes(), 3 * tensor);
  for (int run = 0; run < 3; ++run) {
    EXPECT_EQ(one.run_measured(inputs).metrics.peak_memory_bytes, 3 * tensor);
  }
  // Several threads may run Y's first shard before B's second: bounded by every tensor at once.
  const BlockExecutor two(b.graph, {.threads = 2, .kernels = &fast_kernels()});
  EXPECT_LE(two.run_measured(inputs).metrics.peak_memory_bytes, 4 * tensor);
}

// A borrowed input (the Python package's NumPy arrays) is read in place and handed back, still
// borrowing, with the results; the run equals one on owned copies.
TEST(BlockExecutor, BorrowedInputsAreReadInPlace) {
  Chain c;
  BufferMap owned = generate_inputs(c.b.graph, {.seed = 5});
  BufferMap borrowed;
  for (auto& [t, buffer] : owned)
    borrowed.emplace(t, Buffer::borrow(buffer.dtype(), buffer.range(), buffer.bytes()));
  const BlockExecutor exec(c.b.graph, {.threads = 2, .kernels = reference()});
  const BufferMap expected = exec.run(owned);
  const BufferMap got = exec.run(std::move(borrowed));
  for (const auto& [t, buffer] : owned) {
    ASSERT_TRUE(got.contains(t));
    EXPECT_TRUE(got.at(t).is_borrowed());
    EXPECT_EQ(got.at(t).bytes(), buffer.bytes());
  }
  EXPECT_TRUE(compare_tensors(c.b.graph, expected, got, std::vector<TensorId>{c.sm.result})
                  .all_bitwise_equal());
}

TEST(BlockExecutor, MetricsCountFlopsAndEveryApplication) {
  Chain c;
  const BufferMap inputs = generate_inputs(c.b.graph, {.seed = 5});
  const BlockExecutor exec(c.b.graph, {.threads = 2, .kernels = reference()});
  const auto [buffers, m] = exec.run_measured(inputs);
  // The cost model's counts (the kernels' facts): linear 2 per point, relu 1 per element,
  // softmax 5 per element of each row.
  const std::int64_t linear = 2 * 33 * 24 * 29, elements = 33 * 24;
  EXPECT_EQ(m.flops, linear + elements + 5 * elements);
  EXPECT_EQ(exec.flops(), m.flops);
  EXPECT_EQ(m.applications.size(), exec.application_count());
  EXPECT_EQ(m.threads, 2);
  ASSERT_EQ(m.operations.size(), 3u);
  std::size_t apps = 0;
  for (const OperationMetrics& op : m.operations) apps += op.applications;
  EXPECT_EQ(apps, m.applications.size());
  EXPECT_GT(m.wall_s, 0.0);
  EXPECT_LE(m.critical_path_s, m.busy_s + 1e-12);
  EXPECT_GT(m.critical_path_s, 0.0);
  for (const ApplicationMetrics& a : m.applications) {
    EXPECT_LT(a.thread, 2u);
    EXPECT_GE(a.start_s, 0.0);
    EXPECT_LE(a.start_s + a.duration_s, m.wall_s + 1e-9);
  }

  const nlohmann::json j = metrics_json(m);
  for (const char* key : {"wall_s", "flops", "gflops", "peak_memory_bytes", "threads"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["application_records"].size(), m.applications.size());
  const nlohmann::json trace = chrome_trace(m);
  std::size_t complete = 0;
  for (const auto& e : trace["traceEvents"]) complete += e["ph"] == "X" ? 1 : 0;
  EXPECT_EQ(complete, m.applications.size());
  EXPECT_THAT(summary_table(m), HasSubstr("GFLOP/s"));
}

TEST(BlockExecutor, MemoryLimitFailsBeforeRunningNamingTheEstimate) {
  Chain c;
  const std::string message = error_of([&] {
    const BlockExecutor exec(c.b.graph, {.kernels = reference(), .memory_limit_bytes = 4096});
  });
  EXPECT_THAT(message, HasSubstr("memory limit 4.00 KiB exceeded"));
  EXPECT_THAT(message, HasSubstr("estimated"));
  EXPECT_THAT(message, HasSubstr("X "));  // the live tensors at the peak
}

TEST(BlockExecutor, BadInputsAreErrorsBeforeAnyWork) {
  Chain c;
  const BlockExecutor exec(c.b.graph, {.kernels = reference()});
  BufferMap inputs = generate_inputs(c.b.graph, {.seed = 5});
  BufferMap missing = inputs;
  missing.erase(find_tensor(c.b.graph, "W"));
  EXPECT_THAT(error_of([&] { (void)exec.run(missing); }),
              HasSubstr("input tensor 'W' has no buffer"));
  BufferMap wrong = inputs;
  wrong[find_tensor(c.b.graph, "W")] = Buffer(DType::kFloat64, Range::of_shape({24, 29}));
  EXPECT_THAT(error_of([&] { (void)exec.run(wrong); }), HasSubstr("W"));
  BufferMap extra = inputs;
  extra[c.lin.result] = Buffer(DType::kFloat32, Range::of_shape({1}));
  EXPECT_THAT(error_of([&] { (void)exec.run(extra); }), HasSubstr("cannot be an input"));
}

// A call the fast set does not recognise (an integer linear: the reference kernel runs it) is
// counted for its operation, in the metrics JSON and in the summary table; a recognised one
// (float relu) is not.
TEST(BlockExecutor, FallbacksToTheReferenceAreCountedPerOperation) {
  GraphBuilder b;
  const Built lin = add_linear(b, b.tensor("X", "int32", Range::of_shape({6, 5})),
                               b.tensor("W", "int32", Range::of_shape({4, 5})),
                               b.tensor("b", "int32", Range::of_shape({4})));
  b.shard(lin.op, {3, 1, 1});
  const Built relu = add_unary(b, "relu", b.tensor("Z", "float32", Range::of_shape({8, 8})));
  b.shard(relu.op, {2, 1});
  const BufferMap inputs = generate_inputs(b.graph, {.seed = 1});
  const BlockExecutor exec(b.graph, {.threads = 2, .kernels = &fast_kernels()});
  const auto [buffers, m] = exec.run_measured(inputs);
  std::map<std::string, std::uint64_t> by_kernel;
  for (const OperationMetrics& op : m.operations) by_kernel[op.kernel] = op.fallbacks;
  EXPECT_EQ(by_kernel, (std::map<std::string, std::uint64_t>{{"linear", 3}, {"relu", 0}}));
  std::uint64_t per_application = 0;
  for (const ApplicationMetrics& a : m.applications) per_application += a.fallbacks;
  EXPECT_EQ(per_application, 3u);
  const nlohmann::json j = metrics_json(m);
  for (const nlohmann::json& op : j["operations"]) {
    EXPECT_EQ(op["fallbacks"], op["kernel"] == "linear" ? 3 : 0) << op.dump();
  }
  // The paths: every linear application ran the reference, every relu the vectorised loops.
  std::map<std::string, KernelPathCounts> paths;
  for (const OperationMetrics& op : m.operations) paths[op.kernel] = op.paths;
  const auto count = [](KernelPath path, std::uint64_t n) {
    KernelPathCounts c{};
    c[static_cast<std::size_t>(path)] = n;
    return c;
  };
  EXPECT_EQ(paths["linear"], count(KernelPath::kReference, 3));
  EXPECT_EQ(paths["relu"], count(KernelPath::kVectorised, 2));
  for (const ApplicationMetrics& a : m.applications) {
    EXPECT_EQ(a.path, a.kernel == "linear" ? KernelPath::kReference : KernelPath::kVectorised);
  }
  EXPECT_EQ(j["fallbacks"], 3);
  EXPECT_EQ(j["paths"], nlohmann::json::parse(R"({"reference": 3, "vectorised": 2})"));
  const nlohmann::json linear_paths = {{"reference", 3}}, relu_paths = {{"vectorised", 2}};
  for (const nlohmann::json& op : j["operations"]) {
    EXPECT_EQ(op["paths"], op["kernel"] == "linear" ? linear_paths : relu_paths);
  }
  const std::string table = summary_table(m);
  EXPECT_THAT(table, HasSubstr("kernel paths: vectorised 2, reference 3 applications; fallbacks "
                               "in linear_1 (3 calls)\n"));
  EXPECT_THAT(table, HasSubstr("GFLOP/s  path       fallbacks\n"));
  EXPECT_THAT(table, ::testing::ContainsRegex("linear +3 .* reference +3\n"));
  EXPECT_THAT(table, ::testing::ContainsRegex("relu +2 .* vectorised +0\n"));
  // The reference kernels never fall back: no column; their path is the reference.
  const BlockExecutor ref(b.graph, {.threads = 2, .kernels = reference()});
  const auto [ref_buffers, ref_metrics] = ref.run_measured(inputs);
  const std::string ref_table = summary_table(ref_metrics);
  EXPECT_THAT(ref_table, HasSubstr("kernel paths: reference 5 applications; 0 fallbacks\n"));
  EXPECT_THAT(ref_table, HasSubstr("GFLOP/s  path\n"));
  EXPECT_EQ(metrics_json(ref_metrics)["operations"][0]["fallbacks"], 0);
}

// A float run the fast kernels serve entirely: GEMMs through a library, the relu through the
// vectorised loops, "0 fallbacks".
TEST(BlockExecutor, FastRunsReportTheirLibraryPaths) {
  GraphBuilder b;
  const Built lin = add_linear(b, b.tensor("X", "float32", Range::of_shape({64, 48})),
                               b.tensor("W", "float32", Range::of_shape({40, 48})),
                               b.tensor("b", "float32", Range::of_shape({40})));
  b.shard(lin.op, {2, 1, 1});
  const Built relu = add_unary(b, "relu", b.tensor("Z", "float32", Range::of_shape({8, 8})));
  b.shard(relu.op, {2, 1});
  const BufferMap inputs = generate_inputs(b.graph, {.seed = 1});
  const BlockExecutor exec(b.graph, {.threads = 2, .kernels = &fast_kernels()});
  for (const GemmBackend backend : {GemmBackend::kOneDnn, GemmBackend::kOpenBlas}) {
    set_gemm_backend(backend);
    const auto [buffers, m] = exec.run_measured(inputs);
    const std::size_t library = static_cast<std::size_t>(
        backend == GemmBackend::kOneDnn ? KernelPath::kOneDnn : KernelPath::kOpenBlas);
    for (const OperationMetrics& op : m.operations) {
      KernelPathCounts expected{};
      expected[op.kernel == "linear" ? library
                                     : static_cast<std::size_t>(KernelPath::kVectorised)] = 2;
      EXPECT_EQ(op.paths, expected) << op.kernel;
    }
    const std::string table = summary_table(m);
    EXPECT_THAT(table, HasSubstr("applications; 0 fallbacks\n"));
    EXPECT_THAT(table, ::testing::Not(HasSubstr("reference")));
  }
  set_gemm_backend(GemmBackend::kAuto);
}

TEST(BlockExecutor, UnknownKernelIsAnErrorAtConstruction) {
  GraphBuilder b;
  const Built built = add_unary(b, "relu", b.tensor("X", "float32", Range::of_shape({4, 4})));
  b.shard(built.op, {2, 2});
  const ExecutableKernels empty;
  EXPECT_THAT(error_of([&] { const BlockExecutor exec(b.graph, {.kernels = &empty}); }),
              HasSubstr("no kernel named 'relu'"));
}

TEST(BlockExecutor, FastKernelsAgreeWithTheReferenceWithinTolerance) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    GraphBuilder b;
    const Built built = c.build(b);
    b.shard(built.op, c.shardings.front());
    const BufferMap inputs = generate_inputs(b.graph, {.seed = 9});
    const BufferMap expected = NaiveExecutor(b.graph).run(inputs);
    const BlockExecutor exec(b.graph, {.threads = 2, .kernels = &fast_kernels(), .poison = true});
    const TensorsComparison cmp =
        compare_tensors(b.graph, expected, exec.run(inputs), std::vector<TensorId>{built.result});
    EXPECT_TRUE(cmp.all_within(1e-4, 1e-4)) << cmp.summary();
  }
}

}  // namespace
}  // namespace tapestry::runtime

namespace tapestry::runtime {
namespace {

// The fused kernels parse their stages once per operation (KernelCall::prepared) instead of on
// every call; both registries carry the prepare function, other kernels have none.
TEST(BlockExecutor, FusedKernelsArePreparedOncePerOperation) {
  EXPECT_NE(ExecutableKernels::reference().find_prepare("fused"), nullptr);
  EXPECT_NE(fast_kernels().find_prepare("fused"), nullptr);
  EXPECT_EQ(fast_kernels().find_prepare("relu"), nullptr);
  EXPECT_EQ(ExecutableKernels::reference().find_prepare("no-such-kernel"), nullptr);
}

}  // namespace
}  // namespace tapestry::runtime

namespace tapestry::runtime {
namespace {

void failing_kernel(const KernelCall& call) {
  call.fail("this kernel always fails");
}

// A kernel's Error leaves the run with the application that raised it as context.
TEST(BlockExecutor, KernelErrorsNameTheApplication) {
  GraphBuilder b;
  const Built built = add_unary(b, "relu", b.tensor("X", "float32", Range::of_shape({4, 4})));
  b.shard(built.op, {2, 1});
  ExecutableKernels failing;
  failing.add("relu", &failing_kernel);
  const BlockExecutor exec(b.graph, {.threads = 2, .kernels = &failing});
  const std::string message =
      error_of([&] { (void)exec.run(generate_inputs(b.graph, {.seed = 1})); });
  EXPECT_THAT(message, HasSubstr("this kernel always fails"));
  EXPECT_THAT(message, HasSubstr("application '"));
}

// Integer tensors are poisoned with their lowest value (NaN has no integer form).
TEST(BlockExecutor, PoisonFillsIntegerBuffersWithTheirLowestValue) {
  GraphBuilder b;
  const Built built = add_unary(b, "neg", b.tensor("X", "int32", Range::of_shape({3, 5})));
  b.shard(built.op, {3, 1});
  const BufferMap inputs = generate_inputs(b.graph, {.seed = 2});
  const BlockExecutor exec(b.graph, {.kernels = reference(), .poison = true});
  EXPECT_TRUE(compare_tensors(b.graph, ApplicationExecutor(b.graph).run(inputs), exec.run(inputs))
                  .all_bitwise_equal());
}

}  // namespace
}  // namespace tapestry::runtime

#if defined(__linux__)
namespace tapestry::runtime {
namespace {

// CPUs a thread of this process may run on ("Cpus_allowed_list" in /proc), counted.
int allowed_cpus(const std::string& status_path) {
  std::ifstream in(status_path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Cpus_allowed_list:", 0) != 0) continue;
    int count = 0;
    std::stringstream list(line.substr(line.find(':') + 1));
    std::string part;
    while (std::getline(list, part, ',')) {
      const auto dash = part.find('-');
      count += dash == std::string::npos
                   ? 1
                   : std::stoi(part.substr(dash + 1)) - std::stoi(part.substr(0, dash)) + 1;
    }
    return count;
  }
  return 0;
}

// Two shards of a 128×512×512 product (~30 ms each on the reference kernels): enough work that
// a worker joins the run. (With tiny runs the caller may do every application itself.)
struct TwoSlowShards {
  GraphBuilder b;
  TwoSlowShards() {
    const Built lin = add_linear(b, b.tensor("X", "float32", Range::of_shape({256, 512})),
                                 b.tensor("W", "float32", Range::of_shape({512, 512})),
                                 b.tensor("b", "float32", Range::of_shape({512})));
    b.shard(lin.op, {2, 1, 1});
  }
};

// Runs `exec` until a worker (pool thread index > 0) runs an application, for up to 30 s.
bool a_worker_runs_an_application(const BlockExecutor& exec, const BufferMap& inputs) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    const RunMetrics m = exec.run_measured(inputs).metrics;
    for (const ApplicationMetrics& a : m.applications) {
      if (a.thread > 0) return true;
    }
  }
  return false;
}

// oneTBB 2021.8 loses its workers when arenas come and go: after 200 executors of 2 threads
// (30 did not show it) were made, run once and destroyed — a Python session calling Graph.run
// 200 times — every application of the next one ran on the calling thread for 30 s (the pool
// is now one per thread count for the process: block_executor.cpp's ThreadPool).
TEST(BlockExecutor, ExecutorsMadeOneAfterAnotherStillGetWorkers) {
  if (allowed_cpus("/proc/self/status") < 2) GTEST_SKIP() << "one CPU: no worker to get";
  Chain c;
  const BufferMap chain_inputs = generate_inputs(c.b.graph, {.seed = 5});
  for (int i = 0; i < 200; ++i) {
    const BlockExecutor exec(c.b.graph, {.threads = 2, .kernels = reference()});
    (void)exec.run(chain_inputs);
  }
  TwoSlowShards g;
  const BufferMap inputs = generate_inputs(g.b.graph, {.seed = 5});
  const BlockExecutor exec(g.b.graph, {.threads = 2, .kernels = reference()});
  EXPECT_TRUE(a_worker_runs_an_application(exec, inputs));
}

// The pool keeps the worker threads that joined its arena off the caller's core (the file
// comment of block_executor.cpp says why): once a worker has run an application, the next run
// has narrowed it to fewer CPUs than the process, and the caller's own mask is untouched.
TEST(BlockExecutor, WorkersAreKeptOffTheCallersCore) {
  const int cpus = allowed_cpus("/proc/self/status");
  if (cpus < 2) GTEST_SKIP() << "one CPU: nothing to keep apart";
  TwoSlowShards g;
  const BufferMap inputs = generate_inputs(g.b.graph, {.seed = 5});
  const BlockExecutor exec(g.b.graph, {.threads = 2, .kernels = reference()});
  ASSERT_TRUE(a_worker_runs_an_application(exec, inputs));
  (void)exec.run(inputs);
  int narrowed = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    const int n = allowed_cpus(task.path().string() + "/status");
    narrowed += n > 0 && n < cpus ? 1 : 0;
  }
  EXPECT_GE(narrowed, 1);
  EXPECT_EQ(allowed_cpus("/proc/thread-self/status"), cpus);
}

}  // namespace
}  // namespace tapestry::runtime
#endif
