// The training loop: one compiled training step run N times, its state carried from each step's
// outputs to the next step's inputs (docs/training.md, "The training loop"). `tapestry train`
// and Python's tapestry.train call these steps; they only parse, read files and print.
//
//   1. train_roles     which graph inputs are STATE (updated by the step: ir/state_update.h),
//                      which are DATA (fed a batch from the data arrays), which one is the STEP
//                      input (a rank-0 integer, fed the 1-based global step number), and the
//                      loss (the only rank-0 float output, or the one named)
//   2. check_data      the data arrays: one per data input, dtype and trailing shape the input's,
//                      one leading dim N_total shared by all; the batch size is the inputs' dim 0
//   3. check_state     the state buffers: one per state input, its dtype and shape
//   4. BatchOrder      which rows step s reads: a pure function of (seed, s) — epoch s / E takes
//                      a permutation of the N_total rows (seeded by (seed, epoch); in order
//                      without shuffling), E = N_total / batch batches of it, the tail dropped
//   5. run_training    steps start+1 … start+N, each: gather the batch, run the step function
//                      (the caller's executor: block, application or MPI; built once, run N
//                      times), read the loss, carry next → state; a callback per step
//   6. write_state_dir / read_state_dir: DIR/<state>.npy and DIR/train.json (steps done, seed,
//                      shuffling), written atomically: a sibling temporary directory, fsynced,
//                      swapped in with one rename (renameat2 RENAME_EXCHANGE) — a reader sees the
//                      old directory or the new one, never a mix.
//
// A linear regression trained by hand (the whole loop, with the block executor):
//
//   ir::Graph g = …;   // X: f32[8, 4], T: f32[8, 1], W: f32[1, 4]; L = mse(…); update W <- Wn
//   const TrainRoles roles = train_roles(g, {});         // state W, data X and T, loss L
//   const TrainData data = check_data(g, roles, {{"X", x_all}, {"T", t_all}}, "data");
//   runtime::BufferMap state = check_state(g, roles, {{"W", w0}}, "state");
//   const rewrite::LowerResult lowered = lower_for_run(g, {}, {});
//   const runtime::BlockExecutor executor(lowered.graph, {});
//   const StepFunction step = [&](runtime::BufferMap in) {
//     return graph_results(g, lowered, executor.run(lowered_inputs(lowered, std::move(in))));
//   };
//   TrainResult r = run_training(g, roles, data, std::move(state), step,
//                                {.steps = 100, .start_step = 0, .seed = 0});
//   r.losses.size() == 100;   r.state.at(W) is W after 100 steps
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/runtime/tensor_map.h"

namespace tapestry::workflow {

struct RoleOptions {
  /// Updates beyond the graph's own (`--update W=Wn`), as (state name, next name).
  std::vector<std::pair<std::string, std::string>> extra_updates;
  /// The step input's name: empty means `step` when the graph has a rank-0 integer input of
  /// that name (else none); a name given must be such an input.
  std::string step_input;
  /// The loss: empty means the graph's only rank-0 float output.
  std::string loss;
};

struct TrainRoles {
  std::vector<ir::StateUpdate> updates;  // the graph's, then the extra ones
  std::vector<ir::TensorId> data;        // in graph order
  std::optional<ir::TensorId> step;
  ir::TensorId loss;
  std::int64_t batch = 0;  // dim 0 of the data inputs (0 when there is none)
};

/// Step 1. Adds `options.extra_updates` to `graph` (each checked by ir::update_problem) and
/// marks every update's next value and the loss graph outputs, so the step's results hold them.
/// Error naming the tensor: an unknown name, an update that does not fit, no loss or several
/// candidates, a step input that is not a rank-0 integer, a data input of rank 0 or whose dim 0
/// differs from the others'.
TrainRoles train_roles(ir::Graph& graph, const RoleOptions& options);

/// The data arrays keyed by data input, and their shared leading dim.
struct TrainData {
  std::map<ir::TensorId, runtime::Buffer> arrays;
  std::int64_t rows = 0;
};

/// Step 2. `arrays` by input name (extra names are ignored); `source` names where they came
/// from in errors ("data dir d/": "d/X.npy"). Error naming the input when one is missing, has
/// another dtype or trailing shape, the leading dims differ, or there are fewer rows than a batch.
TrainData check_data(const ir::Graph& graph, const TrainRoles& roles,
                     std::map<std::string, runtime::Buffer> arrays, const std::string& source);

/// Step 3. The state buffers keyed by state input (relocated to the input's range). Error naming
/// the input when one is missing or has another dtype or shape.
runtime::BufferMap check_state(const ir::Graph& graph, const TrainRoles& roles,
                               std::map<std::string, runtime::Buffer> state,
                               const std::string& source);

/// Step 4: the rows of each step's batch.
class BatchOrder {
 public:
  /// Error when `batch` is not in 1 … rows.
  BatchOrder(std::int64_t rows, std::int64_t batch, std::uint64_t seed, bool shuffle);
  [[nodiscard]] std::int64_t steps_per_epoch() const { return rows_ / batch_; }
  /// The rows of the batch of 0-based step `step` (a pure function of the seed and `step`).
  [[nodiscard]] std::vector<std::int64_t> rows(std::int64_t step) const;
  /// Rows 0 … rows-1 in epoch `epoch`'s order.
  [[nodiscard]] std::vector<std::int64_t> permutation(std::int64_t epoch) const;

 private:
  std::int64_t rows_;
  std::int64_t batch_;
  std::uint64_t seed_;
  bool shuffle_;
  mutable std::int64_t cached_epoch_ = -1;
  mutable std::vector<std::int64_t> cached_;
};

/// `array`'s rows `rows` (dim 0) stacked, as a buffer of `range` (the data input's range).
runtime::Buffer gather_rows(const runtime::Buffer& array, std::span<const std::int64_t> rows,
                            const zspace::Range& range);

/// Runs one step: the graph's inputs (keyed by its tensors) in, its outputs (keyed by its
/// tensors: graph_results) out.
using StepFunction = std::function<runtime::BufferMap(runtime::BufferMap inputs)>;

struct StepReport {
  std::int64_t step = 0;  // the global 1-based step number
  double loss = 0;
  double seconds = 0;  // wall time of the step function
};

struct TrainLoop {
  std::int64_t steps = 0;
  std::int64_t start_step = 0;  // steps done before (a resumed run)
  std::uint64_t seed = 0;
  bool shuffle = true;
  /// Called after each step with its report and the state after it (e.g. to checkpoint).
  std::function<void(const StepReport&, const runtime::BufferMap& state)> on_step;
};

struct TrainResult {
  std::vector<StepReport> reports;
  runtime::BufferMap state;  // keyed by the state inputs
};

/// Step 5.
TrainResult run_training(const ir::Graph& graph, const TrainRoles& roles, const TrainData& data,
                         runtime::BufferMap state, const StepFunction& step, const TrainLoop& loop);

/// What train.json records beside the state.
struct TrainCursor {
  std::int64_t step = 0;  // steps done
  std::uint64_t seed = 0;
  bool shuffle = true;
};

/// The file of a tensor in a state or data directory: `<name>.npy`, '/' replaced by '_'.
std::string state_file_name(const std::string& name);

/// Step 6: reads DIR/<state>.npy for every state input (check_state's errors, naming the file)
/// and DIR/train.json when present (else the cursor at step 0).
std::pair<runtime::BufferMap, std::optional<TrainCursor>> read_state_dir(
    const ir::Graph& graph, const TrainRoles& roles, const std::filesystem::path& dir);

/// Step 6: writes the state and the cursor to `dir` atomically (see the file comment); files in
/// `dir` that are not the state's are kept. Test hook: with the environment variable
/// TAPESTRY_TRAIN_CRASH_IN_CHECKPOINT=N the process exits (code 3, no cleanup) in the middle of
/// its N-th write, after some state files are written to the temporary directory — a kill
/// mid-checkpoint.
void write_state_dir(const ir::Graph& graph, const TrainRoles& roles,
                     const runtime::BufferMap& state, const TrainCursor& cursor,
                     const std::filesystem::path& dir);

}  // namespace tapestry::workflow
