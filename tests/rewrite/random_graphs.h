// Random operation graphs for the lowering properties (rewrite/properties_test.cpp) and the
// block executor properties (verify/block_properties_test.cpp).
//
// A graph is generated as a .tap program — the reproducer a failure prints — one statement per
// operation, with the shapes tracked here so that every call type-checks. Operations are drawn
// from the built-in kernels:
//
//   unary      relu neg (any dtype); exp tanh sigmoid gelu (float)
//   binary     add sub mul maximum div, numpy broadcasting either way (div: float, divisor
//              exp(input) so it stays in [e^-1, e))
//   contract   linear (any number of batch dims), matmul (batched, broadcast batch dims, the
//              operand on either side), conv2d (stride 1–3, padding 0–2 → a `pad` op)
//   reduce     sum / max over a random `dim`, reduce (op sum max min prod) over dim 0
//   row-wise   softmax (float), bias_add
//   layout     reshape (split one dim or merge two adjacent), transpose, permute, pad, slice
//              (a run of cells of one dim: a reader of a sub-box)
//   windows    max_pool2d, avg_pool2d (float; window 1–3, stride 1–3), mean and variance
//              (float) over a random dim
//
// Inputs get random shapes and start at random, often negative, coordinates. Two scales:
//
//   small  extents 1–6, ranks 1–4, size-1 dims frequent: every corner of the lowering
//   large  extents 32–300 beside small ones (1–4), within kLargeMaxCells cells per tensor and
//          kLargeMaxWork multiply-adds per operation: the sizes where the fast kernels call
//          oneDNN (from 32³ multiply-adds a GEMM) and im2col, while a case stays a few ms
//
// Each operation reads the previous result, another earlier result or a fresh input; operands
// of binary ops are sometimes earlier results (fan-out). Every result nothing reads is a graph
// output, plus sometimes one that is read (it then escapes fusion). Every random choice shrinks
// towards the simpler case (fewer ops, the smallest extent, no padding, …).
#pragma once

#include <rapidcheck.h>

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

namespace tapestry::rewrite::testing {

using Shape = std::vector<std::int64_t>;

// ---- random choices (each shrinks towards its first / smallest outcome) ----------------------

inline std::int64_t pick(std::int64_t lo, std::int64_t hi) {
  return *rc::gen::inRange<std::int64_t>(lo, hi + 1);
}
/// True with probability `percent`/100; shrinks to false.
inline bool chance(int percent) {
  return pick(0, 99) >= 100 - percent;
}
/// An index dim extent: 1–6, 1 a third of the time.
inline std::int64_t extent() {
  return chance(67) ? pick(2, 6) : 1;
}

/// The scale of a program's tensors (see the file comment).
enum class Scale { kSmall, kLarge };

/// Large programs: cells per tensor and multiply-adds per operation (1 MFLOP = 0.5 M of these).
/// A whole case (naive run, float64 oracle, block executor) then takes a few milliseconds.
inline constexpr std::int64_t kLargeMaxCells = std::int64_t{1} << 15;
inline constexpr std::int64_t kLargeMaxWork = std::int64_t{1} << 21;

/// A large extent, 32–300 (mostly ≤ 96), at most `cap`; below 32 when `cap` is (at least 1).
inline std::int64_t large_extent(std::int64_t cap) {
  if (cap < 32) return pick(1, std::max<std::int64_t>(cap, 1));
  return pick(32, std::min<std::int64_t>(cap, chance(25) ? 300 : 96));
}

template <typename T>
const T& pick_of(const std::vector<T>& items) {
  return items[static_cast<std::size_t>(pick(0, static_cast<std::int64_t>(items.size()) - 1))];
}

inline std::int64_t cells(const Shape& shape) {
  return std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
}

/// A shape of rank `min_rank`–`max_rank`: small extents, or (large) a mix of large extents and
/// small ones (1–4) within kLargeMaxCells.
inline Shape random_shape(Scale scale, std::int64_t min_rank, std::int64_t max_rank) {
  Shape s(static_cast<std::size_t>(pick(min_rank, max_rank)));
  std::int64_t room = kLargeMaxCells;
  for (std::int64_t& e : s) {
    if (scale == Scale::kSmall)
      e = extent();
    else
      e = chance(30) ? pick(1, std::clamp<std::int64_t>(room, 1, 4)) : large_extent(room);
    room /= e;
  }
  return s;
}

/// numpy broadcasting: right-aligned, each pair equal or one of them 1.
inline bool broadcastable(const Shape& a, const Shape& b) {
  for (std::size_t i = 1; i <= std::min(a.size(), b.size()); ++i) {
    const std::int64_t x = a[a.size() - i], y = b[b.size() - i];
    if (x != y && x != 1 && y != 1) return false;
  }
  return true;
}
inline Shape broadcast(const Shape& a, const Shape& b) {
  Shape r(std::max(a.size(), b.size()), 1);
  for (std::size_t i = 1; i <= r.size(); ++i) {
    const std::int64_t x = i <= a.size() ? a[a.size() - i] : 1;
    const std::int64_t y = i <= b.size() ? b[b.size() - i] : 1;
    r[r.size() - i] = std::max(x, y);
  }
  return r;
}
/// A shape that broadcasts with `s`: some trailing dims of s, each kept or 1 (a 1 of s may meet
/// a larger extent), and sometimes one more leading dim. Large: the broadcast result has at most
/// `room` times the cells of `s`.
inline Shape broadcast_partner(Scale scale, const Shape& s, std::int64_t room) {
  const auto fresh = [&] {
    const std::int64_t e = scale == Scale::kSmall ? extent() : large_extent(room);
    room /= e;
    return e;
  };
  const auto keep = static_cast<std::size_t>(pick(0, static_cast<std::int64_t>(s.size())));
  Shape t;
  if (keep == s.size() && s.size() < 4 && chance(15)) t.push_back(fresh());
  for (std::size_t i = s.size() - keep; i < s.size(); ++i) {
    if (s[i] == 1)
      t.push_back(chance(30) ? fresh() : 1);
    else
      t.push_back(chance(25) ? 1 : s[i]);
  }
  return t;
}

// ---- the program ------------------------------------------------------------------------------

/// A tensor of the program: a graph input or the result of a statement.
struct Value {
  std::string name;
  Shape shape;
};

/// A .tap program under construction.
class TapProgram {
 public:
  explicit TapProgram(std::string dtype, Scale scale = Scale::kSmall)
      : dtype_(std::move(dtype)), scale_(scale) {}

  [[nodiscard]] bool is_float() const { return dtype_[0] == 'f' || dtype_ == "bf16"; }
  [[nodiscard]] Scale scale() const { return scale_; }
  [[nodiscard]] bool is_large() const { return scale_ == Scale::kLarge; }

  /// A fresh dim's extent: small, or large within `cap` (which a small program ignores).
  [[nodiscard]] std::int64_t extent(std::int64_t cap) const {
    return is_large() ? large_extent(cap) : testing::extent();
  }
  /// A fresh input shape of rank `min_rank`–`max_rank` at this program's scale.
  [[nodiscard]] Shape random_shape(std::int64_t min_rank, std::int64_t max_rank) const {
    return testing::random_shape(scale_, min_rank, max_rank);
  }
  /// A shape broadcasting with `s` whose broadcast result has at most `room`·|s| cells (large).
  [[nodiscard]] Shape broadcast_partner(const Shape& s, std::int64_t room) const {
    return testing::broadcast_partner(scale_, s, room);
  }
  [[nodiscard]] const std::vector<Value>& results() const { return results_; }

  /// Declares a graph input of `shape`; each dim starts at 0 or, half the time, in [-4, 3].
  Value input(const Shape& shape) {
    std::vector<std::string> dims;
    for (std::int64_t e : shape) {
      const std::int64_t start = chance(50) ? pick(-4, 3) : 0;
      dims.push_back(start == 0 ? fmt::format("{}", e) : fmt::format("{}:{}", start, start + e));
    }
    Value v{fmt::format("I{}", inputs_++), shape};
    text_ += fmt::format("{}: {}[{}]\n", v.name, dtype_, fmt::join(dims, ", "));
    return v;
  }

  /// `Vn = call`, whose result has `shape`; `operands` are the results the call reads.
  Value assign(const std::string& call, Shape shape, const std::vector<Value>& operands) {
    for (const Value& v : operands) read_.push_back(v.name);
    Value v{fmt::format("V{}", results_.size()), std::move(shape)};
    text_ += fmt::format("{} = {}\n", v.name, call);
    results_.push_back(v);
    return v;
  }

  /// The program, with every unread result (and `extra`, when given) as an output.
  [[nodiscard]] std::string text(const std::string& extra = {}) const {
    std::vector<std::string> outputs;
    for (const Value& v : results_) {
      const bool read = std::find(read_.begin(), read_.end(), v.name) != read_.end();
      if (!read || v.name == extra) outputs.push_back(v.name);
    }
    return text_ + fmt::format("output {}\n", fmt::join(outputs, ", "));
  }

 private:
  std::string dtype_;
  Scale scale_;
  std::string text_;
  int inputs_ = 0;
  std::vector<Value> results_;
  std::vector<std::string> read_;
};

// ---- one generator per operation family; each reads `x` (maybe more) and returns its result --

inline Value gen_unary(TapProgram& p, const Value& x) {
  static const std::vector<std::string> kAny = {"relu", "neg"};
  static const std::vector<std::string> kFloat = {"relu", "neg", "tanh", "sigmoid", "exp", "gelu"};
  const std::string& f = pick_of(p.is_float() ? kFloat : kAny);
  return p.assign(fmt::format("{}({})", f, x.name), x.shape, {x});
}

inline Value gen_binary(TapProgram& p, const Value& x) {
  static const std::vector<std::string> kAny = {"add", "sub", "mul", "maximum"};
  static const std::vector<std::string> kFloat = {"add", "sub", "mul", "maximum", "div"};
  const std::string& f = pick_of(p.is_float() ? kFloat : kAny);
  if (f == "div") {
    // The divisor is exp(input), in [e^-1, e): a quotient never blows up a rounding difference,
    // so the reduction-split bound stays meaningful downstream.
    const Value d = p.input(p.broadcast_partner(x.shape, kLargeMaxCells / cells(x.shape)));
    const Value e = p.assign(fmt::format("exp({})", d.name), d.shape, {});
    return p.assign(fmt::format("div({}, {})", x.name, e.name), broadcast(x.shape, e.shape),
                    {x, e});
  }
  std::vector<Value> earlier;
  for (const Value& v : p.results()) {
    const bool fits = !p.is_large() || cells(broadcast(v.shape, x.shape)) <= kLargeMaxCells;
    if (broadcastable(v.shape, x.shape) && fits) earlier.push_back(v);
  }
  const Value y = !earlier.empty() && chance(30)
                      ? pick_of(earlier)
                      : p.input(p.broadcast_partner(x.shape, kLargeMaxCells / cells(x.shape)));
  const bool swap = chance(50);
  const Value& a = swap ? y : x;
  const Value& b = swap ? x : y;
  return p.assign(fmt::format("{}({}, {})", f, a.name, b.name), broadcast(a.shape, b.shape),
                  {a, b});
}

/// linear(x, W, b): every leading dim of x is a batch dim.
inline Value gen_linear(TapProgram& p, const Value& x) {
  const std::int64_t rows = cells(x.shape) / x.shape.back();
  const std::int64_t out =
      p.extent(std::min(kLargeMaxCells / rows, kLargeMaxWork / cells(x.shape)));
  const Value w = p.input({out, x.shape.back()});
  const Value b = p.input({out});
  Shape shape = x.shape;
  shape.back() = out;
  return p.assign(fmt::format("linear({}, {}, {})", x.name, w.name, b.name), shape, {x});
}

/// matmul with x on either side; the other operand's batch dims broadcast against x's.
inline Value gen_matmul(TapProgram& p, const Value& x) {
  const Shape batch(x.shape.begin(), x.shape.end() - 2);
  Shape other = p.broadcast_partner(batch, kLargeMaxCells / cells(x.shape));
  Shape shape = broadcast(batch, other);
  const std::int64_t r0 = x.shape[x.shape.size() - 2], r1 = x.shape.back();
  // (both orientations: the fresh operand has `fresh`·r0 cells per batch point, the result
  // fresh·r1 on one side, r0·fresh on the other; the work is fresh·r0·r1 either way)
  const std::int64_t points = cells(shape);
  const std::int64_t fresh = p.extent(
      std::min(kLargeMaxCells / (points * std::max(r0, r1)), kLargeMaxWork / (points * r0 * r1)));
  if (chance(50)) {  // x is [..., k, n]: the fresh operand is [..., m, k]
    other.insert(other.end(), {fresh, r0});
    const Value a = p.input(other);
    shape.insert(shape.end(), {fresh, r1});
    return p.assign(fmt::format("matmul({}, {})", a.name, x.name), shape, {x});
  }
  other.insert(other.end(), {r1, fresh});  // x is [..., m, k]: the fresh operand is [..., k, n]
  const Value b = p.input(other);
  shape.insert(shape.end(), {r0, fresh});
  return p.assign(fmt::format("matmul({}, {})", x.name, b.name), shape, {x});
}

/// A fresh NCHW input for conv2d: small, or large images (H·W within kLargeMaxCells).
inline Shape conv_input_shape(const TapProgram& p) {
  if (!p.is_large()) return {pick(1, 2), pick(1, 3), pick(1, 6), pick(1, 6)};
  const std::int64_t n = pick(1, 2), c = pick(1, 8);
  const std::int64_t h = large_extent(kLargeMaxCells / (n * c * 32));
  return {n, c, h, large_extent(kLargeMaxCells / (n * c * h))};
}

/// conv2d(x, K, stride, padding) on x when it is NCHW, else on a fresh NCHW input.
inline Value gen_conv2d(TapProgram& p, const Value& x0) {
  const bool own = x0.shape.size() != 4;
  const Value x = own ? p.input(conv_input_shape(p)) : x0;
  const std::int64_t padding = chance(50) ? pick(1, 2) : 0;
  const std::int64_t stride = chance(50) ? pick(2, 3) : 1;
  const std::int64_t h = x.shape[2] + 2 * padding, w = x.shape[3] + 2 * padding;
  const std::int64_t kh = pick(1, std::min<std::int64_t>(3, h));
  const std::int64_t kw = pick(1, std::min<std::int64_t>(3, w));
  const std::int64_t pixels = x.shape[0] * ((h - kh) / stride + 1) * ((w - kw) / stride + 1);
  const std::int64_t most_o =  // large: 1–16 output channels within the budgets
      std::min({std::int64_t{16}, kLargeMaxCells / pixels,
                kLargeMaxWork / (pixels * x.shape[1] * kh * kw)});
  const std::int64_t o = pick(1, p.is_large() ? std::max<std::int64_t>(most_o, 1) : 3);
  const Value k = p.input({o, x.shape[1], kh, kw});
  std::string call = fmt::format("conv2d({}, {}", x.name, k.name);
  if (stride != 1) call += fmt::format(", stride={}", stride);
  if (padding != 0) call += fmt::format(", padding={}", padding);
  const Shape shape = {x.shape[0], o, (h - kh) / stride + 1, (w - kw) / stride + 1};
  return p.assign(call + ")", shape, own ? std::vector<Value>{} : std::vector<Value>{x});
}

/// sum or max over a random dim (negative dims count from the end), or reduce over dim 0.
inline Value gen_reduction(TapProgram& p, const Value& x) {
  const auto rank = static_cast<std::int64_t>(x.shape.size());
  Shape shape = x.shape;
  if (chance(25)) {
    static const std::vector<std::string> kOps = {"sum", "max", "min", "prod"};
    shape.erase(shape.begin());
    return p.assign(fmt::format("reduce({}, op={})", x.name, pick_of(kOps)), shape, {x});
  }
  const std::int64_t dim = pick(-rank, rank - 1);
  shape.erase(shape.begin() + (dim < 0 ? dim + rank : dim));
  return p.assign(fmt::format("{}({}, dim={})", chance(50) ? "max" : "sum", x.name, dim), shape,
                  {x});
}

inline Value gen_softmax(TapProgram& p, const Value& x) {
  return p.assign(fmt::format("softmax({})", x.name), x.shape, {x});
}

inline Value gen_bias_add(TapProgram& p, const Value& x) {
  const Value b = p.input({x.shape.back()});
  return p.assign(fmt::format("bias_add({}, {})", x.name, b.name), x.shape, {x});
}

/// Splits one dim into two factors (1 included) or merges two adjacent dims; sometimes one
/// entry of `shape` is -1.
inline Value gen_reshape(TapProgram& p, const Value& x) {
  Shape shape = x.shape;
  const auto rank = static_cast<std::int64_t>(shape.size());
  if (rank >= 2 && (rank >= 4 || chance(50))) {
    const auto i = static_cast<std::size_t>(pick(0, rank - 2));
    shape[i] *= shape[i + 1];
    shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(i) + 1);
  } else {
    const auto i = static_cast<std::size_t>(pick(0, rank - 1));
    std::vector<std::int64_t> divisors;
    for (std::int64_t d = 1; d <= shape[i]; ++d) {
      if (shape[i] % d == 0) divisors.push_back(d);
    }
    const std::int64_t f = pick_of(divisors);
    shape[i] /= f;
    shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(i), f);
  }
  std::vector<std::string> entries;
  for (std::int64_t e : shape) entries.push_back(fmt::format("{}", e));
  if (chance(30)) entries[static_cast<std::size_t>(pick(0, std::ssize(shape) - 1))] = "-1";
  return p.assign(fmt::format("reshape({}, shape=[{}])", x.name, fmt::join(entries, ", ")), shape,
                  {x});
}

inline Value gen_transpose(TapProgram& p, const Value& x) {
  Shape shape = x.shape;
  std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
  return p.assign(fmt::format("transpose({})", x.name), shape, {x});
}

inline Value gen_permute(TapProgram& p, const Value& x) {
  std::vector<std::int64_t> perm(x.shape.size());
  std::iota(perm.begin(), perm.end(), 0);
  for (std::int64_t i = std::ssize(perm) - 1; i > 0; --i) {  // Fisher–Yates
    std::swap(perm[static_cast<std::size_t>(i)], perm[static_cast<std::size_t>(pick(0, i))]);
  }
  Shape shape;
  for (std::int64_t d : perm) shape.push_back(x.shape[static_cast<std::size_t>(d)]);
  return p.assign(fmt::format("permute({}, perm=[{}])", x.name, fmt::join(perm, ", ")), shape, {x});
}

/// pad(x, padding): its result starts `padding` cells before x's in the last two dims.
inline Value gen_pad(TapProgram& p, const Value& x) {
  const std::int64_t padding = pick(0, 2);
  Shape shape = x.shape;
  shape[shape.size() - 1] += 2 * padding;
  shape[shape.size() - 2] += 2 * padding;
  const std::string value = p.is_float() && chance(30) ? ", value=0.5" : "";
  return p.assign(fmt::format("pad({}, padding={}{})", x.name, padding, value), shape, {x});
}

/// slice(x, dim, start, end): a non-empty run of cells of one dim (negative dims count from the
/// end), often a single cell. Its reader of a sub-box is what fuse-elementwise must not fuse
/// into its producer.
inline Value gen_slice(TapProgram& p, const Value& x) {
  const auto rank = static_cast<std::int64_t>(x.shape.size());
  const std::int64_t dim = pick(-rank, rank - 1);
  const auto d = static_cast<std::size_t>(dim < 0 ? dim + rank : dim);
  const std::int64_t start = pick(0, x.shape[d] - 1);
  const std::int64_t end = chance(40) ? start + 1 : pick(start + 1, x.shape[d]);
  Shape shape = x.shape;
  shape[d] = end - start;
  return p.assign(fmt::format("slice({}, dim={}, start={}, end={})", x.name, dim, start, end),
                  shape, {x});
}

/// max_pool2d / avg_pool2d (float) on x when it is NCHW, else on a fresh NCHW input: windows
/// of 1–3 cells with stride 1–3, overlapping when the window is wider than the stride.
inline Value gen_pool2d(TapProgram& p, const Value& x0) {
  const bool own = x0.shape.size() != 4;
  const Value x = own ? p.input(conv_input_shape(p)) : x0;
  const std::int64_t kernel = pick(1, std::min<std::int64_t>({3, x.shape[2], x.shape[3]}));
  const std::int64_t stride = chance(50) ? pick(2, 3) : 1;
  const char* f = p.is_float() && chance(50) ? "avg_pool2d" : "max_pool2d";
  const Shape shape = {x.shape[0], x.shape[1], (x.shape[2] - kernel) / stride + 1,
                       (x.shape[3] - kernel) / stride + 1};
  return p.assign(fmt::format("{}({}, kernel={}, stride={})", f, x.name, kernel, stride), shape,
                  own ? std::vector<Value>{} : std::vector<Value>{x});
}

/// mean or variance over a random dim, kept with extent 1 (each index point reads the whole
/// dim: a window `*`).
inline Value gen_mean(TapProgram& p, const Value& x) {
  const auto rank = static_cast<std::int64_t>(x.shape.size());
  const std::int64_t dim = pick(-rank, rank - 1);
  Shape shape = x.shape;
  shape[static_cast<std::size_t>(dim < 0 ? dim + rank : dim)] = 1;
  return p.assign(fmt::format("{}({}, dim={})", chance(50) ? "mean" : "variance", x.name, dim),
                  shape, {x});
}

// ---- the graph --------------------------------------------------------------------------------

struct OpFamily {
  std::size_t min_rank;
  bool float_only;
  int weight;  // elementwise families weigh more: they are what fuse-elementwise fuses
  Value (*generate)(TapProgram&, const Value&);
};

/// The families, simplest first (so shrinking moves towards unary ops).
inline const std::vector<OpFamily>& op_families() {
  static const std::vector<OpFamily> kFamilies = {
      {0, false, 3, gen_unary},     {0, false, 3, gen_binary},   {1, false, 2, gen_linear},
      {2, false, 2, gen_matmul},    {0, false, 1, gen_conv2d},   {1, true, 1, gen_softmax},
      {1, false, 2, gen_reduction}, {1, false, 2, gen_bias_add}, {1, false, 1, gen_reshape},
      {2, false, 1, gen_transpose}, {1, false, 1, gen_permute},  {2, false, 1, gen_pad},
      {1, false, 2, gen_slice},     {0, false, 1, gen_pool2d},   {1, true, 1, gen_mean},
  };
  return kFamilies;
}

/// One of the families that accept `x`, by weight.
inline const OpFamily& pick_family(const TapProgram& p, const Value& x) {
  std::vector<const OpFamily*> fit;
  for (const OpFamily& f : op_families()) {
    if (x.shape.size() < f.min_rank || (f.float_only && !p.is_float())) continue;
    for (int w = 0; w < f.weight; ++w) fit.push_back(&f);
  }
  return *pick_of(fit);
}

/// A random graph of 1–`max_ops` statements as a .tap program; dtype f32 mostly, else f64 or
/// i32 (integer graphs skip the float-only kernels); or `dtype` when given ("bf16", "f16").
inline rc::Gen<std::string> gen_tap_program(int max_ops, Scale scale = Scale::kSmall,
                                            std::string dtype = "") {
  return rc::gen::exec([max_ops, scale, dtype] {
    static const std::vector<std::string> kDtypes = {"f32", "f32", "f32", "f32", "f64", "i32"};
    TapProgram p(dtype.empty() ? pick_of(kDtypes) : dtype, scale);
    const std::int64_t ops = pick(1, max_ops);
    for (std::int64_t i = 0; i < ops; ++i) {
      const std::vector<Value>& made = p.results();
      const Value x = made.empty() || chance(20) ? p.input(p.random_shape(1, 4))
                      : chance(70)               ? made.back()
                                                 : pick_of(made);
      pick_family(p, x).generate(p, x);
    }
    const std::vector<Value>& made = p.results();
    return p.text(chance(20) ? pick_of(made).name : std::string());
  });
}

}  // namespace tapestry::rewrite::testing
