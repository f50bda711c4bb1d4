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
//
// bfloat16 and float16 (element.h) have no kernels of their own: `add` wraps every kernel so that
// a call with 16-bit float ports runs the float32 kernel — each 16-bit input widened (exactly)
// into a float32 block of its box, each 16-bit output computed into a float32 block and rounded
// once (to nearest even) into the port — so reductions and contractions accumulate in float32.
// A call without 16-bit ports goes straight to the kernel. A kernel that handles 16-bit ports
// itself (fused; the fast linear and matmul, on oneDNN's bf16 matmul: half_contraction.cpp) is
// registered with `add_native`.
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
  /// Calls with bf16/f16 ports run `fn` widened to float32 (widen_half_floats).
  void add(std::string name, KernelFn fn, PrepareFn prepare = nullptr);
  /// Registers `fn` as is: it handles bf16/f16 ports itself.
  void add_native(std::string name, KernelFn fn, PrepareFn prepare = nullptr);
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

/// `fn` for calls with bfloat16/float16 ports: runs `fn` on float32 copies of them (see above).
KernelFn widen_half_floats(KernelFn fn);

/// True when an input or output port of `call` is bfloat16 or float16.
bool has_half_float_port(const KernelCall& call);

}  // namespace tapestry::runtime
