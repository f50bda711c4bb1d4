// `tapestry import`: an ONNX model in, a Tapestry graph (.tap or loom JSON) and its weights out.
//
//   tapestry import cnn.onnx -o cnn.tap --weights cnn/     # cnn/<weight>.npy per initializer
//   tapestry import model.onnx -o model.json --shape x=8,3,32,32
//   tapestry import --list-ops
//
// Prints the renamed names (ONNX names that are not legal Tapestry names), the graph's inputs and
// outputs and what was written. Any model the importer cannot map is one located error, exit 2
// (docs/onnx.md). Built without libonnx, the command says so and exits 2.
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <filesystem>

#include "command.h"
#include "common_options.h"
#include "tapestry/ir/json_io.h"
#include "tapestry/metakernel/printer.h"
#include "tapestry/metakernel/tap_parser.h"
#include "tapestry/support/error.h"
#include "tapestry/support/file.h"
#include "tensor_files.h"
#ifdef TAPESTRY_HAVE_ONNX
#include "tapestry/onnx/import.h"
#include "tapestry/onnx/symbolic.h"
#include "tapestry/runtime/npy.h"
#include "tapestry/runtime/tensor_map.h"
#endif

namespace tapestry::cli {

namespace {

struct ImportOptions {
  std::string model;
  std::string output;
  std::string weights;
  std::vector<std::string> shapes;
  std::vector<std::string> dims;
  std::string dtype;  // --dtype bf16|f16; empty: the model's own
  bool list_ops = false;
  bool check = false;
  bool quiet = false;
};

#ifdef TAPESTRY_HAVE_ONNX

// NAME=D0,D1,… → (NAME, dims).
std::pair<std::string, std::vector<std::int64_t>> parse_shape(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw Error(fmt::format("--shape {}: expected NAME=D0,D1,…", text));
  std::vector<std::int64_t> dims;
  std::string rest = text.substr(eq + 1);
  std::size_t pos = 0;
  while (pos <= rest.size() && !rest.empty()) {
    const auto comma = rest.find(',', pos);
    const std::string item =
        rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    std::size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || item.empty() || v < 0)
      throw Error(
          fmt::format("--shape {}: '{}' is not a dim (a non-negative integer)", text, item));
    dims.push_back(v);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return {text.substr(0, eq), dims};
}

int list_ops() {
  fmt::print("{:<20} {:<46} {}\n", "ONNX operator", "Tapestry kernels", "supported");
  for (const onnx::OpSupport& op : onnx::supported_onnx_ops())
    fmt::print("{:<20} {:<46} {}\n", op.op_type, op.kernels, op.notes);
  fmt::print(
      "opsets {} to {} (default domain; older models are converted to opset {} by ONNX's version "
      "converter); static shapes; float32, float64, float16 and bfloat16 tensors; int32 and "
      "int64 inputs (indices)\n",
      onnx::kMinOpset, onnx::kMaxOpset, onnx::kUpgradeTarget);
  return kExitOk;
}

// --check: an error listing every blocker (exit 2), or a line saying there is none.
int report_check(const std::string& model, const onnx::ImportResult& r, const std::string& opset) {
  if (r.blockers.empty()) {
    fmt::print("no blockers: {} nodes ({}) import as {} operations and {} weights\n", r.nodes,
               opset, r.graph.operations().size(), r.weights.size());
    return kExitOk;
  }
  throw support::DiagnosticError(
      fmt::format("{}: {} blocker{} stop{} the import ({} nodes, {})", model, r.blockers.size(),
                  r.blockers.size() == 1 ? "" : "s", r.blockers.size() == 1 ? "s" : "", r.nodes,
                  opset),
      r.blockers);
}

int run_import(const ImportOptions& options) {
  if (options.list_ops) return list_ops();
  if (options.model.empty()) throw Error("a model file is required (or --list-ops)");
  if (options.check && (!options.output.empty() || !options.weights.empty()))
    throw Error("--check writes nothing: drop -o and --weights");
  if (options.output.empty() && !options.check)
    throw Error("-o GRAPH.tap or -o GRAPH.json is required (or --check)");
  const std::string ext = std::filesystem::path(options.output).extension().string();
  if (!options.check && ext != ".tap" && ext != ".json")
    throw Error(fmt::format("-o {}: the graph file must end in .tap or .json", options.output));
  onnx::ImportOptions import_options;
  for (const std::string& s : options.shapes) {
    auto [name, dims] = parse_shape(s);
    if (!import_options.shapes.emplace(name, dims).second)
      throw Error(fmt::format("--shape {}: given twice", name));
  }
  metakernel::tap::DimBindings dims;
  for (const std::string& d : options.dims) metakernel::tap::add_dim_binding(dims, d);
  import_options.dims.insert(dims.begin(), dims.end());
  import_options.check = options.check;
  if (!options.dtype.empty()) import_options.dtype = ir::parse_tap_dtype(options.dtype);
  // A .tap keeps the dynamic dims as dim variables (symbolic.h); JSON has fixed sizes.
  onnx::SymbolicImport symbolic;
  if (ext == ".tap" || options.check) {
    symbolic = onnx::import_onnx_symbolic(options.model, import_options);
  } else {
    symbolic.result = onnx::import_onnx_file(options.model, import_options);
  }
  for (const auto& [name, value] : dims) {
    if (!std::ranges::any_of(symbolic.dims,
                             [&](const onnx::DynamicDim& d) { return d.name == name; }) &&
        ext == ".tap") {
      throw Error(fmt::format("--dim {}={}: the model has no dynamic dim '{}'", name, value, name));
    }
  }
  onnx::ImportResult& r = symbolic.result;
  const std::string opset = r.converted_from == 0 ? fmt::format("opset {}", r.opset)
                                                  : fmt::format("opset {}, converted from opset {}",
                                                                r.opset, r.converted_from);
  if (options.check) return report_check(options.model, r, opset);

  // Check every destination before writing anything.
  check_writable_file("-o", options.output);
  if (!options.weights.empty()) {
    std::vector<ir::TensorId> tensors;
    for (const onnx::Weight& w : r.weights)
      tensors.push_back(runtime::find_tensor(r.graph, w.name));
    check_output_files(r.graph, options.weights, tensors);
  }
  const std::string text = ext == ".tap" ? symbolic.tap : ir::write_graph_json(r.graph);

  if (!options.quiet) {
    for (const onnx::Rename& rn : r.renames)
      fmt::print("renamed  {} {} → {}\n", rn.what, rn.from, rn.to);
  }
  fmt::print("imported {} nodes ({}): {} operations, {} weights\n", r.nodes, opset,
             r.graph.operations().size(), r.weights.size());
  fmt::print("inputs   {}\n", fmt::join(r.inputs, ", "));
  fmt::print("outputs  {}\n", fmt::join(r.outputs, ", "));
  for (const onnx::DynamicDim& d : symbolic.dims) {
    fmt::print("dim      {} = {} ({} dim {}; any size with --dim {}=N)\n", d.name, d.value, d.input,
               d.axis, d.name);
  }
  StagedFiles files;
  if (!options.weights.empty()) {
    for (const onnx::Weight& w : r.weights) {
      files.add(std::filesystem::path(options.weights) / tensor_file_name(w.name),
                runtime::format_npy(w.value));
    }
  }
  files.add(options.output, text);
  files.commit();
  fmt::print("wrote    {}\n", options.output);
  if (options.weights.empty()) {
    if (!r.weights.empty())
      fmt::print("note     {} weights not written: give --weights DIR\n", r.weights.size());
  } else {
    fmt::print("wrote    {} weights to {}\n", r.weights.size(), options.weights);
  }
  return kExitOk;
}

#else

int run_import(const ImportOptions&) {
  throw Error(
      "this tapestry was built without ONNX support: install libonnx-dev and libprotobuf-dev "
      "(scripts/install-deps.sh) and rebuild");
}

#endif

}  // namespace

void register_import(CLI::App& app, Dispatch& dispatch) {
  auto options = std::make_shared<ImportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "import", "Import an ONNX model: a Tapestry graph (.tap or .json) and its weights (.npy)");
  cmd->add_option("model", options->model, "the ONNX model file");
  cmd->add_option("-o,--output", options->output, "the graph to write: GRAPH.tap or GRAPH.json");
  cmd->add_option("--weights", options->weights,
                  "write every weight (initializer, constant) as DIR/<name>.npy");
  cmd->add_option("--shape", options->shapes,
                  "NAME=D0,D1,…: the static shape of an input with dynamic dims (repeatable)");
  cmd->add_option("--dim", options->dims,
                  "the value of the dynamic dim NAME (repeatable); a .tap keeps it a dim "
                  "variable with this value (default 1), run at any size with --dim NAME=N")
      ->allow_extra_args(false)
      ->type_name("NAME=N");
  cmd->add_option("--dtype", options->dtype,
                  "bf16 or f16: the model's float32 inputs, weights and activations in that dtype "
                  "(weights rounded to nearest even; kernels still compute in f32)")
      ->check(CLI::IsMember({"bf16", "f16"}));
  cmd->add_flag("--list-ops", options->list_ops, "print the supported ONNX operators and exit");
  cmd->add_flag("--quiet", options->quiet,
                "no 'renamed' lines (a model exported from PyTorch renames every node)");
  cmd->add_flag("--check", options->check,
                "list every construct that stops the import (not only the first) and write "
                "nothing; exit 0 when there is none");
  cmd->footer(exit_codes_footer());
  cmd->callback([&dispatch, options] {
    dispatch.name = "import";
    dispatch.run = [options] { return run_import(*options); };
  });
}

}  // namespace tapestry::cli
