// ir_bench: load + validate (application dialect, then operation-kernel-agreement, as `tapestry
// run`, `shard` and `verify` load a graph) a generated graph of a million applications.
//
//   ir_bench                       generate 1,000 ops × 1,000 shards, then measure load+validate
//                                  in a fresh process (so peak RSS is only that)
//   ir_bench generate FILE [--ops N] [--shards S] [--kind linear|add]
//   ir_bench load FILE             read + validate FILE; print seconds per phase and peak RSS
//
// The generated graph is a chain of `ops` operations. `linear` (the default): Y_i = X_i·W_iᵀ + b_i
// with index [batch, out, in], `in` a sum reduction, each operation sharded over batch × out into
// `shards` applications (3 inputs, 1 output, 3-D index boxes). `add`: Y_i = Y_{i-1} + B_i,
// elementwise over [d0, d1] (2 inputs, 1 output, 2-D boxes). Ports and index names are the
// built-in kernels'. Compact JSON, full type URLs.
#include <fmt/format.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <time.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tapestry/ir/dialect.h"
#include "tapestry/ir/graph.h"
#include "tapestry/ir/json_io.h"
#include "tapestry/rewrite/kernel_agreement.h"

extern char** environ;

namespace {

using tapestry::ir::Graph;
using tapestry::zspace::AffineMap;
using tapestry::zspace::IndexProjection;
using tapestry::zspace::Point;
using tapestry::zspace::Range;
namespace ir = tapestry::ir;

struct GenOptions {
  int ops = 1000;
  int shards = 1000;
  std::string kind = "linear";
};

// A grid of rows × cols = shards, as square as the factors allow.
std::pair<int, int> grid_for(int shards) {
  int rows = static_cast<int>(std::sqrt(static_cast<double>(shards)));
  while (shards % rows != 0) --rows;
  return {rows, shards / rows};
}

IndexProjection ipf(const std::vector<std::vector<std::int64_t>>& rows, Point shape) {
  Point offset = Point::zeros(rows.size());
  return IndexProjection(AffineMap::from_rows(rows, offset), std::move(shape));
}

// One operation and its shards. `index` is [batch, out(, in)]; the grid splits batch × out.
void add_sharded(Graph& g, ir::OperationBody body, const ir::IpfSignature& sig, const Range& index,
                 int shards) {
  auto [rows, cols] = grid_for(shards);
  ir::OperationId op = g.add_operation(body, {.label = body.kernel});
  g.set_ipf_index(op, index);
  g.set_ipf_signature(op, sig);
  std::vector<std::int64_t> parts(index.rank(), 1);
  parts[0] = rows;
  parts[1] = cols;
  for (const Range& box : index.split_grid(parts)) {
    ir::ApplicationBody app{.operation = op};
    for (const auto& e : body.inputs.entries()) {
      app.inputs.append(e.name, {e.value.tensor, sig.inputs.list(e.name)[e.position].apply(box)});
    }
    for (const auto& e : body.outputs.entries()) {
      app.outputs.append(e.name, {e.value.tensor, sig.outputs.list(e.name)[e.position].apply(box)});
    }
    ir::ApplicationId id = g.add_application(std::move(app));
    g.set_ipf_index(id, box);
  }
}

Graph generate(const GenOptions& o) {
  Graph g;
  const std::int64_t batch = 1000, width = 1600, in = 1600;
  auto tensor = [&](const char* label, Point shape) {
    return g.add_tensor({.dtype = ir::DType::kFloat32, .range = Range::of_shape(shape)},
                        {.label = label});
  };
  ir::TensorId x = tensor("x0", {batch, in});
  for (int i = 0; i < o.ops; ++i) {
    ir::OperationBody body{.kernel = o.kind};
    ir::IpfSignature sig;
    Range index;
    ir::TensorId y = tensor("y", {batch, width});
    if (o.kind == "linear") {
      ir::TensorId w = tensor("w", {width, in});
      ir::TensorId b = tensor("b", {width});
      index = Range::of_shape({batch, width, in});
      body.index_names = {"batch", "out", "in"};
      body.reductions = {{"in", ir::Monoid::kSum}};
      body.inputs.append("x", {x, Range::of_shape({batch, in})});
      body.inputs.append("w", {w, Range::of_shape({width, in})});
      body.inputs.append("bias", {b, Range::of_shape({width})});
      body.outputs.append("result", {y, Range::of_shape({batch, width})});
      sig.inputs.append("x", ipf({{1, 0, 0}, {0, 0, 1}}, {1, 1}));
      sig.inputs.append("w", ipf({{0, 1, 0}, {0, 0, 1}}, {1, 1}));
      sig.inputs.append("bias", ipf({{0, 1, 0}}, {1}));
      sig.outputs.append("result", ipf({{1, 0, 0}, {0, 1, 0}}, {1, 1}));
    } else {
      ir::TensorId b = tensor("b", {batch, width});
      index = Range::of_shape({batch, width});
      body.index_names = {"d0", "d1"};
      body.inputs.append("a", {x, Range::of_shape({batch, width})});
      body.inputs.append("b", {b, Range::of_shape({batch, width})});
      body.outputs.append("result", {y, Range::of_shape({batch, width})});
      sig.inputs.append("a", IndexProjection::identity(2));
      sig.inputs.append("b", IndexProjection::identity(2));
      sig.outputs.append("result", IndexProjection::identity(2));
    }
    add_sharded(g, std::move(body), sig, index, o.shards);
    x = y;
  }
  return g;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Peak resident memory of this process image in MB: VmHWM, which (unlike getrusage's ru_maxrss)
// starts afresh at exec, so `load` in the child does not inherit the generator's peak.
double peak_rss_mb() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  char line[256];
  double kb = -1;
  while (f != nullptr && std::fgets(line, sizeof line, f) != nullptr) {
    if (std::sscanf(line, "VmHWM: %lf kB", &kb) == 1) break;
  }
  if (f != nullptr) std::fclose(f);
  if (kb < 0) {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    kb = static_cast<double>(usage.ru_maxrss);
  }
  return kb / 1024.0;
}

// CPU time of this process (user + system): on a shared machine the honest measure of work.
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

int load(const std::string& file) {
  double c0 = cpu_seconds();
  auto t0 = std::chrono::steady_clock::now();
  ir::ReadResult read = ir::read_graph_file(file);
  double t_read = seconds_since(t0);
  double c_read = cpu_seconds() - c0;
  if (!read.graph) {
    fmt::print(stderr, "{}", ir::format_issues_text(read.issues));
    return 2;
  }
  auto t1 = std::chrono::steady_clock::now();
  double c1 = cpu_seconds();
  ir::ValidationReport report = ir::validate(*read.graph, ir::Dialect::application());
  double t_validate = seconds_since(t1);
  double c_validate = cpu_seconds() - c1;
  // The check `tapestry run`, `shard` and `verify` add when they load a graph: per operation, not
  // per application. Timed on its own (it runs after the dialect's constraints there).
  auto t2 = std::chrono::steady_clock::now();
  double c2 = cpu_seconds();
  const ir::Dialect kernel_check(
      "kernel-check", {}, {}, {},
      {tapestry::rewrite::operation_kernel_agreement(tapestry::metakernel::builtin_signatures())});
  ir::ValidationReport kernels = ir::validate(*read.graph, kernel_check);
  double t_kernels = seconds_since(t2);
  double c_kernels = cpu_seconds() - c2;
  for (ir::Issue& issue : kernels.issues) report.issues.push_back(std::move(issue));
  fmt::print("nodes {}  operations {}  applications {}  issues {} (read) + {} (validate)\n",
             read.graph->size(), read.graph->operations().size(), read.graph->applications().size(),
             read.issues.size(), report.issues.size());
  fmt::print("wall: read {:.3f} s  validate {:.3f} s  kernel check {:.3f} s  total {:.3f} s\n",
             t_read, t_validate, t_kernels, t_read + t_validate + t_kernels);
  fmt::print(
      "cpu:  read {:.3f} s  validate {:.3f} s  kernel check {:.3f} s  total {:.3f} s  peak RSS "
      "{:.0f} MB\n",
      c_read, c_validate, c_kernels, c_read + c_validate + c_kernels, peak_rss_mb());
  for (const auto& [name, seconds] : report.timings) {
    if (seconds >= 0.01) fmt::print("  {:<30} {:.3f} s\n", name, seconds);
  }
  if (!report.issues.empty()) fmt::print("{}", ir::format_issue_text(report.issues.front()));
  return report.is_valid() ? 0 : 1;
}

int generate_file(const std::string& file, const GenOptions& o) {
  auto t0 = std::chrono::steady_clock::now();
  Graph g = generate(o);
  ir::write_graph_file(g, file, {.indent = -1});
  fmt::print("generated {} ({} ops × {} shards, {}): {:.0f} MB in {:.1f} s\n", file, o.ops,
             o.shards, o.kind, static_cast<double>(std::filesystem::file_size(file)) / 1e6,
             seconds_since(t0));
  return 0;
}

GenOptions parse_gen_options(int argc, char** argv, int from) {
  GenOptions o;
  for (int i = from; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--ops") o.ops = std::atoi(argv[i + 1]);
    if (flag == "--shards") o.shards = std::atoi(argv[i + 1]);
    if (flag == "--kind") o.kind = argv[i + 1];
  }
  return o;
}

// Re-runs this program as `load FILE` so the measured peak RSS excludes generation.
int load_in_child(const std::string& file) {
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string load_arg = "load";
  char* args[] = {self.data(), load_arg.data(), const_cast<char*>(file.c_str()), nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, self.c_str(), nullptr, nullptr, args, environ) != 0) return 2;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "generate" && argc > 2)
    return generate_file(argv[2], parse_gen_options(argc, argv, 3));
  if (mode == "load" && argc > 2) return load(argv[2]);
  std::string file = (std::filesystem::temp_directory_path() / "tapestry_ir_bench.json").string();
  generate_file(file, GenOptions{});
  int status = load_in_child(file);
  std::filesystem::remove(file);
  return status;
}
