// The C++ builder API: operation graphs from C++ expressions (builder_ops.h has the kernels).
//
//   using namespace tapestry::metakernel;
//   Graph g;
//   Tensor x = g.input("X", DType::kFloat32, {4096, 1024});
//   Tensor w1 = g.input("W1", DType::kFloat32, {4096, 1024});
//   Tensor b1 = g.input("b1", DType::kFloat32, {4096});
//   Tensor h = g.assign("H", relu(linear(x, w1, b1)));   // operations H/linear and H
//   g.output(h);
//   ir::Graph graph = g.take();                           // validated by ir::validate
//
// A training step also says which results update which inputs (ir/state_update.h):
// `g.update(w1, w1_next)` — the .tap `update W1 <- W1n`.
//
// Every call checks its inputs with the kernel's metakernel and adds the operation at once
// (apply.h), so a mistake throws tapestry::Error where it is made, naming the tensors by their
// names: "linear: X has 1024 columns but W1 has 512 (its in dimension)".
//
// Names follow the .tap rules (naming.h): an operation is provisionally named after its kernel
// (`relu`, `relu.2`, …); `assign("H", t)` names t's operation `H` and the not-yet-assigned
// operations that feed it `H/<kernel>[.n]`. The .tap front end is built on this class, so a .tap
// file and the equivalent C++ produce the same graph.
//
// A Tensor is a handle (graph pointer + tensor id); the Graph must outlive its Tensors and is
// neither copyable nor movable for that reason. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/ir/graph.h"
#include "tapestry/ir/issue.h"
#include "tapestry/metakernel/apply.h"
#include "tapestry/metakernel/naming.h"
#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/metakernel/tensor_type.h"

namespace tapestry::metakernel {

class Graph;
class Tensor;

/// A tensor of a builder Graph.
class Tensor {
 public:
  Tensor() = default;

  [[nodiscard]] bool is_valid() const { return graph_ != nullptr; }
  [[nodiscard]] Graph& graph() const;
  [[nodiscard]] ir::TensorId id() const { return id_; }
  [[nodiscard]] TensorType type() const;
  /// The tensor's label: a variable name, or its operation's name.
  [[nodiscard]] const std::string& name() const;

  friend bool operator==(const Tensor& a, const Tensor& b) {
    return a.graph_ == b.graph_ && a.id_ == b.id_;
  }

 private:
  friend class Graph;
  Tensor(Graph* graph, ir::TensorId id) : graph_(graph), id_(id) {}

  Graph* graph_ = nullptr;
  ir::TensorId id_;
};

/// Options of Graph::grad (autodiff.h).
struct GradOptions;

class Graph {
 public:
  /// A graph whose calls resolve against `signatures` (the built-ins by default; the registry must
  /// outlive the Graph).
  explicit Graph(const SignatureRegistry& signatures = builtin_signatures(),
                 ApplyOptions options = {});
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  /// A graph input of the given shape, starting at the origin. Error when the name is taken or
  /// the dtype is not one .tap can declare (int8, bool, …).
  Tensor input(const std::string& name, DType dtype, const std::vector<std::int64_t>& shape);
  /// A graph input with an explicit range (it may start anywhere, e.g. f32[-40:60, 20:32]).
  /// Any non-empty name (.tap writes names that are not identifiers as strings).
  Tensor input(const std::string& name, const TensorType& type);
  /// A tensor of any loom dtype, including those no kernel takes (bool, int8, a spelling kept
  /// as read): for operations added verbatim, which may also write it. Kernel calls on a tensor
  /// of such a dtype throw Error.
  Tensor declare(const std::string& name, const ir::LoomDType& dtype, const zspace::Range& range);

  /// Adds an operation given as its loom node, its selections naming tensors by name (the .tap
  /// `operation {…}` statement; see metakernel/verbatim_operation.h): the operations a kernel
  /// would not derive exactly (another system's kernel, other IPFs, other labels). Unless the
  /// options say otherwise, a whole-index Application is added when it has IPF tags. Error on
  /// an unknown name or a body or tag the loom schema rejects.
  void add_verbatim(const nlohmann::json& node,
                    const std::function<std::optional<Tensor>(std::string_view)>& lookup);

  /// Applies kernel `kernel` (a name or alias, resolved by input count) to `inputs` with
  /// `params` (a JSON object); returns its (first) output. Applies the kernel's sugar first
  /// (conv2d's padding becomes a pad operation). Throws Error on any mismatch.
  Tensor call(std::string_view kernel, const std::vector<Tensor>& inputs,
              const nlohmann::json& params = nlohmann::json::object());

  /// Names `value`'s operation `name` and the unassigned operations feeding it
  /// `name/<kernel>[.n]`; returns `value`. Error when `value` is not the result of an
  /// unassigned operation, or a name is taken.
  Tensor assign(const std::string& name, Tensor value);

  /// Marks `value` as a graph output.
  void output(Tensor value);

  /// Declares training state (ir/state_update.h): after a step, `next`'s value becomes input
  /// `state`'s. Error when `state` is not a graph input, is updated already, or `next` has
  /// another dtype or shape. `next` becomes a graph output (take() marks it) if it is not one.
  void update(Tensor state, Tensor next);

  /// Reverse-mode gradients of `loss` (rank 0, or with a seed) with respect to `wrt`, added to
  /// this graph as ordinary operations (metakernel/autodiff.h has the rules and an example).
  /// The gradients are labelled `d<name>` unless `options` names them.
  std::vector<Tensor> grad(Tensor loss, std::span<const Tensor> wrt, const GradOptions& options);
  std::vector<Tensor> grad(Tensor loss, std::span<const Tensor> wrt);

  /// The tensor labelled `name` (an input or an operation's result), if any.
  [[nodiscard]] std::optional<Tensor> find(std::string_view name);

  [[nodiscard]] const ir::Graph& ir() const { return graph_; }
  /// Moves the built graph out; the builder is empty afterwards.
  [[nodiscard]] ir::Graph take();
  [[nodiscard]] const SignatureRegistry& signatures() const { return signatures_; }

 private:
  friend class Tensor;
  struct Pending {
    ir::OperationId op;
    std::vector<ir::TensorId> outputs;
    std::string kernel;
    std::string name;
  };

  Tensor add(const Metakernel& kernel, const std::vector<Tensor>& inputs,
             const nlohmann::json& params);
  std::optional<Tensor> expand_sugar(const Metakernel& kernel, const std::vector<Tensor>& inputs,
                                     const nlohmann::json& params);
  Tensor run_sugar_call(const tap::Call& call, const Metakernel& kernel,
                        const std::vector<Tensor>& inputs, const nlohmann::json& params);
  void check_same_graph(std::string_view kernel, const std::vector<Tensor>& inputs) const;
  std::vector<std::size_t> statement_operations(std::size_t root) const;
  void rename(const Pending& record, const std::string& name);

  const SignatureRegistry& signatures_;
  ApplyOptions options_;
  ir::Graph graph_;
  NameTable names_;
  std::vector<Pending> pending_;  // operations not yet assigned, in creation order
  int sugar_depth_ = 0;
};

struct GradOptions {
  /// The loss's cotangent, a tensor of its shape (required when the loss is not rank 0).
  std::optional<Tensor> seed;
  /// Labels for the gradients, one per wrt (default `d<name>`).
  std::vector<std::string> names;
  /// Warnings (grad-unused-input) go here when set; otherwise they are dropped.
  std::vector<ir::Issue>* issues = nullptr;
};

}  // namespace tapestry::metakernel
