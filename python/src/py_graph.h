// PyGraph: the graph behind a Python `tapestry.Graph` — built call by call, or loaded whole —
// and what Python does with it: the validated snapshot that runs, shards and prices, and the
// compiled programs and evaluators kept between calls.
//
//   auto g = std::make_shared<PyGraph>(builtin_signatures_ptr());
//   metakernel::Tensor x = g->input("X", DType::kFloat32, Range::of_shape({8, 4}));
//   g->output(g->assign("Y", g->call("relu", {x}, {})));
//   std::shared_ptr<const ir::Graph> snapshot = g->validated();   // GraphError when invalid
//
// Concurrency: builder calls and validated() run with the GIL held, so they never overlap each
// other. What runs without the GIL (lowering, compiling, executing, pricing) works on a
// validated snapshot — immutable, shared — and takes `work_mutex()`, so one Graph does one such
// job at a time; a builder call meanwhile changes the graph for later calls, not the running one.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/cost/evaluator.h"
#include "tapestry/cost/target.h"
#include "tapestry/gpu/cuda.h"
#include "tapestry/ir/graph.h"
#include "tapestry/metakernel/autodiff.h"
#include "tapestry/metakernel/builder.h"
#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/metakernel/tap_parser.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/runtime/block_executor.h"
#include "tapestry/runtime/verify.h"

namespace tapestry::python {

/// Kernel signatures, shared by a graph and everything made from it.
using Signatures = std::shared_ptr<const metakernel::SignatureRegistry>;
/// The built-in kernels (kernels/*.yaml).
Signatures builtin_signatures_ptr();
/// The built-ins plus the kernel files of every directory in `dirs`.
Signatures load_signatures(const std::vector<std::string>& dirs);

/// Reads `path` (`.tap` → built, anything else → loom JSON) and validates it, kernel agreement
/// included. GraphError with the located diagnostics or issues, naming the file.
/// `dims` binds the .tap program's dim variables (`dim batch = 8`; tap_parser.h); GraphError for
/// a loom JSON graph, whose sizes are fixed.
ir::Graph load_graph_file(const std::string& path, const metakernel::SignatureRegistry& signatures,
                          const metakernel::tap::DimBindings& dims = {});
/// Builds `.tap` source text; diagnostics name `source_name`.
ir::Graph parse_tap_text(const std::string& text, const std::string& source_name,
                         const metakernel::SignatureRegistry& signatures,
                         const metakernel::tap::DimBindings& dims = {});

/// What the latest run of a graph did (tapestry.RunInfo).
struct RunInfo {
  runtime::RunMetrics metrics;
  bool reference_kernels = false;
  std::size_t operations = 0;                // of the lowered graph
  std::vector<std::string> inputs_in_place;  // read from the caller's arrays, no copy
  std::vector<std::string> inputs_copied;    // copied first (layout or alignment)
  std::optional<runtime::VerifyReport> verify;
  std::string device = "cpu";  // "cuda": the CUDA executor ran it
  std::size_t host_steps = 0;  // cuda: applications without a GPU kernel, run on the CPU
};

/// The lowered plan and its block executor, kept for the next run with the same settings.
struct CompiledRun {
  std::shared_ptr<const ir::Graph> source;  // the snapshot it was lowered from
  std::string plan_key;                     // the plan's JSON
  int threads = 0;
  bool reference_kernels = false;
  bool cuda = false;             // device="cuda": gpu_executor, else executor
  rewrite::LowerResult lowered;  // its reduction_split chooses the verify mode
  std::unique_ptr<runtime::BlockExecutor> executor;
  std::unique_ptr<gpu::CudaExecutor> gpu_executor;  // kept: later runs replay its CUDA graph
};

class PyGraph {
 public:
  /// An empty graph, to be built.
  explicit PyGraph(Signatures signatures);
  /// A loaded (validated) graph; `source` names where it came from.
  PyGraph(ir::Graph graph, Signatures signatures, std::string source);
  PyGraph(const PyGraph&) = delete;
  PyGraph& operator=(const PyGraph&) = delete;

  // ---- the builder (GraphError: a loaded graph, or a call the kernel rejects) --------------
  metakernel::Tensor input(const std::string& name, ir::DType dtype, const zspace::Range& range);
  metakernel::Tensor call(std::string_view kernel, const std::vector<metakernel::Tensor>& inputs,
                          const nlohmann::json& params);
  metakernel::Tensor assign(const std::string& name, metakernel::Tensor value);
  void output(metakernel::Tensor value);
  /// Training state (ir/state_update.h): `next` updates input `state`; `next` becomes an output.
  void update(metakernel::Tensor state, metakernel::Tensor next);
  /// Reverse-mode gradients (metakernel/autodiff.h); warnings go to `issues`.
  std::vector<metakernel::Tensor> grad(metakernel::Tensor loss,
                                       const std::vector<metakernel::Tensor>& wrt,
                                       const metakernel::GradOptions& options);
  /// The builder handle of tensor `id` (found by its label); nullopt for a loaded graph.
  std::optional<metakernel::Tensor> handle(ir::TensorId id);

  // ---- the graph ---------------------------------------------------------------------------
  [[nodiscard]] bool is_built() const { return builder_ != nullptr; }
  /// The graph as it stands (while building it may not validate yet).
  [[nodiscard]] const ir::Graph& current() const;
  /// The validated graph: an immutable snapshot, remade after the builder changed the graph.
  /// GraphError listing the issues when the graph is invalid.
  std::shared_ptr<const ir::Graph> validated();
  [[nodiscard]] const metakernel::SignatureRegistry& signatures() const { return *signatures_; }
  [[nodiscard]] const std::string& source() const { return source_; }

  // ---- work done without the GIL (hold work_mutex()) ---------------------------------------
  std::mutex& work_mutex() { return work_mutex_; }
  /// The compiled run of `snapshot` under `plan`: the kept one when its settings match, else a
  /// new one (lowered with kernel agreement checked, then compiled), which is kept instead.
  CompiledRun& compiled_run(const std::shared_ptr<const ir::Graph>& snapshot,
                            const rewrite::Plan& plan, int threads, bool reference_kernels,
                            bool cuda = false);
  /// The evaluator of `snapshot` on the target `target_key` names (made from `target` on a miss).
  cost::Evaluator& evaluator(const std::shared_ptr<const ir::Graph>& snapshot,
                             const std::string& target_key, const cost::Target& target);
  /// Frees the kept compiled run, its buffers and the evaluators.
  void release();

  /// The latest run's report (set with the GIL held); null before the first run.
  std::shared_ptr<RunInfo> last_run;

 private:
  void changed() { validated_.reset(); }
  metakernel::Graph& handle_builder();

  Signatures signatures_;
  std::string source_;
  std::unique_ptr<metakernel::Graph> builder_;  // null for a loaded graph
  std::shared_ptr<const ir::Graph> loaded_;     // null for a built graph
  std::shared_ptr<const ir::Graph> validated_;  // the snapshot; reset by every builder change

  std::mutex work_mutex_;
  std::unique_ptr<CompiledRun> compiled_;
  struct KeptEvaluator {
    std::shared_ptr<const ir::Graph> source;
    std::string target_key;
    std::unique_ptr<cost::Evaluator> evaluator;
  };
  std::unique_ptr<KeptEvaluator> evaluator_;
};

}  // namespace tapestry::python
