// Graph.run: NumPy arrays in, the block executor on the lowered plan, NumPy arrays out.
//
// 1. With the GIL: the graph snapshot, the plan, and every input checked and bound (names,
//    dtypes, shapes) — all input errors before any work.
// 2. Without the GIL, holding the graph's work mutex: lower and compile (or reuse the kept
//    program), run, and verify when asked — the steps of `tapestry run` (workflow/run.h).
// 3. With the GIL: the outputs become arrays that own the executor's buffers; a FAIL raises
//    VerificationError carrying the report and the outputs.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "arrays.h"
#include "bindings.h"
#include "errors.h"
#include "json.h"
#include "plans.h"
#include "py_graph.h"
#include "tapestry/runtime/oracle.h"
#include "tapestry/runtime/run_metrics.h"
#include "tapestry/runtime/tensor_map.h"
#include "tapestry/runtime/verify.h"
#include "tapestry/workflow/run.h"

namespace tapestry::python {

namespace py = pybind11;

namespace {

workflow::VerifyCheck parse_verify(const py::object& verify) {
  if (py::isinstance<py::bool_>(verify)) {
    return verify.cast<bool>() ? workflow::VerifyCheck::kBound : workflow::VerifyCheck::kNone;
  }
  if (py::isinstance<py::str>(verify) && verify.cast<std::string>() == "exact") {
    return workflow::VerifyCheck::kExact;
  }
  throw py::value_error(fmt::format("verify={}: expected False, True or \"exact\"",
                                    py::repr(verify).cast<std::string>()));
}

bool parse_kernels(const std::string& kernels) {
  if (kernels != "fast" && kernels != "reference") {
    throw py::value_error(fmt::format("kernels='{}': expected 'fast' or 'reference'", kernels));
  }
  return kernels == "reference";
}

// Step 1: every graph input bound to its array, in graph_inputs order.
std::vector<BoundArray> bind_inputs(const ir::Graph& graph, const std::vector<ir::TensorId>& wanted,
                                    const py::dict& inputs) {
  std::vector<std::string> names;
  for (ir::TensorId t : wanted) names.push_back(runtime::tensor_name(graph, t));
  const std::string all = fmt::format("{}", fmt::join(names, ", "));
  for (const auto& [key, value] : inputs) {
    const std::string name = py::str(key);
    if (std::find(names.begin(), names.end(), name) != names.end()) continue;
    const bool computed = [&] {
      for (ir::TensorId t : graph.tensors())
        if (runtime::tensor_name(graph, t) == name) return true;
      return false;
    }();
    throw InputError(
        computed ? fmt::format("'{}' is computed by the graph; it cannot be an input "
                               "(the inputs: {})",
                               name, all)
                 : fmt::format("'{}' is not an input of the graph (the inputs: {})", name, all));
  }
  std::vector<std::string> missing;
  for (const std::string& name : names)
    if (!inputs.contains(py::str(name))) missing.push_back(name);
  if (!missing.empty()) {
    throw InputError(fmt::format("missing input{} {} (the inputs: {})",
                                 missing.size() == 1 ? "" : "s", fmt::join(missing, ", "), all));
  }
  std::vector<BoundArray> bound;
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    bound.push_back(bind_array(names[i], inputs[py::str(names[i])],
                               runtime::tensor_dtype(graph, wanted[i]),
                               graph.tensor(wanted[i]).range()));
  }
  return bound;
}

struct Outcome {
  runtime::BufferMap results;  // by the graph's (not the lowered graph's) tensors
  std::shared_ptr<RunInfo> info;
};

runtime::Buffer borrow_again(BoundArray& b) {
  return runtime::Buffer::borrow(b.buffer.dtype(), b.buffer.range(), b.buffer.bytes());
}

// Step 2 (no GIL).
Outcome execute(PyGraph& g, const std::shared_ptr<const ir::Graph>& snapshot,
                const rewrite::Plan& plan, int threads, const workflow::RunChoices& choices,
                runtime::UncheckedCells unchecked, const std::vector<ir::TensorId>& wanted,
                std::vector<BoundArray>& bound, bool cuda) {
  const ir::Graph& graph = *snapshot;
  CompiledRun& run = g.compiled_run(snapshot, plan, threads, choices.reference_kernels, cuda);
  runtime::BufferMap inputs;      // by the graph's tensors, for verification
  runtime::BufferMap run_inputs;  // the same arrays again, borrowed by the run
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    inputs.emplace(wanted[i], borrow_again(bound[i]));
    run_inputs.emplace(wanted[i], borrow_again(bound[i]));
  }
  std::optional<runtime::Oracle> oracle;
  if (choices.verify == workflow::VerifyCheck::kExact)  // refused before the run, as `tapestry run`
    oracle = workflow::exact_oracle(graph, inputs, nullptr, "verify=\"exact\"");

  runtime::BlockExecutor::Measured measured;
  auto info = std::make_shared<RunInfo>();
  if (run.gpu_executor) {
    gpu::CudaExecutor::Measured m = run.gpu_executor->run_measured(
        workflow::lowered_inputs(run.lowered, std::move(run_inputs)));
    measured = {std::move(m.buffers), std::move(m.metrics)};
    info->device = "cuda";
    info->host_steps = m.stats.host_steps;
  } else {
    measured =
        run.executor->run_measured(workflow::lowered_inputs(run.lowered, std::move(run_inputs)));
  }
  info->metrics = std::move(measured.metrics);
  info->reference_kernels = choices.reference_kernels;
  info->operations = run.lowered.graph.operations().size();
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    auto used = measured.buffers.find(run.lowered.lowered(wanted[i]));
    const bool in_place = !bound[i].copied && used != measured.buffers.end() &&
                          used->second.is_borrowed() &&
                          used->second.bytes() == bound[i].buffer.bytes();
    (in_place ? info->inputs_in_place : info->inputs_copied)
        .push_back(runtime::tensor_name(graph, wanted[i]));
  }
  Outcome out{.results = workflow::graph_results(graph, run.lowered, std::move(measured.buffers)),
              .info = info};
  if (choices.verify != workflow::VerifyCheck::kNone) {
    info->verify = workflow::verify_run(graph, inputs, out.results,
                                        {.mode = workflow::verify_mode(choices, run.lowered),
                                         .unchecked = unchecked,
                                         .threads = threads},
                                        std::move(oracle));
  }
  return out;
}

runtime::UncheckedCells unchecked_cells(bool allow_unchecked) {
  return allow_unchecked ? runtime::UncheckedCells::kAllow : runtime::UncheckedCells::kFail;
}

py::dict run_graph(const std::shared_ptr<PyGraph>& g, const py::dict& inputs,
                   const py::object& plan, std::optional<int> threads, const std::string& kernels,
                   const py::object& verify, bool allow_unchecked, const std::string& device) {
  if (device != "cpu" && device != "cuda") {
    throw py::value_error(fmt::format("device='{}': expected 'cpu' or 'cuda'", device));
  }
  const workflow::RunChoices choices{.verify = parse_verify(verify),
                                     .reference_kernels = parse_kernels(kernels)};
  if (allow_unchecked && choices.verify == workflow::VerifyCheck::kNone)
    throw py::value_error("allow_unchecked=True needs verify=True or verify=\"exact\"");
  if (threads && (*threads < 1 || *threads > 1024)) {
    throw py::value_error(
        fmt::format("threads={}: expected 1 to 1024, or None (all cores)", *threads));
  }
  const std::shared_ptr<const ir::Graph> snapshot = g->validated();
  const rewrite::Plan p = plan_from_python(plan);
  const std::vector<ir::TensorId> wanted = runtime::graph_inputs(*snapshot);
  std::vector<BoundArray> bound = bind_inputs(*snapshot, wanted, inputs);

  Outcome out;
  {
    const py::gil_scoped_release release;
    const std::lock_guard lock(g->work_mutex());
    out = execute(*g, snapshot, p, threads.value_or(0), choices, unchecked_cells(allow_unchecked),
                  wanted, bound, device == "cuda");
  }
  g->last_run = out.info;
  py::dict outputs;
  for (auto& [t, buffer] : out.results)
    outputs[py::str(runtime::tensor_name(*snapshot, t))] = to_numpy(std::move(buffer));
  if (out.info->verify && !out.info->verify->pass()) {
    throw VerificationFailed(out.info->verify->text(), out.info->verify->to_json(), outputs);
  }
  return outputs;
}

// Graph.verify: outputs computed anywhere (NumPy, PyTorch, another plan) judged as
// `tapestry verify` judges them.
py::object verify_graph(const std::shared_ptr<PyGraph>& g, const py::dict& inputs,
                        const py::dict& outputs, const std::string& mode_name,
                        bool allow_unchecked) {
  runtime::VerifyMode mode = runtime::VerifyMode::kBound;
  if (mode_name == "bitwise") {
    mode = runtime::VerifyMode::kBitwise;
  } else if (mode_name == "exact") {
    mode = runtime::VerifyMode::kExact;
  } else if (mode_name != "bound") {
    throw py::value_error(
        fmt::format("mode='{}': expected 'bound', 'bitwise' or 'exact'", mode_name));
  }
  const std::shared_ptr<const ir::Graph> snapshot = g->validated();
  const ir::Graph& graph = *snapshot;
  const std::vector<ir::TensorId> wanted = runtime::graph_inputs(graph);
  std::vector<BoundArray> bound = bind_inputs(graph, wanted, inputs);
  std::vector<BoundArray> results_bound;
  runtime::BufferMap results;
  for (ir::TensorId t : runtime::graph_outputs(graph)) {
    const std::string name = runtime::tensor_name(graph, t);
    if (!outputs.contains(py::str(name))) {
      throw InputError(
          fmt::format("outputs: '{}' is missing (every graph output is judged)", name));
    }
    results_bound.push_back(bind_array(name, outputs[py::str(name)],
                                       runtime::tensor_dtype(graph, t), graph.tensor(t).range()));
    results.emplace(t, borrow_again(results_bound.back()));
  }
  runtime::BufferMap given;
  for (std::size_t i = 0; i < wanted.size(); ++i) given.emplace(wanted[i], borrow_again(bound[i]));
  runtime::VerifyReport report;
  {
    const py::gil_scoped_release release;
    report = runtime::verify_outputs(graph, given, results,
                                     {.mode = mode, .unchecked = unchecked_cells(allow_unchecked)});
  }
  if (!report.pass()) throw VerificationFailed(report.text(), report.to_json(), outputs);
  return to_python(report.to_json());
}

}  // namespace

void bind_run(py::module_& m, GraphClass& graph) {
  py::class_<RunInfo, std::shared_ptr<RunInfo>>(m, "RunInfo", "What the latest run did.")
      .def_property_readonly("wall_s", [](const RunInfo& r) { return r.metrics.wall_s; })
      .def_property_readonly("flops", [](const RunInfo& r) { return r.metrics.flops; })
      .def_property_readonly("gflops", [](const RunInfo& r) { return r.metrics.gflops; })
      .def_property_readonly("threads", [](const RunInfo& r) { return r.metrics.threads; })
      .def_property_readonly("applications",
                             [](const RunInfo& r) { return r.metrics.applications.size(); })
      .def_property_readonly("operations", [](const RunInfo& r) { return r.operations; })
      .def_property_readonly("peak_memory_bytes",
                             [](const RunInfo& r) { return r.metrics.peak_memory_bytes; })
      .def_readonly("device", &RunInfo::device, "'cpu' or 'cuda'.")
      .def_readonly("host_steps", &RunInfo::host_steps,
                    "device='cuda': applications that ran on the CPU (no GPU kernel).")
      .def_property_readonly(
          "kernels", [](const RunInfo& r) { return r.reference_kernels ? "reference" : "fast"; })
      .def_readonly("inputs_in_place", &RunInfo::inputs_in_place,
                    "Inputs the run read from the caller's arrays, without a copy.")
      .def_readonly("inputs_copied", &RunInfo::inputs_copied,
                    "Inputs copied first (not C-contiguous, or misaligned).")
      .def_property_readonly(
          "verify",
          [](const RunInfo& r) -> py::object {
            return r.verify ? to_python(r.verify->to_json()) : py::none();
          },
          "The verification report (verify=True), else None.")
      .def_property_readonly(
          "verify_text",
          [](const RunInfo& r) { return r.verify ? r.verify->text() : std::string(); },
          "One PASS/FAIL line per output, as `tapestry run --verify` prints them.")
      .def_property_readonly(
          "metrics", [](const RunInfo& r) { return to_python(runtime::metrics_json(r.metrics)); },
          "Per operation and per application timings (`tapestry run --metrics`).")
      .def(
          "summary", [](const RunInfo& r) { return runtime::summary_table(r.metrics); },
          "The table `tapestry run` prints.")
      .def("__repr__", [](const RunInfo& r) {
        return fmt::format("RunInfo(wall {:.4f} s, {:.1f} GFLOP/s, {} applications on {} threads)",
                           r.metrics.wall_s, r.metrics.gflops, r.metrics.applications.size(),
                           r.metrics.threads);
      });

  graph.def("run", &run_graph, py::arg("inputs"), py::arg("plan") = py::none(),
            py::arg("threads") = py::none(), py::arg("kernels") = "fast", py::arg("verify") = false,
            py::arg("allow_unchecked") = false, py::arg("device") = "cpu");
  graph.def("verify", &verify_graph, py::arg("inputs"), py::arg("outputs"),
            py::arg("mode") = "bound", py::arg("allow_unchecked") = false);
  graph.def_property_readonly("last_run", [](const PyGraph& g) { return g.last_run; });
}

}  // namespace tapestry::python
