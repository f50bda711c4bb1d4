// Naming rules for operations and tensors built from expressions (docs/language.md, "Names").
//
// Plans name operations, so names must be predictable from the source:
//
//   Y = linear(H, W2, b2)            operation Y
//   H = relu(linear(X, W1, b1))      operations H/linear and H
//   Z = add(relu(A), relu(B))        operations Z/relu, Z/relu.2 and Z
//
// The operation a statement assigns takes the variable's name; every other operation created
// while evaluating the statement (nested calls, and calls a kernel's sugar introduces, such as
// conv2d's pad) is named `<variable>/<kernel>`, numbered `.2`, `.3`, … in creation order when a
// kernel repeats. Graph inputs and outputs keep their variable names; each operation's output
// tensor is labelled like its operation. Without an assignment (C++ builder calls that are never
// assigned) an operation is named after its kernel: `relu`, `relu.2`, ….
#pragma once

#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tapestry::metakernel {

/// The names of a statement's operations: `variable` for the last (the assigned one) and
/// `<variable>/<kernel>[.n]` for the others, given the kernels in creation order.
///
///   nested_names("H", {"linear", "relu"})          == {"H/linear", "H"}
///   nested_names("Z", {"relu", "relu", "add"})     == {"Z/relu", "Z/relu.2", "Z"}
std::vector<std::string> nested_names(std::string_view variable,
                                      std::span<const std::string> kernels);

/// The set of names in use in one graph; hands out fresh provisional names.
class NameTable {
 public:
  [[nodiscard]] bool is_taken(std::string_view name) const;
  void take(const std::string& name);
  void release(const std::string& name);
  /// `base` if free, else `base.2`, `base.3`, … — the first free one (not taken).
  [[nodiscard]] std::string fresh(std::string_view base) const;

 private:
  std::set<std::string, std::less<>> names_;
};

/// True when `name` can be written as a .tap variable: [A-Za-z_][A-Za-z0-9_./]*.
bool is_tap_identifier(std::string_view name);

}  // namespace tapestry::metakernel
