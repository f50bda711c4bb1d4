// ExecutableKernels: kernel name → the function that runs it.
//
// These are the kernels that execute; what a kernel takes and derives (its signature, the
// metakernel) is metakernel::SignatureRegistry's (metakernel/signature_registry.h).
// Executors look each Operation's `kernel` string up once, before running anything, so an
// unknown kernel is an Error naming the operation, not a crash half-way through a run:
//
//   const ExecutableKernels& kernels = ExecutableKernels::reference();
//   KernelFn fn = kernels.lookup("linear", "linear_1");   // the reference linear kernel
//   kernels.lookup("op:add", "add_1");                    // Java-style names: "op:" is ignored
//   kernels.lookup("fft", "f")   // Error: operation 'f': no kernel named 'fft' (known: add, …)
//
// `reference()` holds the plain-loop kernels that define what every built-in kernel means
// (docs/runtime.md lists them with their inputs and params); the fast kernels are a second set
// with the same names. A set is immutable once built and safe to share.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/runtime/kernel.h"

namespace tapestry::runtime {

/// The two kernel sets: `reference()` and `fast_kernels()` (fast_kernels.h); a kernel from
/// elsewhere (a kernel file's body, a plugin) has a function for each.
enum class KernelSet { kReference, kFast };

class ExecutableKernels {
 public:
  ExecutableKernels() = default;

  /// The reference kernels for every built-in metakernel (built once, shared).
  static const ExecutableKernels& reference();

  /// Registers `fn` under `name`, with an optional prepare function; asserts the name is new.
  void add(std::string name, KernelFn fn, PrepareFn prepare = nullptr);
  /// The kernel called `kernel` (a leading "op:" is ignored), or nullptr.
  [[nodiscard]] KernelFn find(std::string_view kernel) const;
  /// Like find, but an unknown kernel throws Error naming `operation` and the known kernels.
  [[nodiscard]] KernelFn lookup(std::string_view kernel, std::string_view operation) const;
  /// The prepare function of kernel `kernel`, or nullptr (none, or no such kernel).
  [[nodiscard]] PrepareFn find_prepare(std::string_view kernel) const;
  /// Every registered name, sorted.
  [[nodiscard]] std::vector<std::string> names() const;

 private:
  struct Entry {
    KernelFn fn;
    PrepareFn prepare;
  };
  std::map<std::string, Entry, std::less<>> kernels_;
};

}  // namespace tapestry::runtime
