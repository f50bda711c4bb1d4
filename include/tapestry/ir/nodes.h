// The bodies and tags of loom nodes, as C++ values.
//
// A loom node is `{id, type, label?, body, tags?}`. Each known node type has a body struct here,
// mirroring the loom schema (tests/data/compat/node_types.jsd) field for field:
//
//   Tensor       {"dtype": "float32", "range": {"start": [0, 0], "end": [10, 5]}}
//   Operation    {"kernel": "op:add", "params": {...}, "inputs": {...}, "outputs": {...},
//                 "indexNames": ["batch", "out"], "reductions": {"in": "sum"}}   (last two: ours)
//   Application  {"operationId": "<uuid>", "inputs": {...}, "outputs": {...}}
//   Note         {"message": "text"}
//
// and the tags an Operation or Application may carry:
//
//   IPFIndex      a Range: the operation's index space, or an application's sub-box of it
//   IPFSignature  {"inputs": IPFMap, "outputs": IPFMap}: one IPF per tensor selection
//
// Tapestry's extension of the Operation body (optional, so Java graphs load unchanged):
//   "indexNames": ["batch", "out", "in"]   names of the index dimensions, one per dim of the
//                                           IPFIndex; default "d0", "d1", …
//   "reductions": {"in": "sum"}            reduction dims (by name) and their monoid:
//                                           "sum" | "max" | "min" | "prod"
// A reduction dim is summed (max-ed, …) away: it maps to a zero column in every output IPF, so
// output injectivity is checked over the other dims, and no two applications may write the same
// output cell.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/ir/dtype.h"
#include "tapestry/ir/ids.h"
#include "tapestry/ir/named_lists.h"
#include "tapestry/ir/selection_map.h"
#include "tapestry/zspace/index_projection.h"
#include "tapestry/zspace/range.h"

namespace tapestry::ir {

/// Loom's IPFMap: named lists of index projections, parallel to a SelectionMap.
using IpfMap = NamedLists<zspace::IndexProjection>;

/// The IPFSignature tag: one IPF per input and output selection, same names and positions.
struct IpfSignature {
  IpfMap inputs;
  IpfMap outputs;

  friend bool operator==(const IpfSignature&, const IpfSignature&) = default;
};

/// How a reduction dimension combines values.
enum class Monoid : std::uint8_t { kSum, kMax, kMin, kProd };
/// "sum", "max", "min", "prod".
std::string_view monoid_name(Monoid monoid);
std::optional<Monoid> parse_monoid(std::string_view name);

/// A reduction dimension of an operation's index, by name.
struct Reduction {
  std::string dim;
  Monoid monoid = Monoid::kSum;

  friend bool operator==(const Reduction&, const Reduction&) = default;
};

struct TensorBody {
  LoomDType dtype;  // a DType, or a spelling kept as read; the dialect says which are known
  zspace::Range range;

  friend bool operator==(const TensorBody&, const TensorBody&) = default;
};

struct OperationBody {
  std::string kernel;
  /// Kernel parameters: a JSON object (null when absent; written only when non-null).
  nlohmann::json params;
  SelectionMap inputs;
  SelectionMap outputs;
  /// Extension: index dimension names; empty means the defaults d0, d1, ….
  std::vector<std::string> index_names;
  /// Extension: reduction dims, sorted by name.
  std::vector<Reduction> reductions;

  friend bool operator==(const OperationBody&, const OperationBody&) = default;
};

struct ApplicationBody {
  OperationId operation;  // invalid when the reference in the file did not resolve
  SelectionMap inputs;
  SelectionMap outputs;

  friend bool operator==(const ApplicationBody&, const ApplicationBody&) = default;
};

struct NoteBody {
  std::string message;

  friend bool operator==(const NoteBody&, const NoteBody&) = default;
};

/// A node that is kept verbatim: unknown type URL, or a body that did not match its schema.
struct OpaqueBody {
  std::string type;     // the type string as written
  nlohmann::json body;  // the body as written (null when missing)
  /// Why a body of a known type was kept verbatim (the reader's first complaint); empty for
  /// unknown types. The `body-schema` constraint reports the full list of problems.
  std::string problem;

  friend bool operator==(const OpaqueBody&, const OpaqueBody&) = default;
};

/// Extra options when adding a node.
struct NodeOptions {
  std::string label;  // empty: no label
  std::string key;    // empty: a generated, deterministic UUID-shaped key
};

/// The default name of index dimension `dim`: "d0", "d1", ….
std::string default_index_name(std::size_t dim);

}  // namespace tapestry::ir
