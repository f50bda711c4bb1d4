// Graph.train and Graph.update: the training loop of `tapestry train` (workflow/train.h) on
// NumPy arrays — data and state in, the per-step losses and the final state out.
//
// 1. With the GIL: the graph snapshot copied (its roles mark outputs), the data arrays bound
//    (their leading dim is N_total, so check_data checks them, not bind_array), the state bound.
// 2. Without the GIL: lower once, build the block executor once, run the steps.
// 3. With the GIL: losses as a float64 array, the state as arrays owning the buffers.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "arrays.h"
#include "bindings.h"
#include "errors.h"
#include "plans.h"
#include "py_graph.h"
#include "tapestry/runtime/tensor_map.h"
#include "tapestry/workflow/run.h"
#include "tapestry/workflow/train.h"

namespace tapestry::python {

namespace py = pybind11;

namespace {

// A data array of any leading length: C-contiguous and aligned (copied if not), the dtype the
// input declares (InputError otherwise: nothing is converted silently).
BoundArray bind_data(const std::string& name, py::handle value, ir::DType dtype) {
  const py::module_ numpy = py::module_::import("numpy");
  py::array array = numpy.attr("asarray")(value);
  const py::dtype expected = numpy_dtype(dtype, fmt::format("data '{}'", name));
  if (!array.dtype().equal(expected)) {
    throw InputError(fmt::format("data '{}': expected {} rows, got {} (convert it with .astype)",
                                 name, ir::dtype_name(dtype), describe_array(array)));
  }
  BoundArray bound;
  array = numpy.attr("require")(array, expected, py::make_tuple("C", "A"));
  std::vector<std::int64_t> shape;
  for (py::ssize_t i = 0; i < array.ndim(); ++i) shape.push_back(array.shape(i));
  auto* data = static_cast<std::byte*>(const_cast<void*>(array.data()));
  bound.buffer = runtime::Buffer::borrow(
      dtype, zspace::Range::of_shape(zspace::Point(std::span<const std::int64_t>(shape))), data);
  bound.array = std::move(array);
  return bound;
}

py::tuple train_graph(const std::shared_ptr<PyGraph>& g, std::int64_t steps, const py::dict& data,
                      const py::dict& state, const py::object& plan, std::optional<int> threads,
                      const std::string& kernels, std::uint64_t seed, bool shuffle,
                      const std::optional<std::string>& loss,
                      const std::optional<std::string>& step_input,
                      const std::optional<std::map<std::string, std::string>>& updates,
                      std::int64_t start_step) {
  if (steps < 0) throw py::value_error("steps must be 0 or more");
  if (start_step < 0) throw py::value_error("start_step must be 0 or more");
  if (kernels != "fast" && kernels != "reference") {
    throw py::value_error(fmt::format("kernels='{}': expected 'fast' or 'reference'", kernels));
  }
  ir::Graph graph = *g->validated();  // a copy: the roles mark the outputs the loop reads
  workflow::RoleOptions options{.step_input = step_input.value_or(""), .loss = loss.value_or("")};
  if (updates) {
    for (const auto& [s, n] : *updates) options.extra_updates.emplace_back(s, n);
  }
  const workflow::TrainRoles roles =
      rethrow_as<InputError>([&] { return workflow::train_roles(graph, options); });
  const rewrite::Plan p = plan_from_python(plan);

  std::vector<BoundArray> kept;  // the caller's arrays, alive until the run ends
  std::map<std::string, runtime::Buffer> arrays;
  for (ir::TensorId t : roles.data) {
    const std::string name = runtime::tensor_name(graph, t);
    if (!data.contains(py::str(name))) {
      throw InputError(
          fmt::format("data: no array for input {} (a data input: neither updated "
                      "state nor the step input)",
                      name));
    }
    kept.push_back(bind_data(name, data[py::str(name)], runtime::tensor_dtype(graph, t)));
    arrays.emplace(name,
                   runtime::Buffer::borrow(kept.back().buffer.dtype(), kept.back().buffer.range(),
                                           kept.back().buffer.bytes()));
  }
  const workflow::TrainData train_data = rethrow_as<InputError>(
      [&] { return workflow::check_data(graph, roles, std::move(arrays), "data"); });
  std::map<std::string, runtime::Buffer> initial;
  for (const ir::StateUpdate& u : roles.updates) {
    const std::string name = runtime::tensor_name(graph, u.state);
    if (!state.contains(py::str(name))) {
      throw InputError(fmt::format("state: no array for state input {} (updated by {})", name,
                                   runtime::tensor_name(graph, u.next)));
    }
    kept.push_back(bind_array(name, state[py::str(name)], runtime::tensor_dtype(graph, u.state),
                              graph.tensor(u.state).range()));
    initial.emplace(name, runtime::Buffer(kept.back().buffer));  // an owning copy
  }
  runtime::BufferMap state_buffers = rethrow_as<InputError>(
      [&] { return workflow::check_state(graph, roles, std::move(initial), "state"); });

  workflow::TrainResult result;
  {
    const py::gil_scoped_release release;
    const std::lock_guard lock(g->work_mutex());
    const rewrite::LowerResult lowered =
        workflow::lower_for_run(graph, p, {.signatures = &g->signatures()});
    const runtime::BlockExecutor executor(
        lowered.graph,
        {.threads = threads.value_or(0),
         .kernels = kernels == "reference" ? &runtime::ExecutableKernels::reference() : nullptr});
    const workflow::StepFunction step = [&](runtime::BufferMap inputs) {
      return workflow::graph_results(
          graph, lowered, executor.run(workflow::lowered_inputs(lowered, std::move(inputs))));
    };
    result = workflow::run_training(
        graph, roles, train_data, std::move(state_buffers), step,
        {.steps = steps, .start_step = start_step, .seed = seed, .shuffle = shuffle});
  }
  std::vector<double> losses;
  for (const workflow::StepReport& r : result.reports) losses.push_back(r.loss);
  py::dict final_state;
  for (auto& [t, buffer] : result.state) {
    final_state[py::str(runtime::tensor_name(graph, t))] = to_numpy(std::move(buffer));
  }
  return py::make_tuple(py::array_t<double>(static_cast<py::ssize_t>(losses.size()), losses.data()),
                        final_state);
}

}  // namespace

void bind_train(py::module_& /*m*/, GraphClass& graph) {
  graph.def("train", &train_graph, py::arg("steps"), py::arg("data"), py::arg("state"),
            py::arg("plan") = py::none(), py::arg("threads") = py::none(),
            py::arg("kernels") = "fast", py::arg("seed") = 0, py::arg("shuffle") = true,
            py::arg("loss") = py::none(), py::arg("step_input") = py::none(),
            py::arg("updates") = py::none(), py::arg("start_step") = 0);
}

}  // namespace tapestry::python
