// Bindings: the state of one signature evaluation (private to the evaluator).
//
// Evaluating a metakernel binds, in order: parameters (resolved against their specs), type
// variables and pattern dimensions (by matching each input's type against its shape pattern),
// broadcast groups (unified numpy-style), then `let` sizes. Everything after that — checks,
// output types, the index, IPFs — only reads the bindings.
#pragma once

#include <fmt/core.h>

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/metakernel/expr.h"
#include "tapestry/metakernel/metakernel.h"
#include "tapestry/metakernel/signature.h"
#include "tapestry/support/error.h"

namespace tapestry::metakernel::detail {

inline constexpr std::size_t kNoInput = static_cast<std::size_t>(-1);

/// A named dimension's size and who bound it (input index and dim, or kNoInput for a let).
struct DimBinding {
  std::int64_t size = 0;
  std::size_t input = kNoInput;
  std::size_t dim = 0;
};

/// Where a group occurs in one input: its first tensor dimension and sizes there.
struct GroupOccurrence {
  std::size_t input = kNoInput;
  std::size_t first_dim = 0;
  std::vector<std::int64_t> sizes;
};

/// A variadic group: the unified sizes (for a broadcast group, the broadcast shape) and each
/// occurrence in an input.
struct GroupBinding {
  std::vector<std::int64_t> sizes;
  std::vector<GroupOccurrence> occurrences;

  [[nodiscard]] const GroupOccurrence* in_input(std::size_t input) const;
};

class Bindings {
 public:
  Bindings(const Metakernel& kernel, std::span<const Argument> args);

  const Metakernel& kernel;
  std::span<const Argument> args;
  nlohmann::json params = nlohmann::json::object();  // resolved, including sugar params
  std::map<std::string, DType> types;
  std::map<std::string, DimBinding> dims;
  std::map<std::string, GroupBinding> groups;

  /// The label of input `i` for messages (the caller's label, else the kernel's input name).
  [[nodiscard]] std::string label(std::size_t input) const;
  /// Lookups for expressions: sizes of dims and groups of length one, integer-valued params.
  [[nodiscard]] ExprEnv scalar_env() const;
  /// Throws Error("<kernel>: <message>").
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) const {
    throw Error(kernel.name + ": " + fmt::format(format, std::forward<Args>(args)...));
  }
};

/// "12 columns", "4 rows", "8 elements", "3 in dim 2" — how a message names input dim `dim`.
std::string describe_dim(std::size_t rank, std::size_t dim, std::int64_t size);

/// Step 1: checks and resolves `given` against the parameter specs into `b.params`.
void resolve_params(Bindings& b, const nlohmann::json& given);
/// Step 2: binds dtypes and pattern dims of every input; unifies broadcast groups.
void bind_inputs(Bindings& b);
/// Step 2b: the int params whose default is an expression over the input sizes and that were
/// not given (ParamSpec::default_expr), evaluated on the bound sizes and checked.
void resolve_size_defaults(Bindings& b);
/// Step 3 (template kernels): lets, checks, outputs, index and IPFs.
Signature evaluate_template(Bindings& b);
/// The index space of a template kernel: its dims and, per index-list entry ($name or group),
/// the columns it occupies [first, first + count).
struct IndexLayout {
  std::vector<IndexDim> dims;
  std::map<std::string, std::pair<std::size_t, std::size_t>> entries;
};

/// The IPF of one port (input number `input`, or kNoInput for an output) from its IPF list.
zspace::IndexProjection build_ipf(const Bindings& b, const IndexLayout& index,
                                  const std::string& port, const TensorType& type,
                                  std::size_t input);
/// The JSON params an operation records (sugar params dropped).
nlohmann::json recorded_params(const Bindings& b);

}  // namespace tapestry::metakernel::detail
