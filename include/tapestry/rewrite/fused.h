// The `fused` kernel: a chain of operations run shard by shard, intermediates kept in a block.
//
// fuse-elementwise (fuse_elementwise.h) replaces a producer and its elementwise consumers by one
// Operation with kernel "fused" over the producer's index space. Its params hold the stages:
//
//   {"stages": [
//     {"kernel": "linear", "label": "Y/linear", "params": {},
//      "indexNames": ["batch", "out", "in"], "reductions": {"in": "sum"},
//      "indexMap": {"projection": [[1,0,0],[0,1,0],[0,0,1]], "offset": [0,0,0]},
//      "inputs":  [{"name": "x", "source": "s0_x", "ipf": {…}}, …],
//      "outputs": [{"name": "result", "ipf": {…}}]},
//     {"kernel": "relu", "label": "Y", "params": {},
//      "indexNames": ["d0", "d1"], "reductions": {},
//      "indexMap": {"projection": [[1,0,0],[0,1,0]], "offset": [0,0]},
//      "inputs":  [{"name": "x", "source": "", "ipf": {…}}],
//      "outputs": [{"name": "result", "source": "result", "ipf": {…}}]}]}
//
// A stage runs over indexMap(fused sub-box) with its own IPFs (each in the stage's own index
// space). An input's `source` names the fused operation's input list that carries it (position
// 0), or is "" for the previous stage's single output; the last stage's outputs name the fused
// operation's output lists, earlier stages' outputs are intermediates held in a temporary block.
// The fused operation's own IPFs are the stage IPFs composed with the stage's indexMap, so every
// view a stage needs is exactly one the executor already cut.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/ir/nodes.h"
#include "tapestry/zspace/affine_map.h"
#include "tapestry/zspace/index_projection.h"

namespace tapestry::rewrite {

inline constexpr std::string_view kFusedKernel = "fused";

struct FusedPort {
  std::string name;    // the stage kernel's port name ("x", "result")
  std::string source;  // fused input/output list name, or "" (the previous stage / an intermediate)
  zspace::IndexProjection ipf;  // in the stage's index space
  /// The dtype of an intermediate output (its temporary block); nullopt for other ports.
  std::optional<ir::LoomDType> dtype;

  friend bool operator==(const FusedPort&, const FusedPort&) = default;
};

struct FusedStage {
  std::string kernel;
  std::string label;
  nlohmann::json params;
  std::vector<std::string> index_names;
  std::vector<ir::Reduction> reductions;
  zspace::AffineMap index_map;  // fused index → stage index
  std::vector<FusedPort> inputs;
  std::vector<FusedPort> outputs;

  friend bool operator==(const FusedStage&, const FusedStage&) = default;
};

/// The fused operation's params: {"stages": [...]}.
nlohmann::json fused_params(const std::vector<FusedStage>& stages);
/// Reads the stages back; Error naming the JSON path when the params are malformed.
std::vector<FusedStage> fused_stages(const nlohmann::json& params);
/// fused_stages(params), shared: params equal to ones read before on this thread (a hash of the
/// stages' kernels and labels, then a comparison of the whole JSON) give the stages parsed then.
/// The cost model reads a fused operation's stages for its work and for each tensor it reads
/// (cost::partial_tensors), for every plan the Evaluator rewrites: a 12-stage LayerNorm chain of
/// ViT-B/16 was parsed dozens of times per plan (a fusion that extends a fused operation edits
/// its params without reading them: detail::fuse). At most kFusedStageCache params are kept per
/// thread (then the cache starts over). Error as fused_stages (a malformed params is not kept).
std::shared_ptr<const std::vector<FusedStage>> shared_fused_stages(const nlohmann::json& params);
inline constexpr std::size_t kFusedStageCache = 4096;
/// Turns shared_fused_stages' cache on this thread off (every call parses) or back on; returns
/// the previous setting. For the tests' independent path and `search_bench --no-memo`.
bool use_fused_stage_cache(bool on);

}  // namespace tapestry::rewrite
