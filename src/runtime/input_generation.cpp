// Seeded input data: splitmix64 streams keyed by tensor name.
#include "tapestry/runtime/input_generation.h"

#include <fmt/format.h>

#include "tapestry/support/error.h"
#include "tapestry/support/text.h"
#include "tapestry/zspace/format.h"

namespace tapestry::runtime {

namespace {

// A float on the grid k / 2^20, k in [-2^20, 2^20): exactly representable in float32.
template <typename T>
T small_float(std::uint64_t bits) {
  const auto k = static_cast<std::int64_t>(bits >> 43) - (std::int64_t{1} << 20);
  return static_cast<T>(static_cast<double>(k) / static_cast<double>(1 << 20));
}

// An integer uniform in [-8, 8].
template <typename T>
T small_int(std::uint64_t bits) {
  return static_cast<T>(static_cast<std::int64_t>(bits % 17) - 8);
}

}  // namespace

std::uint64_t SplitMix64::next() {
  std::uint64_t z = (state_ += kGamma);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::uint64_t stream_seed(std::uint64_t seed, std::string_view name) {
  SplitMix64 mixed_seed(seed);
  return SplitMix64(mixed_seed.next() ^ support::fnv1a(name)).next();
}

namespace {

// The value of one draw, by dtype (the file comment's table).
template <typename T>
T draw(SplitMix64& rng, bool exact) {
  if constexpr (is_half_float_v<T>) {
    // The float32 draw, rounded to the 16-bit type.
    return storage_cast<T>(draw<float>(rng, exact));
  } else if constexpr (std::is_floating_point_v<T>) {
    return exact ? static_cast<T>(static_cast<int>(rng.next() % 3) - 1)
                 : small_float<T>(rng.next());
  } else {
    return small_int<T>(rng.next());
  }
}

}  // namespace

void SplitMix64::skip(std::uint64_t draws) {
  state_ += draws * kGamma;  // modulo 2^64, as next() adds
}

Buffer generate_buffer(DType dtype, const Range& range, std::uint64_t seed, std::string_view name,
                       bool exact) {
  Buffer buffer(dtype, range);
  SplitMix64 rng(stream_seed(seed, name));
  visit_storage_dtype(dtype, [&]<typename T>() {
    for (T& v : buffer.values<T>()) v = draw<T>(rng, exact);
  });
  return buffer;
}

Buffer generate_box(DType dtype, const Range& range, const Range& box, std::uint64_t seed,
                    std::string_view name, bool exact) {
  if (!range.contains(box)) {
    throw Error(fmt::format("generate_box: {} lies outside the tensor's {}", box, range));
  }
  Buffer buffer(dtype, box);
  if (box.is_empty()) return buffer;
  const std::uint64_t stream = stream_seed(seed, name);
  const Point strides = dense_strides(range.shape());
  const std::size_t rank = box.rank();
  const std::int64_t run = rank == 0 ? 1 : box.extent(rank - 1);
  // Each row of the box (its last dim) starts at its first cell's row-major position in the
  // whole tensor: skip the stream there.
  const Range rows = rank == 0 ? box : box.with_dim(rank - 1, 0, 1);
  visit_storage_dtype(dtype, [&]<typename T>() {
    T* out = buffer.values<T>().data();
    for (const Point& p : rows.points()) {
      std::int64_t flat = 0;
      for (std::size_t d = 0; d < rank; ++d) {
        flat += ((d + 1 == rank ? box.start()[d] : p[d]) - range.start()[d]) * strides[d];
      }
      SplitMix64 rng(stream);
      rng.skip(static_cast<std::uint64_t>(flat));
      for (std::int64_t i = 0; i < run; ++i) *out++ = draw<T>(rng, exact);
    }
  });
  return buffer;
}

BufferMap generate_inputs(const ir::Graph& graph, const GenerateOptions& options) {
  BufferMap inputs;
  for (ir::TensorId tensor : graph_inputs(graph)) {
    inputs.emplace(tensor,
                   generate_buffer(tensor_dtype(graph, tensor), graph.tensor(tensor).range(),
                                   options.seed, tensor_name(graph, tensor), options.exact));
  }
  return inputs;
}

}  // namespace tapestry::runtime
