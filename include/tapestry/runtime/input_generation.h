// Deterministic input data: the same seed gives the same tensors on every machine and run.
//
// Each tensor's values come from its own generator, seeded by (seed, tensor name), so adding a
// tensor to a graph or reordering nodes does not change the others' data. Values are small so
// sums stay close to exact:
//
//   float32 / float64   uniform in [-1, 1) on a grid of 2^-20 (exact in float32)
//   int32 / int64       uniform integers in [-8, 8]
//   exact (floats)      uniform in {-1, 0, 1}: sums of products stay integers, exact in any
//                       order while below 2^24 (`--verify=exact`, oracle.h)
//
//   Buffer x = generate_buffer(DType::kFloat32, Range({-40, 20}, {60, 32}), 7, "X");
//   Buffer part = generate_box(DType::kFloat32, Range({-40, 20}, {60, 32}),
//                              Range({0, 20}, {10, 32}), 7, "X");   // == x's rows 0..9
//   BufferMap in = generate_inputs(graph, {.seed = 7});   // every graph input, by its name
//
// The generator is splitmix64 (Steele, Lea, Flood 2014), fully specified here, so a Python or
// Java reimplementation can produce identical data.
#pragma once

#include <cstdint>
#include <string_view>

#include "tapestry/ir/graph.h"
#include "tapestry/runtime/buffer.h"
#include "tapestry/runtime/tensor_map.h"

namespace tapestry::runtime {

struct GenerateOptions {
  std::uint64_t seed = 0;
  /// Floats in {-1, 0, 1} instead of [-1, 1) (see above).
  bool exact = false;
};

/// splitmix64: the generator behind everything in this header.
class SplitMix64 {
 public:
  static constexpr std::uint64_t kGamma = 0x9e3779b97f4a7c15ull;
  explicit SplitMix64(std::uint64_t state) : state_(state) {}
  std::uint64_t next();
  /// Jumps `draws` values ahead in O(1): the state only ever adds kGamma.
  void skip(std::uint64_t draws);

 private:
  std::uint64_t state_;
};

/// The stream seed of tensor `name` under `seed`: splitmix64-mixes the FNV-1a hash of the name
/// with the seed.
std::uint64_t stream_seed(std::uint64_t seed, std::string_view name);

/// A buffer of `dtype` over `range` filled from the stream (seed, name), row-major.
Buffer generate_buffer(DType dtype, const Range& range, std::uint64_t seed, std::string_view name,
                       bool exact = false);

/// generate_buffer(dtype, range, seed, name, exact) restricted to `box` (inside `range`), bitwise
/// equal, without generating the rest: each row of the box skips the stream to its position.
/// An MPI rank generates only the boxes of the inputs it reads this way.
Buffer generate_box(DType dtype, const Range& range, const Range& box, std::uint64_t seed,
                    std::string_view name, bool exact = false);

/// Buffers for every graph input (graph_inputs()), each generated under its tensor_name().
BufferMap generate_inputs(const ir::Graph& graph, const GenerateOptions& options = {});

}  // namespace tapestry::runtime
