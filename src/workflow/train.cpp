// The training loop's steps (train.h).
#include "tapestry/workflow/train.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdio.h>  // renameat2 (glibc ≥ 2.28)
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "tapestry/ir/state_update.h"
#include "tapestry/metakernel/apply.h"
#include "tapestry/runtime/npy.h"
#include "tapestry/support/assert.h"
#include "tapestry/support/error.h"

namespace tapestry::workflow {

namespace fs = std::filesystem;

namespace {

std::string name_of(const ir::Graph& graph, ir::TensorId t) {
  return runtime::tensor_name(graph, t);
}

bool is_integer_scalar(const ir::Graph& graph, ir::TensorId t) {
  const ir::TensorView view = graph.tensor(t);
  const std::optional<ir::DType> dtype = view.dtype().known();
  return view.range().rank() == 0 && dtype &&
         (*dtype == ir::DType::kInt32 || *dtype == ir::DType::kInt64);
}

bool is_float_scalar(const ir::Graph& graph, ir::TensorId t) {
  const ir::TensorView view = graph.tensor(t);
  const std::optional<ir::DType> dtype = view.dtype().known();
  return view.range().rank() == 0 && dtype && ir::is_float(*dtype);
}

std::string shape_text(const zspace::Point& shape) {
  std::vector<std::int64_t> dims(shape.begin(), shape.begin() + shape.rank());
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

ir::TensorId loss_of(const ir::Graph& graph, const std::string& name) {
  if (!name.empty()) {
    const ir::TensorId t = runtime::find_tensor(graph, name);
    if (!is_float_scalar(graph, t)) {
      throw Error(fmt::format("--loss {}: the loss must be a rank-0 float tensor", name));
    }
    return t;
  }
  std::vector<ir::TensorId> candidates;
  for (ir::TensorId t : runtime::graph_outputs(graph)) {
    if (is_float_scalar(graph, t)) candidates.push_back(t);
  }
  if (candidates.size() == 1) return candidates.front();
  if (candidates.empty()) {
    throw Error(
        "the graph has no rank-0 float output to report as the loss (output one, or name it "
        "with --loss)");
  }
  std::vector<std::string> names;
  for (ir::TensorId t : candidates) names.push_back(name_of(graph, t));
  throw Error(
      fmt::format("the graph has several rank-0 float outputs ({}): name the loss with "
                  "--loss",
                  fmt::join(names, ", ")));
}

// splitmix64: the permutation's random stream, the same on every platform (std::shuffle's
// algorithm is the library's choice, so it could differ between builds).
std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A uniform draw in 0 … bound-1 (rejection sampling: no modulo bias).
std::uint64_t below(std::uint64_t& state, std::uint64_t bound) {
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
  std::uint64_t x = splitmix64(state);
  while (x >= limit) x = splitmix64(state);
  return x % bound;
}

void fsync_path(const fs::path& path, bool directory) {
  const int fd = ::open(path.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0)
    throw Error(fmt::format("cannot open {} to sync it: {}", path.string(), std::strerror(errno)));
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) {
    throw Error(fmt::format("cannot sync {}: {}", path.string(), std::strerror(errno)));
  }
}

void write_file(const fs::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw Error(fmt::format("cannot write {}", path.string()));
  fsync_path(path, false);
}

// The N of TAPESTRY_TRAIN_CRASH_IN_CHECKPOINT (0: none), and how many writes have started.
int crash_at_write() {
  const char* text = std::getenv("TAPESTRY_TRAIN_CRASH_IN_CHECKPOINT");
  return text == nullptr ? 0 : std::atoi(text);
}
int writes_started = 0;

}  // namespace

TrainRoles train_roles(ir::Graph& graph, const RoleOptions& options) {
  for (const auto& [state, next] : options.extra_updates) {
    const ir::TensorId s = runtime::find_tensor(graph, state);
    const ir::TensorId n = runtime::find_tensor(graph, next);
    if (std::optional<std::string> problem = ir::update_problem(graph, s, n, graph.updates())) {
      throw Error(fmt::format("--update {}={}: {}", state, next, *problem));
    }
    graph.add_update({s, n});
  }
  TrainRoles roles;
  roles.updates.assign(graph.updates().begin(), graph.updates().end());
  if (roles.updates.empty()) {
    throw Error(
        "the graph updates no state: declare which result updates which input (.tap: `update W "
        "<- Wn`; JSON: \"updates\"; or --update W=Wn)");
  }
  roles.loss = loss_of(graph, options.loss);
  // Outputs the loop reads: marked (keeping the implicit outputs of a graph that declares none).
  const std::vector<ir::TensorId> outputs = runtime::graph_outputs(graph);
  for (ir::TensorId t : outputs) metakernel::mark_graph_output(graph, t);
  for (const ir::StateUpdate& u : roles.updates) metakernel::mark_graph_output(graph, u.next);
  metakernel::mark_graph_output(graph, roles.loss);

  if (!options.step_input.empty()) {
    const ir::TensorId t = runtime::find_tensor(graph, options.step_input);
    if (!is_integer_scalar(graph, t) || !graph.producers(t).empty()) {
      throw Error(
          fmt::format("--step-input {}: the step input must be a rank-0 integer graph "
                      "input (i32, i64)",
                      options.step_input));
    }
    roles.step = t;
  }
  for (ir::TensorId t : runtime::graph_inputs(graph)) {
    if (ir::is_state(graph, t)) continue;
    if (roles.step == t) continue;
    if (options.step_input.empty() && !roles.step && name_of(graph, t) == "step" &&
        is_integer_scalar(graph, t)) {
      roles.step = t;
      continue;
    }
    const zspace::Range& range = graph.tensor(t).range();
    if (range.rank() == 0) {
      throw Error(
          fmt::format("data input {} has rank 0: a data input's dim 0 is the batch (is it "
                      "state? declare its update)",
                      name_of(graph, t)));
    }
    const std::int64_t batch = range.shape()[0];
    if (!roles.data.empty() && batch != roles.batch) {
      throw Error(fmt::format("data inputs {} and {} have different batch sizes (dim 0: {} and {})",
                              name_of(graph, roles.data.front()), name_of(graph, t), roles.batch,
                              batch));
    }
    roles.batch = batch;
    roles.data.push_back(t);
  }
  return roles;
}

TrainData check_data(const ir::Graph& graph, const TrainRoles& roles,
                     std::map<std::string, runtime::Buffer> arrays, const std::string& source) {
  TrainData data;
  std::optional<ir::TensorId> first;
  for (ir::TensorId t : roles.data) {
    const std::string name = name_of(graph, t);
    const auto it = arrays.find(name);
    if (it == arrays.end()) {
      throw Error(
          fmt::format("{}: no data for input {} ({} is a data input: neither updated "
                      "state nor the step input)",
                      source, name, name));
    }
    runtime::Buffer array = std::move(it->second);
    const zspace::Point want = graph.tensor(t).range().shape();
    const zspace::Point have = array.range().shape();
    const ir::DType dtype = runtime::tensor_dtype(graph, t);
    bool fits = array.dtype() == dtype && have.rank() == want.rank();
    for (std::size_t d = 1; fits && d < want.rank(); ++d) fits = have[d] == want[d];
    if (!fits) {
      throw Error(fmt::format(
          "{}: the data of {} is {} {}, but {} is {} {}: expected {} [N, {}]", source, name,
          ir::dtype_name(array.dtype()), shape_text(have), name, ir::dtype_name(dtype),
          shape_text(want), ir::dtype_name(dtype),
          fmt::join(std::vector<std::int64_t>(want.begin() + 1, want.begin() + want.rank()),
                    ", ")));
    }
    if (first && have[0] != data.rows) {
      throw Error(
          fmt::format("{}: the data arrays have different lengths: {} has {} rows, {} has "
                      "{}",
                      source, name_of(graph, *first), data.rows, name, have[0]));
    }
    if (!first) {
      first = t;
      data.rows = have[0];
    }
    data.arrays.emplace(t, std::move(array).relocated(zspace::Point::zeros(have.rank())));
  }
  if (first && data.rows < roles.batch) {
    throw Error(fmt::format("{}: {} rows of data, fewer than one batch ({} rows: dim 0 of {})",
                            source, data.rows, roles.batch, name_of(graph, *first)));
  }
  return data;
}

runtime::BufferMap check_state(const ir::Graph& graph, const TrainRoles& roles,
                               std::map<std::string, runtime::Buffer> state,
                               const std::string& source) {
  runtime::BufferMap out;
  for (const ir::StateUpdate& u : roles.updates) {
    const std::string name = name_of(graph, u.state);
    const auto it = state.find(name);
    if (it == state.end()) {
      throw Error(fmt::format("{}: no value for state input {} (updated by {})", source, name,
                              name_of(graph, u.next)));
    }
    try {
      out.emplace(u.state, runtime::bind_buffer(graph, u.state, std::move(it->second)));
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {}", source, e.what()));
    }
  }
  return out;
}

BatchOrder::BatchOrder(std::int64_t rows, std::int64_t batch, std::uint64_t seed, bool shuffle)
    : rows_(rows), batch_(batch), seed_(seed), shuffle_(shuffle) {
  if (batch < 1 || batch > rows) {
    throw Error(fmt::format("a batch of {} rows does not fit {} rows of data", batch, rows));
  }
}

std::vector<std::int64_t> BatchOrder::permutation(std::int64_t epoch) const {
  std::vector<std::int64_t> order(static_cast<std::size_t>(rows_));
  std::iota(order.begin(), order.end(), 0);
  if (!shuffle_) return order;
  std::uint64_t state = seed_ * 0x2545f4914f6cdd1dULL ^ static_cast<std::uint64_t>(epoch);
  (void)splitmix64(state);
  for (std::size_t i = order.size(); i > 1; --i) {  // Fisher–Yates
    std::swap(order[i - 1], order[below(state, i)]);
  }
  return order;
}

std::vector<std::int64_t> BatchOrder::rows(std::int64_t step) const {
  const std::int64_t epoch = step / steps_per_epoch();
  const std::int64_t first = (step % steps_per_epoch()) * batch_;
  if (epoch != cached_epoch_) {
    cached_ = permutation(epoch);
    cached_epoch_ = epoch;
  }
  return {cached_.begin() + first, cached_.begin() + first + batch_};
}

runtime::Buffer gather_rows(const runtime::Buffer& array, std::span<const std::int64_t> rows,
                            const zspace::Range& range) {
  runtime::Buffer out(array.dtype(), range, runtime::Buffer::Uninitialized{});
  const std::int64_t n = array.range().shape()[0];
  const std::size_t row_bytes = n == 0 ? 0 : array.size_bytes() / static_cast<std::size_t>(n);
  TAPESTRY_ASSERT(out.size_bytes() == row_bytes * rows.size(), "a batch is whole rows");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::memcpy(out.bytes() + i * row_bytes,
                array.bytes() + static_cast<std::size_t>(rows[i]) * row_bytes, row_bytes);
  }
  return out;
}

TrainResult run_training(const ir::Graph& graph, const TrainRoles& roles, const TrainData& data,
                         runtime::BufferMap state, const StepFunction& step,
                         const TrainLoop& loop) {
  std::optional<BatchOrder> order;
  if (!roles.data.empty()) order.emplace(data.rows, roles.batch, loop.seed, loop.shuffle);
  TrainResult result;
  for (std::int64_t i = 0; i < loop.steps; ++i) {
    const std::int64_t global = loop.start_step + i;  // 0-based
    // The state moves into the step's inputs (no copy): each entry comes back from its update.
    runtime::BufferMap inputs = std::exchange(state, {});
    if (order) {
      const std::vector<std::int64_t> rows = order->rows(global);
      for (ir::TensorId t : roles.data) {
        inputs.emplace(t, gather_rows(data.arrays.at(t), rows, graph.tensor(t).range()));
      }
    }
    if (roles.step) {
      const zspace::Range scalar = graph.tensor(*roles.step).range();
      inputs.emplace(*roles.step,
                     runtime::tensor_dtype(graph, *roles.step) == ir::DType::kInt32
                         ? runtime::Buffer::from_values<std::int32_t>(
                               scalar, {static_cast<std::int32_t>(global + 1)})
                         : runtime::Buffer::from_values<std::int64_t>(scalar, {global + 1}));
    }
    const auto start = std::chrono::steady_clock::now();
    runtime::BufferMap outputs = step(std::move(inputs));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto loss = outputs.find(roles.loss);
    TAPESTRY_ASSERT(loss != outputs.end(), "the step's results hold the loss");
    const double value = loss->second.dtype() == ir::DType::kFloat64
                             ? loss->second.values<double>()[0]
                         : loss->second.dtype() == ir::DType::kFloat32
                             ? static_cast<double>(loss->second.values<float>()[0])
                             : std::nan("");
    for (const ir::StateUpdate& u : roles.updates) {
      auto next = outputs.find(u.next);
      TAPESTRY_ASSERT(next != outputs.end(), "the step's results hold every next state");
      state.insert_or_assign(
          u.state, std::move(next->second).relocated(graph.tensor(u.state).range().start()));
    }
    result.reports.push_back({global + 1, value, seconds});
    if (loop.on_step) loop.on_step(result.reports.back(), state);
  }
  result.state = std::move(state);
  return result;
}

std::string state_file_name(const std::string& name) {
  std::string file = name;
  std::replace(file.begin(), file.end(), '/', '_');
  return file + ".npy";
}

std::pair<runtime::BufferMap, std::optional<TrainCursor>> read_state_dir(const ir::Graph& graph,
                                                                         const TrainRoles& roles,
                                                                         const fs::path& dir) {
  if (!fs::is_directory(dir)) {
    throw Error(fmt::format("state directory {}: not a directory", dir.string()));
  }
  std::map<std::string, runtime::Buffer> by_name;
  for (const ir::StateUpdate& u : roles.updates) {
    const std::string name = name_of(graph, u.state);
    const fs::path path = dir / state_file_name(name);
    if (!fs::is_regular_file(path)) {
      throw Error(fmt::format("{}: missing: the state input {} (updated by {}) has no file",
                              path.string(), name, name_of(graph, u.next)));
    }
    try {
      by_name.emplace(name, runtime::bind_buffer(graph, u.state, runtime::read_npy(path)));
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {}", path.string(), e.what()));
    }
  }
  runtime::BufferMap state = check_state(graph, roles, std::move(by_name), dir.string());
  std::optional<TrainCursor> cursor;
  const fs::path json_path = dir / "train.json";
  if (fs::exists(json_path)) {
    std::ifstream in(json_path);
    try {
      const nlohmann::json json = nlohmann::json::parse(in);
      cursor = TrainCursor{.step = json.at("step").get<std::int64_t>(),
                           .seed = json.at("seed").get<std::uint64_t>(),
                           .shuffle = json.at("shuffle").get<bool>()};
    } catch (const std::exception& e) {
      throw Error(
          fmt::format("{}: not a training cursor ({{\"step\": …, \"seed\": …, "
                      "\"shuffle\": …}}): {}",
                      json_path.string(), e.what()));
    }
    if (cursor->step < 0) throw Error(fmt::format("{}: a negative step", json_path.string()));
  }
  return {std::move(state), cursor};
}

void write_state_dir(const ir::Graph& graph, const TrainRoles& roles,
                     const runtime::BufferMap& state, const TrainCursor& cursor,
                     const fs::path& dir) {
  const int write_number = ++writes_started;
  const fs::path target = fs::absolute(dir).lexically_normal();
  const fs::path parent = target.parent_path();
  const std::string base = target.filename().string();
  const fs::path temp = parent / fmt::format(".{}.writing-{}", base, ::getpid());
  fs::remove_all(temp);
  std::error_code ec;
  fs::create_directories(temp, ec);
  if (ec) throw Error(fmt::format("cannot create {}: {}", temp.string(), ec.message()));
  std::set<std::string> ours{"train.json"};
  std::size_t written = 0;
  for (const ir::StateUpdate& u : roles.updates) {
    const std::string file = state_file_name(name_of(graph, u.state));
    ours.insert(file);
    write_file(temp / file, runtime::format_npy(state.at(u.state)));
    if (++written == 1 && write_number == crash_at_write()) std::_Exit(3);  // the test hook
  }
  const nlohmann::json json{
      {"step", cursor.step}, {"seed", cursor.seed}, {"shuffle", cursor.shuffle}};
  write_file(temp / "train.json", json.dump(1) + "\n");
  // Files of the old directory that are not the state's stay (hard links: no copy).
  if (fs::is_directory(target)) {
    for (const fs::directory_entry& e : fs::directory_iterator(target)) {
      const std::string name = e.path().filename().string();
      if (ours.count(name)) continue;
      fs::create_hard_link(e.path(), temp / name, ec);
      if (ec) fs::copy(e.path(), temp / name, fs::copy_options::recursive, ec);
      if (ec) {
        throw Error(
            fmt::format("cannot keep {} in the new state: {}", e.path().string(), ec.message()));
      }
    }
  }
  fsync_path(temp, true);
  if (fs::exists(target)) {
    // One atomic swap: the directory at `target` is the old one or the new one.
    if (::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) != 0) {
      throw Error(fmt::format("cannot replace {} by {}: {}", target.string(), temp.string(),
                              std::strerror(errno)));
    }
    fs::remove_all(temp, ec);  // the old state, now under the temporary name
  } else if (::rename(temp.c_str(), target.c_str()) != 0) {
    throw Error(fmt::format("cannot rename {} to {}: {}", temp.string(), target.string(),
                            std::strerror(errno)));
  }
  fsync_path(parent, true);
}

}  // namespace tapestry::workflow
