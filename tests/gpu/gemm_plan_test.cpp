// The device GEMM's host-side plan (src/gpu/kernels/gemm_plan.h), without a GPU: each plan is run
// on host memory by an interpreter of cuBLASLt's contract — column-major operands with op N/T and
// leading dimensions, strided and looped batches, a bias along D's rows when swapped (else along
// its columns) — and compared with the reference kernel: linear with one and two batch dims,
// shards along every dim and K ranges, the reduction inside the cells, batched matmul with
// broadcast batch dims, a transposed (column-major) result, bf16 inputs with f32 partials. A plan
// that reads or writes a wrong cell fails here before it reaches cuBLASLt; the layouts it must
// refuse (odd steps) are refused.
#include "gemm_plan.h"

#include <cmath>
#include <limits>
#include <random>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tapestry/runtime/buffer.h"
#include "tapestry/runtime/executable_kernels.h"

namespace tapestry::gpu::kernels {
namespace {

using ir::DType;
using runtime::Buffer;
using runtime::KernelCall;
using runtime::Point;
using runtime::Range;
using zspace::AffineMap;
using zspace::IndexProjection;

IndexProjection ipf(const std::vector<std::vector<std::int64_t>>& rows, Point offset,
                    std::optional<Point> shape = std::nullopt) {
  AffineMap map = AffineMap::from_rows(rows, std::move(offset));
  return shape ? IndexProjection(std::move(map), *shape) : IndexProjection(std::move(map));
}

struct Port {
  std::string name;
  bool output = false;
  DType dtype = DType::kFloat32;
  Range range;
  IndexProjection ipf;
};

struct Op {
  std::string kernel;
  Range index;
  std::vector<std::string> names;
  std::vector<ir::Reduction> reductions;
  nlohmann::json params = nlohmann::json::object();
  std::vector<Port> ports;
};

std::vector<Buffer> buffers(const Op& op, std::uint32_t seed) {
  std::vector<Buffer> out;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-2, 2);
  for (const Port& p : op.ports) {
    Buffer b(p.dtype, p.range);
    runtime::visit_storage_dtype(b.dtype(), [&]<typename T>() {
      for (T& v : b.values<T>()) v = runtime::storage_cast<T>(p.output ? 7.0 : u(rng));
    });
    out.push_back(std::move(b));
  }
  return out;
}

KernelCall call_of(const Op& op, const Range& box, std::vector<Buffer>& host) {
  KernelCall call{.kernel = op.kernel,
                  .operation = "gemm",
                  .index = box,
                  .params = &op.params,
                  .index_names = op.names,
                  .reductions = op.reductions};
  for (std::size_t i = 0; i < op.ports.size(); ++i) {
    const Port& p = op.ports[i];
    const Range cells = p.ipf.apply(box);
    if (p.output) {
      call.outputs.append(p.name, runtime::OutputPort{host[i].view(cells), &p.ipf});
    } else {
      call.inputs.append(p.name, runtime::InputPort{std::as_const(host[i]).view(cells), &p.ipf});
    }
  }
  return call;
}

double read(const std::byte* origin, DType t, std::int64_t at) {
  double v = 0;
  runtime::visit_storage_dtype(
      t, [&]<typename T>() { v = static_cast<double>(reinterpret_cast<const T*>(origin)[at]); });
  return v;
}

void write(std::byte* origin, DType t, std::int64_t at, double v) {
  runtime::visit_storage_dtype(
      t, [&]<typename T>() { reinterpret_cast<T*>(origin)[at] = runtime::storage_cast<T>(v); });
}

// cuBLASLt's contract on host memory: D = op(A')·op(B') (+ bias) for every batch point.
void interpret(const KernelCall& call, const Gemm& g, const ColumnMajorGemm& p) {
  const DType in = g.a->view.dtype(), out = g.c->view.dtype();
  const std::byte* a = p.pa->view.origin();
  const std::byte* b = p.pb->view.origin();
  std::byte* d = g.c->view.origin();
  const std::int64_t a0 = p.la->base, b0 = p.lb->base, d0 = g.lc.base;
  std::vector<std::int64_t> at(p.batch.size(), 0);
  std::int64_t points = 1;
  for (const auto& dim : p.batch) points *= dim[0];
  for (std::int64_t t = 0; t < points; ++t) {
    std::int64_t rest = t, oa = a0, ob = b0, od = d0;
    for (std::size_t i = p.batch.size(); i-- > 0;) {
      const std::int64_t c = rest % p.batch[i][0];
      rest /= p.batch[i][0];
      oa += c * p.batch[i][1];
      ob += c * p.batch[i][2];
      od += c * p.batch[i][3];
    }
    for (std::int64_t i = 0; i < p.m; ++i) {
      for (std::int64_t j = 0; j < p.n; ++j) {
        double acc = 0;
        for (std::int64_t q = 0; q < p.k; ++q) {
          const double av = read(a, in, oa + (p.a.trans ? q + i * p.a.ld : i + q * p.a.ld));
          const double bv = read(b, in, ob + (p.b.trans ? j + q * p.b.ld : q + j * p.b.ld));
          acc += av * bv;
        }
        if (g.bias != nullptr) {
          acc += read(g.bias->view.origin(), out, g.lbias.base + (p.swapped ? i : j) * g.bias_n);
        }
        ASSERT_FALSE(p.d.trans);
        write(d, out, od + i + j * p.d.ld, acc);
      }
    }
  }
  (void)call;
}

// |plan − ref| within a dot product's rounding (the interpreter sums in float64).
void expect_plan_matches(const Op& op, const Range& box, const std::string& what) {
  std::vector<Buffer> ref_bufs = buffers(op, 3), plan_bufs = buffers(op, 3);
  const KernelCall ref_call = call_of(op, box, ref_bufs);
  runtime::ExecutableKernels::reference().lookup(op.kernel, "gemm")(ref_call);
  const KernelCall plan_call = call_of(op, box, plan_bufs);
  const std::optional<Gemm> g = plan_gemm(plan_call);
  ASSERT_TRUE(g.has_value()) << what;
  const std::optional<ColumnMajorGemm> p = column_major_gemm(*g);
  ASSERT_TRUE(p.has_value()) << what;
  EXPECT_LE(looped_calls(*p), kMaxGemmLoop);
  interpret(plan_call, *g, *p);
  const std::size_t o = op.ports.size() - 1;
  const Buffer& r = ref_bufs[o];
  const Buffer& x = plan_bufs[o];
  const double k = static_cast<double>(g->k);
  runtime::visit_storage_dtype(r.dtype(), [&]<typename T>() {
    const auto rv = r.values<T>(), xv = x.values<T>();
    const double u = r.dtype() == DType::kFloat64   ? 0x1p-53
                     : r.dtype() == DType::kFloat32 ? 0x1p-24
                                                    : 0x1p-8;
    for (std::size_t i = 0; i < rv.size(); ++i) {
      const double rd = static_cast<double>(rv[i]), xd = static_cast<double>(xv[i]);
      // Values are in [-2, 2): |Σ a·b| ≤ 4·K; the reference rounds K times in its dtype.
      ASSERT_LE(std::abs(rd - xd), 4 * (k + 2) * 4 * u + 4 * u * std::abs(rd))
          << what << " element " << i << ": plan " << xd << " ref " << rd;
    }
  });
}

std::vector<Range> shards(const Range& index) {
  std::vector<Range> out{index};
  for (std::size_t d = 0; d < index.rank(); ++d) {
    const std::int64_t lo = index.start()[d], hi = index.end()[d];
    if (hi - lo < 2) continue;
    out.push_back(index.with_dim(d, lo, lo + (hi - lo) / 2));
    out.push_back(index.with_dim(d, lo + (hi - lo) / 2 + 1, hi));
  }
  return out;
}

Op linear(DType t, DType out_t, bool bias) {
  Op op{.kernel = bias ? "linear" : "linear_nobias",
        .index = Range(Point{-40, 0, 20}, Point{-31, 7, 33}),
        .names = {"batch", "out", "in"},
        .reductions = {{"in", ir::Monoid::kSum}}};
  op.ports.push_back({"x", false, t, Range(Point{-42, 18}, Point{-28, 36}),
                      ipf({{1, 0, 0}, {0, 0, 1}}, Point{0, 0})});
  op.ports.push_back(
      {"w", false, t, Range::of_shape({7, 13}), ipf({{0, 1, 0}, {0, 0, 1}}, Point{0, -20})});
  if (bias)
    op.ports.push_back({"bias", false, out_t, Range::of_shape({7}), ipf({{0, 1, 0}}, Point{0})});
  op.ports.push_back({"result", true, out_t, Range(Point{-40, 0}, Point{-31, 7}),
                      ipf({{1, 0, 0}, {0, 1, 0}}, Point{0, 0})});
  return op;
}

TEST(GemmPlan, LinearOnShardsAndKRanges) {
  for (DType t : {DType::kFloat32, DType::kFloat64}) {
    for (bool bias : {true, false}) {
      const Op op = linear(t, t, bias);
      for (const Range& box : shards(op.index)) expect_plan_matches(op, box, "linear");
    }
  }
}

TEST(GemmPlan, Bf16InputsWithFloat32Partials) {
  const Op op = linear(DType::kBFloat16, DType::kFloat32, false);
  for (const Range& box : shards(op.index)) expect_plan_matches(op, box, "bf16 -> f32");
}

TEST(GemmPlan, LinearWithTwoBatchDims) {
  Op op{.kernel = "linear",
        .index = Range(Point{0, -1, 0, 0}, Point{3, 4, 7, 9}),
        .names = {"batch0", "batch1", "out", "in"},
        .reductions = {{"in", ir::Monoid::kSum}}};
  op.ports.push_back({"x", false, DType::kFloat64, Range(Point{0, -1, 0}, Point{3, 4, 9}),
                      ipf({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 0, 1}}, Point{0, 0, 0})});
  op.ports.push_back({"w", false, DType::kFloat64, Range::of_shape({7, 9}),
                      ipf({{0, 0, 1, 0}, {0, 0, 0, 1}}, Point{0, 0})});
  op.ports.push_back(
      {"bias", false, DType::kFloat64, Range::of_shape({7}), ipf({{0, 0, 1, 0}}, Point{0})});
  op.ports.push_back({"result", true, DType::kFloat64, Range(Point{0, -1, 0}, Point{3, 4, 7}),
                      ipf({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}}, Point{0, 0, 0})});
  for (const Range& box : shards(op.index)) expect_plan_matches(op, box, "two batch dims");
}

TEST(GemmPlan, TheReductionInsideTheCells) {
  Op op{.kernel = "linear_nobias",
        .index = Range::of_shape({10, 6, 1}),
        .names = {"batch", "out", "in"},
        .reductions = {{"in", ir::Monoid::kSum}}};
  op.ports.push_back({"x", false, DType::kFloat32, Range::of_shape({10, 24}),
                      ipf({{1, 0, 0}, {0, 0, 24}}, Point{0, 0}, Point{1, 24})});
  op.ports.push_back({"w", false, DType::kFloat32, Range::of_shape({6, 24}),
                      ipf({{0, 1, 0}, {0, 0, 24}}, Point{0, 0}, Point{1, 24})});
  op.ports.push_back({"result", true, DType::kFloat32, Range::of_shape({10, 6}),
                      ipf({{1, 0, 0}, {0, 1, 0}}, Point{0, 0})});
  for (const Range& box : shards(op.index)) expect_plan_matches(op, box, "windowed k");
}

Op matmul(bool transposed_result) {
  Op op{.kernel = "matmul",
        .index = Range::of_shape({2, 3, 5, 4, 6}),
        .names = {"batch0", "batch1", "m", "n", "k"},
        .reductions = {{"k", ir::Monoid::kSum}}};
  op.ports.push_back({"a", false, DType::kFloat32, Range(Point{-3, 0, 0, 0}, Point{-1, 1, 5, 6}),
                      ipf({{1, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, {0, 0, 1, 0, 0}, {0, 0, 0, 0, 1}},
                          Point{-3, 0, 0, 0})});
  op.ports.push_back({"b", false, DType::kFloat32, Range(Point{0, 10, 0}, Point{3, 16, 4}),
                      ipf({{0, 1, 0, 0, 0}, {0, 0, 0, 0, 1}, {0, 0, 0, 1, 0}}, Point{0, 10, 0})});
  if (transposed_result) {
    op.ports.push_back({"result", true, DType::kFloat32, Range::of_shape({2, 3, 4, 5}),
                        ipf({{1, 0, 0, 0, 0}, {0, 1, 0, 0, 0}, {0, 0, 0, 1, 0}, {0, 0, 1, 0, 0}},
                            Point{0, 0, 0, 0})});
  } else {
    op.ports.push_back({"result", true, DType::kFloat32, Range::of_shape({2, 3, 5, 4}),
                        ipf({{1, 0, 0, 0, 0}, {0, 1, 0, 0, 0}, {0, 0, 1, 0, 0}, {0, 0, 0, 1, 0}},
                            Point{0, 0, 0, 0})});
  }
  return op;
}

TEST(GemmPlan, BatchedMatmulWithBroadcastAndTransposedResults) {
  for (bool transposed : {false, true}) {
    const Op op = matmul(transposed);
    for (const Range& box : shards(op.index)) {
      expect_plan_matches(op, box, fmt::format("matmul transposed {}", transposed));
    }
  }
}

TEST(GemmPlan, StridedBatchIsOneCall) {
  Op op{.kernel = "matmul",
        .index = Range::of_shape({8, 9, 7, 5}),
        .names = {"batch", "m", "n", "k"},
        .reductions = {{"k", ir::Monoid::kSum}}};
  op.ports.push_back({"a", false, DType::kFloat32, Range::of_shape({8, 9, 5}),
                      ipf({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 0, 1}}, Point{0, 0, 0})});
  op.ports.push_back({"b", false, DType::kFloat32, Range::of_shape({8, 5, 7}),
                      ipf({{1, 0, 0, 0}, {0, 0, 0, 1}, {0, 0, 1, 0}}, Point{0, 0, 0})});
  op.ports.push_back({"result", true, DType::kFloat32, Range::of_shape({8, 9, 7}),
                      ipf({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}}, Point{0, 0, 0})});
  std::vector<Buffer> bufs = buffers(op, 1);
  const KernelCall call = call_of(op, op.index, bufs);
  const std::optional<Gemm> g = plan_gemm(call);
  ASSERT_TRUE(g.has_value());
  const std::optional<ColumnMajorGemm> p = column_major_gemm(*g);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(looped_calls(*p), 1);
  EXPECT_TRUE(p->swapped);  // row-major C: Cᵀ = Bᵀ·Aᵀ
  for (const Range& box : shards(op.index)) expect_plan_matches(op, box, "strided batch");
}

// linear_grad_w: result[o, i] = Σ_b d_result[b, o]·x[b, i]; index [batch0, batch1, out, in].
Op grad_w(DType t) {
  Op op{.kernel = "linear_grad_w",
        .index = Range(Point{-2, 0, 0, 0}, Point{1, 5, 6, 9}),
        .names = {"batch0", "batch1", "out", "in"},
        .reductions = {{"batch0", ir::Monoid::kSum}, {"batch1", ir::Monoid::kSum}}};
  op.ports.push_back({"x", false, t, Range(Point{-2, 0, 0}, Point{1, 5, 9}),
                      ipf({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 0, 1}}, Point{0, 0, 0})});
  op.ports.push_back({"d_result", false, t, Range(Point{-2, 0, 0}, Point{1, 5, 6}),
                      ipf({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}}, Point{0, 0, 0})});
  op.ports.push_back(
      {"result", true, t, Range::of_shape({6, 9}), ipf({{0, 0, 1, 0}, {0, 0, 0, 1}}, Point{0, 0})});
  return op;
}

TEST(GemmPlan, LinearGradWSumsOverTheBatch) {
  for (DType t : {DType::kFloat32, DType::kFloat64}) {
    const Op op = grad_w(t);
    for (const Range& box : shards(op.index)) {
      // A batch1 half of a full batch0 does not merge into one K: refused, else it must match.
      std::vector<Buffer> bufs = buffers(op, 1);
      const std::optional<Gemm> g = plan_gemm(call_of(op, box, bufs));
      if (!g) {
        EXPECT_TRUE(box.extent(0) > 1 && box.extent(1) < op.index.extent(1));
        continue;
      }
      expect_plan_matches(op, box, "linear_grad_w");
    }
  }
}

TEST(GemmPlan, RefusesWhatCuBlasLtCannotExpress) {
  // x read with step 2 along `in` (every other column): no unit step in either dim.
  Op op = linear(DType::kFloat32, DType::kFloat32, false);
  op.index = Range(Point{-40, 0, 0}, Point{-31, 7, 6});
  op.ports[0].ipf = ipf({{1, 0, 0}, {0, 0, 2}}, Point{0, 20});
  op.ports[1].ipf = ipf({{0, 1, 0}, {0, 0, 1}}, Point{0, 0});
  std::vector<Buffer> bufs = buffers(op, 1);
  const KernelCall call = call_of(op, op.index, bufs);
  const std::optional<Gemm> g = plan_gemm(call);
  ASSERT_TRUE(g.has_value());
  EXPECT_FALSE(column_major_gemm(*g).has_value());
  // Integers are the host's.
  const Op ints = linear(DType::kInt64, DType::kInt64, true);
  std::vector<Buffer> ibufs = buffers(ints, 1);
  EXPECT_FALSE(plan_gemm(call_of(ints, ints.index, ibufs)).has_value());
}

}  // namespace
}  // namespace tapestry::gpu::kernels
