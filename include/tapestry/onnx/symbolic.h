// A model's dynamic axes as .tap dim variables: import once, run at any size.
//
// A model exported with dynamic axes (`torch.onnx.export(..., dynamic_axes={"x": {0: "batch"}})`)
// has input dims without a value. The importer folds all shape code to integers, so it cannot keep
// a size symbolic itself. Instead import_onnx_symbolic imports the model at several sizes (probes)
// and compares the printed programs token by token: they must be one program except for its
// integers, and every integer that differs must be a polynomial in the dims, linear in each, with
// integer coefficients — fitted on the corners of {5, 7}^k for k dims and checked at one more
// probe (11 for every dim). The result is that program with `dim` statements and expressions:
//
//   SymbolicImport s = import_onnx_symbolic("gpt.onnx", {});
//   s.tap  ==  "dim batch = 1\n"
//              "x: f32[batch, 16, 64]\n"
//              "…reshape(attn/MatMul, shape=[batch*16, 64])…"
//   `tapestry run gpt.tap --dim batch=32` then runs it at 32 (docs/language.md, dim variables).
//
// What cannot be written so is an Error that names the first difference and asks for --shape: the
// graph's structure, a float or a name depends on a dim; an integer is not such a polynomial
// (seq*seq: quadratic in one dim); a weight's shape or values depend on a dim (a constant the
// importer folded from a dim-sized tensor); more than kMaxDynamicDims dims.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tapestry/onnx/import.h"

namespace tapestry::onnx {

/// One dynamic input dim of a model.
struct DynamicDim {
  std::string name;   // dynamic_dim_name: the dim_param, else "<input>_<axis>"
  std::string input;  // the model input that has it (the first, when several share the name)
  int axis = 0;
  std::int64_t value = 1;  // the `dim` statement's value: ImportOptions::dims, else 1
};

/// At most this many dims are fitted (the fit imports the model 2^k + 2 times).
inline constexpr std::size_t kMaxDynamicDims = 3;

/// The model's dynamic input dims that ImportOptions::shapes does not fix, in input and axis
/// order, each name once (initializers listed as inputs by old exporters are not inputs).
std::vector<DynamicDim> find_dynamic_dims(const std::string& path, const ImportOptions& options);

struct SymbolicImport {
  ImportResult result;  // the model imported at the dims' values (weights, renames, …)
  std::string tap;      // the .tap program with `dim` statements and expressions
  std::vector<DynamicDim> dims;
};

/// Imports `path` with its dynamic dims as dim variables (above). With no dynamic dim, the plain
/// import and its printed program. Error as described above, naming the model.
SymbolicImport import_onnx_symbolic(const std::string& path, const ImportOptions& options);

}  // namespace tapestry::onnx
