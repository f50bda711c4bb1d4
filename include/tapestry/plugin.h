/* Kernel plugins: a shared library that adds kernels to Tapestry (`tapestry run --plugin lib.so`).
 *
 * A plugin gives each kernel two things: its signature — the YAML of a kernel file
 * (docs/metakernels.md), as text or as a file beside the library — and the C function that runs
 * it, for the reference kernel set, the fast one, or both. Every command that reads kernels
 * (`run`, `verify`, `build`, `shard`, `kernels`, `cost`, `explain`, `optimize`, `plan`, …) loads
 * plugins given with `--plugin FILE` (repeatable) or in $TAPESTRY_PLUGINS (':'-separated).
 *
 * This header is the whole interface, and a plugin links nothing of Tapestry: the library exports
 * one C function, `tapestry_plugin_kernels`, returning a static description (`TapestryPlugin`)
 * whose first member is the ABI version the plugin was compiled against. Tapestry reads that
 * member first and refuses a plugin of another version before it looks at anything else, so a
 * plugin built against an older header fails with a clear error instead of misreading memory.
 * Kernels see plain data (`TapestryKernelCall`: pointers, boxes, strides, IPFs) — no C++ types
 * cross the library boundary, so any compiler and standard library may build a plugin.
 *
 * A worked example: `swish(x) = x · sigmoid(x)` (examples/plugin/swish_plugin.cpp is the full
 * version, with a vectorisable fast kernel):
 *
 *   #include <tapestry/plugin.h>
 *   #include <cmath>
 *
 *   static const char kSignature[] = R"yaml(
 *   kernel: swish
 *   summary: "x · sigmoid(x), elementwise"
 *   types: {T: float}
 *   inputs: {x: {shape: "[$d...]", dtype: T}}
 *   outputs: {result: {shape: "[$d...]", dtype: T}}
 *   index: "[$d...]"
 *   ipfs: {x: "[$d...]", result: "[$d...]"}
 *   )yaml";
 *
 *   namespace tp = tapestry::plugin;
 *
 *   template <typename T>
 *   static void swish(const TapestryKernelCall& call) {
 *     const tp::Cells<const T> x(call, tp::input(call, "x"));
 *     const tp::Cells<T> y(call, tp::output(call, "result"));
 *     tp::for_each_point(call, [&](const int64_t* i) {
 *       const T v = *x.at(i);
 *       *y.at(i) = v / (T(1) + std::exp(-v));
 *     });
 *   }
 *
 *   static int run_swish(const TapestryKernelCall* call, char* error, size_t error_size) {
 *     return tp::guard(error, error_size, [&] {
 *       if (call->outputs[0].dtype == TAPESTRY_FLOAT32) swish<float>(*call);
 *       else swish<double>(*call);   // float64: --verify's oracle runs every kernel in float64
 *     });
 *   }
 *
 *   static const TapestryKernel kKernels[] = {{"swish", run_swish, NULL}};  // NULL: one for both
 *
 *   extern "C" TAPESTRY_PLUGIN_EXPORT const TapestryPlugin* tapestry_plugin_kernels(void) {
 *     static const TapestryPlugin plugin = {TAPESTRY_PLUGIN_ABI_VERSION, kSignature, NULL,
 *                                           kKernels, 1};
 *     return &plugin;
 *   }
 *
 * Build it as a shared library (CMake: `add_library(swish MODULE swish.cpp)`):
 *
 *   c++ -std=c++17 -O2 -shared -fPIC -I <tapestry>/include swish.cpp -o libswish.so
 *   tapestry run graph.tap --plugin ./libswish.so --verify
 *
 * Rules a kernel follows (runtime/kernel.h states them for the built-ins):
 * * It writes every cell of its outputs' boxes for the points of `call->index_*` and nothing
 *   else; it may run concurrently with calls whose output boxes are disjoint from its own.
 * * It handles every dtype its signature admits, and float64 whenever it admits a float type
 *   (`--verify`'s oracle evaluates every operation in float64).
 * * It returns 0, or non-zero with a message in `error` (at most `error_size` bytes, NUL
 *   included): Tapestry then fails the run with "operation '<op>' (kernel <k>): <message>
 *   (plugin <path>)". It must not throw or longjmp across the C boundary (`guard` catches).
 *
 * Loading fails with an error naming the library, exit code 2, when the file is missing, is not
 * a shared library, lacks `tapestry_plugin_kernels`, has another ABI version, when a signature
 * does not parse, when a kernel name is taken (a built-in, a kernel file, another plugin), or
 * when a kernel has no signature of the plugin's. Libraries stay loaded until the process ends.
 */
#ifndef TAPESTRY_PLUGIN_H
#define TAPESTRY_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

/* The version of the structures below. Changed whenever any of them changes. */
#define TAPESTRY_PLUGIN_ABI_VERSION 1u

#if defined(__GNUC__)
#define TAPESTRY_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define TAPESTRY_PLUGIN_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Element types a kernel sees (the executable dtypes of Tapestry). */
typedef enum TapestryDType {
  TAPESTRY_FLOAT32 = 0,
  TAPESTRY_FLOAT64 = 1,
  TAPESTRY_INT32 = 2,
  TAPESTRY_INT64 = 3
} TapestryDType;

/* One input or output of a call: a strided view of a box of the tensor, and the port's IPF.
 *
 * The cell index point i touches starts at tensor point  s = ipf_matrix · i + ipf_offset  and has
 * the shape `ipf_shape`; its first element is at
 *   origin + Σ_k strides[k] · (s[k] − box_start[k])        (in elements of `dtype`).
 * For an elementwise port (`ipf_shape` all 1) that is the one element of point i.
 */
typedef struct TapestryPort {
  const char* name;  /* the input or output list ("x", "result") */
  uint32_t position; /* index within the list */
  TapestryDType dtype;
  void* origin;             /* the element at box_start (read-only for inputs) */
  uint32_t rank;            /* the tensor's rank: the length of the arrays below */
  const int64_t* box_start; /* the box this view holds: [box_start, box_end) */
  const int64_t* box_end;
  const int64_t* strides;    /* in elements, per tensor dim */
  const int64_t* ipf_matrix; /* rank × index_rank, row-major */
  const int64_t* ipf_offset; /* rank */
  const int64_t* ipf_shape;  /* rank */
} TapestryPort;

/* One piece of work: compute the outputs for every point of the index box. */
typedef struct TapestryKernelCall {
  const char* kernel;    /* the operation's kernel name */
  const char* operation; /* the operation (for messages) */
  uint32_t index_rank;
  const int64_t* index_start; /* the index box [index_start, index_end) */
  const int64_t* index_end;
  const char* const* index_names; /* one per index dim */
  const char* params_json;        /* the operation's params: a JSON object, or "null" */
  uint32_t input_count;
  const TapestryPort* inputs; /* sorted by (name, position) */
  uint32_t output_count;
  const TapestryPort* outputs;
} TapestryKernelCall;

/* Runs one call; 0 on success, else non-zero with a message written to `error`. */
typedef int (*TapestryKernelFn)(const TapestryKernelCall* call, char* error, size_t error_size);

/* One kernel: its name (a kernel of the plugin's signatures) and its functions. */
typedef struct TapestryKernel {
  const char* name;
  TapestryKernelFn reference; /* the reference set's; NULL: `fast` serves both */
  TapestryKernelFn fast;      /* the fast set's; NULL: `reference` serves both */
} TapestryKernel;

/* What a plugin provides. `abi_version` stays the first member in every version. */
typedef struct TapestryPlugin {
  uint32_t abi_version;       /* TAPESTRY_PLUGIN_ABI_VERSION */
  const char* signatures;     /* kernel-file YAML (one or more `---`-separated kernels), or NULL */
  const char* signature_file; /* a kernel file, relative to the library's directory, or NULL */
  const TapestryKernel* kernels;
  size_t kernel_count;
} TapestryPlugin;

/* The entry point every plugin exports (with TAPESTRY_PLUGIN_EXPORT): its description, which
 * must stay valid while the process runs (a static). */
typedef const TapestryPlugin* (*TapestryPluginEntry)(void);
#define TAPESTRY_PLUGIN_ENTRY "tapestry_plugin_kernels"

#ifdef __cplusplus
} /* extern "C" */

/* C++ helpers for writing kernels: header-only, so a plugin still links nothing of Tapestry. */
#include <cstring>
#include <exception>
#include <string_view>
#include <vector>

namespace tapestry::plugin {

/// The port `name`[position] of `ports`, or nullptr.
inline const TapestryPort* find_port(const TapestryPort* ports, uint32_t count,
                                     std::string_view name, uint32_t position = 0) {
  for (uint32_t k = 0; k < count; ++k) {
    if (ports[k].name == name && ports[k].position == position) return &ports[k];
  }
  return nullptr;
}

/// Thrown by `input`/`output` for a missing port; `guard` turns it into the call's error.
struct MissingPort : std::exception {
  const char* what() const noexcept override { return "the operation has no such port"; }
};

/// Input `name`[position]; throws MissingPort when the operation has none.
inline const TapestryPort& input(const TapestryKernelCall& call, std::string_view name,
                                 uint32_t position = 0) {
  const TapestryPort* p = find_port(call.inputs, call.input_count, name, position);
  if (p == nullptr) throw MissingPort();
  return *p;
}

/// Output `name`[position]; throws MissingPort when the operation has none.
inline const TapestryPort& output(const TapestryKernelCall& call, std::string_view name,
                                  uint32_t position = 0) {
  const TapestryPort* p = find_port(call.outputs, call.output_count, name, position);
  if (p == nullptr) throw MissingPort();
  return *p;
}

/// Locates the cells of one port (see TapestryPort): T is the element type, const for inputs.
///
///   tapestry::plugin::Cells<const float> x(call, input(call, "x"));
///   const float v = *x.at(i);        // the first element of the cell point i touches
///
/// The offset is affine in i, offset0 + Σ_j coef_j·i_j, so the constructor folds the IPF and the
/// strides once and `at` costs one multiply-add per index dim; `step(d)` walks along dim d.
template <typename T>
class Cells {
 public:
  Cells(const TapestryKernelCall& call, const TapestryPort& port)
      : origin_(static_cast<T*>(port.origin)), coef_(call.index_rank, 0) {
    for (uint32_t k = 0; k < port.rank; ++k) {
      offset0_ += port.strides[k] * (port.ipf_offset[k] - port.box_start[k]);
      for (uint32_t j = 0; j < call.index_rank; ++j) {
        coef_[j] += port.strides[k] * port.ipf_matrix[k * call.index_rank + j];
      }
    }
  }
  /// The first element of the cell of index point `i` (index_rank coordinates).
  T* at(const int64_t* i) const {
    int64_t offset = offset0_;
    for (size_t j = 0; j < coef_.size(); ++j) offset += coef_[j] * i[j];
    return origin_ + offset;
  }
  /// How far (in elements) the cell moves when index dim `d` grows by one.
  int64_t step(uint32_t d) const { return coef_[d]; }

 private:
  T* origin_;
  int64_t offset0_ = 0;
  std::vector<int64_t> coef_;
};

/// Calls fn(const int64_t* point) for every point of the call's index box, row-major.
template <typename Fn>
void for_each_point(const TapestryKernelCall& call, Fn&& fn) {
  const uint32_t rank = call.index_rank;
  for (uint32_t d = 0; d < rank; ++d) {
    if (call.index_start[d] >= call.index_end[d]) return;  // an empty box
  }
  std::vector<int64_t> i(call.index_start, call.index_start + rank);
  while (true) {
    fn(static_cast<const int64_t*>(i.data()));
    uint32_t d = rank;
    while (d > 0) {
      --d;
      if (++i[d] < call.index_end[d]) break;
      i[d] = call.index_start[d];
      if (d == 0) return;
    }
    if (rank == 0) return;
  }
}

/// Calls fn(const int64_t* point) for the first point of every row of the index box (the
/// innermost coordinate at its start), row-major; once for a rank-0 box. With `Cells::step` a
/// kernel then walks the row's `index_end[last] − index_start[last]` points by pointer.
template <typename Fn>
void for_each_row(const TapestryKernelCall& call, Fn&& fn) {
  if (call.index_rank == 0) {
    fn(static_cast<const int64_t*>(nullptr));
    return;
  }
  TapestryKernelCall rows = call;
  std::vector<int64_t> end(call.index_end, call.index_end + call.index_rank);
  if (end.back() <= call.index_start[call.index_rank - 1]) return;  // empty rows
  end.back() = call.index_start[call.index_rank - 1] + 1;
  rows.index_end = end.data();
  for_each_point(rows, fn);
}

/// Copies `message` into the kernel's error buffer, truncated to `error_size` bytes with its NUL.
inline void set_error(char* error, size_t error_size, const char* message) noexcept {
  if (error == nullptr || error_size == 0) return;
  std::strncpy(error, message, error_size - 1);
  error[error_size - 1] = '\0';
}

/// Runs `body`; an exception becomes the kernel's error (its what()) and the result 1. The
/// message is copied inside the handler: what() points into the exception object (a
/// std::runtime_error's own string), which is destroyed when the handler ends.
template <typename Body>
int guard(char* error, size_t error_size, Body&& body) noexcept {
  try {
    body();
    return 0;
  } catch (const std::exception& e) {
    set_error(error, error_size, e.what());
  } catch (...) {
    set_error(error, error_size, "unknown exception");
  }
  return 1;
}

}  // namespace tapestry::plugin

#endif /* __cplusplus */

#endif /* TAPESTRY_PLUGIN_H */
