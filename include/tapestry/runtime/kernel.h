// The kernel interface: a kernel is a function over views (STYLE.md, "Runtime").
//
// An executor calls a kernel once per piece of work: a whole operation (the naive executor) or
// one Application (a shard). Either way the kernel gets a `KernelCall`:
//
//   index     the box of the operation's index space to compute (the whole IPFIndex, or an
//             application's sub-box of it)
//   params    the operation's params (a JSON object, or null)
//   inputs    for every named input list of the operation, in order: the view of exactly the
//   outputs   box IPF(index) of that tensor, and the IPF itself
//
// The IPF is what makes one kernel serve a whole operation and any shard of it: the cells an
// index point i touches start at IPF(i).start (`Operand::cell(i)`), whatever box the view holds,
// for strided, overlapping conv windows as for tensors that start at negative coordinates.
// Reference kernels loop over the points of `index` and address every element through that, so
// a kernel never reads outside the boxes the IPFs give (views assert it in debug builds).
//
// The linear kernel, for example (index [batch, out, in], `in` a sum reduction):
//
//   Operand<const T> x(call.input("x")), w(call.input("w"));
//   for each (batch, out) of call.index:               // an output cell
//     acc = Σ over in ascending of *x.cell(p) · *w.cell(p)
//     *result.cell(p) = acc + *bias.cell(p)
//
// A kernel must write every cell of its output boxes and nothing else; it may be called
// concurrently with other calls whose output boxes are disjoint from its own (block executor).
// Bad operations (a missing input list, a wrong param) are reported with `call.fail(...)`,
// which throws an Error naming the operation and the kernel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/ir/named_lists.h"
#include "tapestry/ir/nodes.h"
#include "tapestry/runtime/view.h"
#include "tapestry/support/assert.h"
#include "tapestry/zspace/index_projection.h"

namespace tapestry::runtime {

/// One input or output of a kernel call: the view of the box IPF(call.index) and the IPF.
template <typename Byte>
struct BasicPort {
  BasicView<Byte> view;
  const zspace::IndexProjection* ipf = nullptr;
};
using InputPort = BasicPort<const std::byte>;
using OutputPort = BasicPort<std::byte>;

/// Everything a kernel needs for one piece of work (see the file comment).
struct KernelCall {
  std::string_view kernel;     // the Operation's kernel string
  std::string_view operation;  // its label, or key when it has none (for messages)
  Range index;                 // the index box to compute
  const nlohmann::json* params = nullptr;
  std::span<const std::string> index_names;   // one per index dim
  std::span<const ir::Reduction> reductions;  // the operation's declared reduction dims
  ir::NamedLists<InputPort> inputs;
  ir::NamedLists<OutputPort> outputs;
  /// What the kernel's prepare function (ExecutableKernels::find_prepare) made from the operation
  /// once, before any run — the parsed stages of a `fused` operation, say — or null. A kernel
  /// must also work without it (it then derives the same data from `params`).
  const void* prepared = nullptr;

  /// Input `name`[position]; fails when the operation has no such input.
  [[nodiscard]] const InputPort& input(std::string_view name, std::size_t position = 0) const;
  /// Output `name`[position]; fails when the operation has no such output.
  [[nodiscard]] const OutputPort& output(std::string_view name, std::size_t position = 0) const;
  /// The input, or nullptr when the operation has no list `name` (optional inputs).
  [[nodiscard]] const InputPort* find_input(std::string_view name, std::size_t position = 0) const;
  /// Number of inputs in list `name`.
  [[nodiscard]] std::size_t input_count(std::string_view name) const;

  /// Param `name` as an integer / string / bool; `fallback` when absent; fails on a wrong type.
  [[nodiscard]] std::int64_t param_int(std::string_view name, std::int64_t fallback) const;
  [[nodiscard]] std::string param_string(std::string_view name, std::string_view fallback) const;
  [[nodiscard]] bool param_bool(std::string_view name, bool fallback) const;
  /// The monoid of a reduction: param `name` if given, else the operation's single declared
  /// reduction, else `fallback`.
  [[nodiscard]] ir::Monoid monoid(std::string_view name, ir::Monoid fallback) const;
  /// Index dims that no output IPF depends on (zero columns of every output IPF): the reduction
  /// dims, in increasing order.
  [[nodiscard]] std::vector<std::size_t> reduced_dims() const;

  /// Throws Error "operation '<op>' (kernel <k>): <message>".
  [[noreturn]] void fail(std::string_view message) const;
};

/// A kernel: computes `call.outputs` from `call.inputs` over `call.index`. A function (the
/// built-ins are plain functions, stored inline) or a closure over its own data (a kernel file's
/// compiled body, runtime/body_kernels.h; a plugin's function).
using KernelFn = std::function<void(const KernelCall& call)>;

/// A kernel's optional preparation: data derived from the operation alone (its params, IPFs),
/// computed once per operation by an executor that runs it many times, and handed to every
/// call as `KernelCall::prepared`.
using PrepareFn = std::shared_ptr<const void> (*)(const KernelCall& call);

/// A typed port: locates the cells an index point selects. T is an element type, const for
/// inputs: `Operand<const float> x(call.input("x"));  Operand<float> y(call.output("result"));`
template <typename T>
class Operand {
 public:
  template <typename Byte>
  explicit Operand(const BasicPort<Byte>& port)
      : view_(port.view.template typed<std::remove_const_t<T>>()), ipf_(port.ipf) {
    for (std::int64_t s : ipf_->shape()) empty_cells_ = empty_cells_ || s == 0;
    locate_cells();
  }

  /// The first element of the cell box IPF(i) = [A·i + b, A·i + b + shape); asserted to lie,
  /// window and all, inside the view. Null when the cell is empty (a zero in the IPF's shape):
  /// there is nothing to address, and loops over the window run zero times.
  ///
  /// The element offset of IPF(i).start from the view's origin is affine in i, so it is
  /// computed as offset0 + Σ_j coef_j·i_j (see locate_cells), in wrapping unsigned arithmetic:
  /// the true offset lies inside the view, so the result modulo 2^64 is exact.
  T* cell(const Point& index_point) const {
    if (empty_cells_) return nullptr;
    std::uint64_t offset = offset0_;
    for (std::size_t j = 0; j < index_point.rank(); ++j) {
      offset += coef_[j] * static_cast<std::uint64_t>(index_point[j]);
    }
    T* cell = view_.origin() + static_cast<std::int64_t>(offset);
    TAPESTRY_ASSERT(cell == checked_cell(index_point), "IPF cell outside the kernel's view");
    return cell;
  }
  /// How far (in elements, possibly negative or 0) the cell moves when index dim `index_dim`
  /// grows by one: cell(i + e_d) == cell(i) + step(d). Lets a loop along one index dim walk a
  /// pointer instead of locating every cell.
  [[nodiscard]] std::int64_t step(std::size_t index_dim) const {
    return static_cast<std::int64_t>(coef_[index_dim]);
  }
  /// The shape of every cell box (the IPF's shape): (1, …, 1) for one element per index point.
  [[nodiscard]] const Point& window() const { return ipf_->shape(); }
  /// Extent of the cell window along tensor dim `dim`, and the element stride along it.
  [[nodiscard]] std::int64_t window(std::size_t dim) const { return ipf_->shape()[dim]; }
  [[nodiscard]] std::int64_t stride(std::size_t dim) const { return view_.stride(dim); }
  [[nodiscard]] std::size_t rank() const { return view_.rank(); }
  [[nodiscard]] const TypedView<T>& view() const { return view_; }

 private:
  // offset(i) = Σ_k stride_k·(A_k·i + b_k − box.start_k) = offset0 + Σ_j coef_j·i_j with
  // coef_j = Σ_k stride_k·A_kj and offset0 = Σ_k stride_k·(b_k − box.start_k).
  void locate_cells() {
    const zspace::AffineMap& map = ipf_->map();
    coef_.assign(map.in_rank(), 0);
    for (std::size_t k = 0; k < map.out_rank(); ++k) {
      const auto stride = static_cast<std::uint64_t>(view_.stride(k));
      offset0_ += stride * (static_cast<std::uint64_t>(map.offset()[k]) -
                            static_cast<std::uint64_t>(view_.box().start()[k]));
      for (std::size_t j = 0; j < map.in_rank(); ++j) {
        coef_[j] += stride * static_cast<std::uint64_t>(map.at(k, j));
      }
    }
  }

  // The slow, checked way (debug builds): apply the IPF, check the window lies in the view.
  T* checked_cell(const Point& index_point) const {
    const Point start = ipf_->map().apply(index_point);
    if (!window_inside(start)) return nullptr;
    return view_.pointer(start);
  }

  [[nodiscard]] bool window_inside(const Point& start) const {
    const Range& box = view_.box();
    for (std::size_t k = 0; k < start.rank(); ++k) {
      if (ipf_->shape()[k] == 0) continue;
      if (start[k] < box.start()[k] || start[k] + ipf_->shape()[k] > box.end()[k]) return false;
    }
    return true;
  }

  TypedView<T> view_;
  const zspace::IndexProjection* ipf_;
  bool empty_cells_ = false;
  std::uint64_t offset0_ = 0;
  std::vector<std::uint64_t> coef_;
};

}  // namespace tapestry::runtime
