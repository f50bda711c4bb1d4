// Signature: what a metakernel says about one concrete use of a kernel.
//
// `evaluate_signature(kernel, args, params)` checks the input types and parameters and yields
// the output types, the index space with named dimensions (which ones are reductions, with
// their monoid) and one IPF per input and output. Errors name the kernel, the argument (by the
// label the caller gave it: the .tap variable, the builder tensor name) and the mismatch:
//
//   linear: X has 12 columns but W has 16 (its in dimension)
//
// Worked example (the Tapestry design's running example, zspace vectors L1):
//   linear(X: f32[-40:60, 20:32], W: f32[32, 12], b: f32[32])
//   index  [batch 100, out 32, in 12 (sum)]  -> zr[0:100, 0:32, 0:12]
//   x      A = [[1,0,0],[0,0,1]], b = (-40, 20), s = (1,1)   selects zr[-40:60, 20:32]
//   w      A = [[0,1,0],[0,0,1]], b = (0, 0),    s = (1,1)   selects zr[0:32, 0:12]
//   bias   A = [[0,1,0]],         b = (0),       s = (1)     selects zr[0:32]
//   result A = [[1,0,0],[0,1,0]], b = (0, 0),    s = (1,1)   writes  zr[0:100, 0:32]
// IPF offsets include the tensor's start: IPFs map index points to tensor coordinates.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/metakernel/metakernel.h"
#include "tapestry/metakernel/tensor_type.h"
#include "tapestry/zspace/index_projection.h"
#include "tapestry/zspace/range.h"

namespace tapestry::metakernel {

/// One input as the caller knows it: a label for messages and its type.
struct Argument {
  std::string label;
  TensorType type;
};

struct IndexDim {
  std::string name;
  std::int64_t size = 0;
  std::optional<Monoid> reduction;  // set for reduction dimensions

  friend bool operator==(const IndexDim&, const IndexDim&) = default;
};

/// One input or output of the operation: its kernel-side name, type and IPF.
struct Port {
  std::string name;
  TensorType type;
  zspace::IndexProjection ipf;

  friend bool operator==(const Port&, const Port&) = default;
};

struct Signature {
  std::string kernel;
  nlohmann::json params = nlohmann::json::object();  // resolved; what the operation records
  std::vector<IndexDim> index_dims;
  std::vector<Port> inputs;
  std::vector<Port> outputs;

  /// The index space: [0, sizes).
  [[nodiscard]] zspace::Range index() const;
  [[nodiscard]] std::vector<std::string> dim_names() const;
  /// Position of the named index dimension; nullopt when absent.
  [[nodiscard]] std::optional<std::size_t> find_dim(std::string_view name) const;
  [[nodiscard]] const Port* find_input(std::string_view name) const;
  [[nodiscard]] const Port* find_output(std::string_view name) const;
  /// A readable multi-line description (used by `tapestry kernels` and test failures).
  [[nodiscard]] std::string to_string() const;

  friend bool operator==(const Signature&, const Signature&) = default;
};

/// Evaluates `kernel` on `args` (in the kernel's input order) with `params` (a JSON object of
/// name -> value; missing ones take their defaults). Throws tapestry::Error naming the kernel,
/// the argument and the mismatch. Sugar expansions are not applied here (see apply.h); a sugar
/// parameter away from its default is an error.
Signature evaluate_signature(const Metakernel& kernel, std::span<const Argument> args,
                             const nlohmann::json& params);

/// Checks `params` against the kernel's parameter specs and returns every parameter's value
/// (given or default; axes normalised against `args`), sugar parameters included. Throws Error
/// like evaluate_signature.
nlohmann::json resolve_parameters(const Metakernel& kernel, std::span<const Argument> args,
                                  const nlohmann::json& params);

}  // namespace tapestry::metakernel
