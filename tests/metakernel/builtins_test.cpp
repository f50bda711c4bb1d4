// Each built-in kernel: shapes, index dims, reductions and IPFs for normal cases (worked against
// the zspace acceptance vectors' Linear and broadcast-add rows) and every error case.
#include <gmock/gmock.h>

#include <set>

#include "test_util.h"

namespace tapestry::metakernel {
namespace {

using namespace testing;  // NOLINT
using ::testing::HasSubstr;

using Names = std::vector<std::string>;

// ---- linear ------------------------------------------------------------------------------

TEST(Linear, RunningExampleMatchesVectorsL1L2) {
  // x starts at (-40, 20) with shape (100, 12); W is [out 32, in 12]; b is (32).
  Signature sig = eval("linear", {"f32[-40:60, 20:32]", "f32[32, 12]", "f32[32]"});
  EXPECT_EQ(sig.dim_names(), (Names{"batch", "out", "in"}));
  EXPECT_EQ(sig.index(), zr("zr[0:100, 0:32, 0:12]"));
  EXPECT_FALSE(sig.index_dims[0].reduction);
  EXPECT_FALSE(sig.index_dims[1].reduction);
  EXPECT_EQ(sig.index_dims[2].reduction, Monoid::kSum);
  EXPECT_EQ(sig.find_input("x")->ipf, ipf({{1, 0, 0}, {0, 0, 1}}, {-40, 20}, {1, 1}));
  EXPECT_EQ(sig.find_input("w")->ipf, ipf({{0, 1, 0}, {0, 0, 1}}, {0, 0}, {1, 1}));
  EXPECT_EQ(sig.find_input("bias")->ipf, ipf({{0, 1, 0}}, {0}, {1}));
  EXPECT_EQ(sig.outputs.at(0).ipf, ipf({{1, 0, 0}, {0, 1, 0}}, {0, 0}, {1, 1}));
  EXPECT_EQ(sig.outputs.at(0).type.to_string(), "f32[100, 32]");
  // L1: the whole index.
  const zspace::Range full = sig.index();
  EXPECT_EQ(sig.find_input("x")->ipf.apply(full), zr("zr[-40:60, 20:32]"));
  EXPECT_EQ(sig.find_input("w")->ipf.apply(full), zr("zr[0:32, 0:12]"));
  EXPECT_EQ(sig.find_input("bias")->ipf.apply(full), zr("zr[0:32]"));
  EXPECT_EQ(sig.outputs[0].ipf.apply(full), zr("zr[0:100, 0:32]"));
  // L2: batch 50..100, out 16..32, all of in.
  const zspace::Range shard = zr("zr[50:100, 16:32, 0:12]");
  EXPECT_EQ(sig.find_input("x")->ipf.apply(shard), zr("zr[10:60, 20:32]"));
  EXPECT_EQ(sig.find_input("w")->ipf.apply(shard), zr("zr[16:32, 0:12]"));
  EXPECT_EQ(sig.find_input("bias")->ipf.apply(shard), zr("zr[16:32]"));
  EXPECT_EQ(sig.outputs[0].ipf.apply(shard), zr("zr[50:100, 16:32]"));
  // A shard of the reduction reads a slab of x and of W.
  EXPECT_EQ(sig.find_input("x")->ipf.apply(zr("zr[0:100, 0:32, 4:8]")), zr("zr[-40:60, 24:28]"));
}

TEST(Linear, SeveralBatchDimsAreNumbered) {
  Signature sig = eval("linear", {"f64[2, 3, 8]", "f64[5, 8]", "f64[5]"});
  EXPECT_EQ(sig.dim_names(), (Names{"batch0", "batch1", "out", "in"}));
  EXPECT_EQ(sig.outputs[0].type.to_string(), "f64[2, 3, 5]");
  EXPECT_EQ(sig.find_input("x")->ipf,
            ipf({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 0, 1}}, {0, 0, 0}, {1, 1, 1}));
}

TEST(Linear, Errors) {
  EXPECT_EQ(eval_error("linear", {"f32[4, 12]", "f32[32, 16]", "f32[32]"}, {}, {"X", "W", "b"}),
            "linear: X has 12 columns but W has 16 (its in dimension)");
  EXPECT_EQ(eval_error("linear", {"f32[4, 12]", "f32[32, 12]", "f32[31]"}, {}, {"X", "W", "b"}),
            "linear: W has 32 rows but b has 31 (its out dimension)");
  // No application would ever write Y: an empty reduction is refused, not left unwritten.
  EXPECT_EQ(eval_error("linear", {"f32[4, 0]", "f32[3, 0]", "f32[3]"}, {}, {"X", "W", "b"}),
            "linear: the reduction dimension in is empty (extent 0); reducing over nothing is not "
            "supported");
  EXPECT_NO_THROW(eval("linear", {"f32[0, 0]", "f32[3, 0]", "f32[3]"}));  // empty output: fine
  EXPECT_EQ(eval_error("linear", {"f32[4, 12]", "f32[2, 32, 12]", "f32[32]"}, {}, {"X", "W", "b"}),
            "linear: W must have rank 2 (w is [$out, $in]) but it is f32[2, 32, 12]");
  EXPECT_EQ(eval_error("linear", {"f32[]", "f32[32, 12]", "f32[32]"}, {}, {"X", "W", "b"}),
            "linear: X must have rank at least 1 (x is [$batch..., $in]) but it is f32[]");
  EXPECT_EQ(eval_error("linear", {"f32[4, 12]", "f64[32, 12]", "f32[32]"}, {}, {"X", "W", "b"}),
            "linear: W is f64 but X is f32 (both have type T)");
  EXPECT_EQ(eval_error("linear", {"f32[4, 12]", "f32[32, 12]"}, {}, {"X", "W"}),
            "linear: expected 3 inputs (x, w, bias), got 2");
  EXPECT_EQ(eval_error("linear", {"f32[4, 12]", "f32[32, 12]", "f32[32]"}, {{"bias", 1}}),
            "linear: unknown parameter 'bias' (it takes none)");
}

// ---- matmul ------------------------------------------------------------------------------

TEST(Matmul, BatchedWithBroadcast) {
  Signature sig = eval("matmul", {"f32[8, 1, 4, 5]", "f32[3, 5, 6]"});
  EXPECT_EQ(sig.dim_names(), (Names{"batch0", "batch1", "m", "n", "k"}));
  EXPECT_EQ(sig.index(), zr("zr[0:8, 0:3, 0:4, 0:6, 0:5]"));
  EXPECT_EQ(sig.index_dims[4].reduction, Monoid::kSum);
  EXPECT_EQ(sig.outputs[0].type.to_string(), "f32[8, 3, 4, 6]");
  // a's batch1 has size 1: a zero row, it is read at 0 for every batch1.
  EXPECT_EQ(sig.find_input("a")->ipf,
            ipf({{1, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, {0, 0, 1, 0, 0}, {0, 0, 0, 0, 1}}, {0, 0, 0, 0},
                {1, 1, 1, 1}));
  // b has one batch dim, aligned to the right: batch1.
  EXPECT_EQ(sig.find_input("b")->ipf,
            ipf({{0, 1, 0, 0, 0}, {0, 0, 0, 0, 1}, {0, 0, 0, 1, 0}}, {0, 0, 0}, {1, 1, 1}));
}

TEST(Matmul, PlainMatrices) {
  Signature sig = eval("matmul", {"i64[4, 5]", "i64[5, 6]"});
  EXPECT_EQ(sig.dim_names(), (Names{"m", "n", "k"}));
  EXPECT_EQ(sig.outputs[0].type.to_string(), "i64[4, 6]");
}

TEST(Matmul, Errors) {
  EXPECT_EQ(eval_error("matmul", {"f32[4, 5]", "f32[6, 7]"}, {}, {"A", "B"}),
            "matmul: A has 5 columns but B has 6 (its k dimension)");
  EXPECT_EQ(eval_error("matmul", {"f32[2, 4, 5]", "f32[3, 5, 7]"}, {}, {"A", "B"}),
            "matmul: A [2] and B [3] do not broadcast (dim 0 of the broadcast $batch...: 2 vs 3)");
  EXPECT_EQ(eval_error("matmul", {"f32[5]", "f32[5, 7]"}, {}, {"A", "B"}),
            "matmul: A must have rank at least 2 (a is [$batch..., $m, $k]) but it is f32[5]");
}

// ---- elementwise ---------------------------------------------------------------------------

TEST(Unary, IdentityIpfsAndDtypes) {
  for (const char* k : {"relu", "neg", "exp", "tanh", "sigmoid", "gelu"}) {
    Signature sig = eval(k, {"f32[-2:2, 3:8]"});
    EXPECT_EQ(sig.dim_names(), (Names{"d0", "d1"})) << k;
    EXPECT_EQ(sig.outputs[0].type.to_string(), "f32[4, 5]") << k;
    EXPECT_EQ(sig.find_input("x")->ipf, ipf({{1, 0}, {0, 1}}, {-2, 3}, {1, 1})) << k;
    EXPECT_EQ(sig.outputs[0].ipf, zspace::IndexProjection::identity(2)) << k;
  }
  EXPECT_EQ(eval("relu", {"i32[7]"}).dim_names(), Names{"d"});
  EXPECT_EQ(eval("relu", {"f32[]"}).index(), zspace::Range());
  EXPECT_EQ(eval_error("exp", {"i32[7]"}, {}, {"N"}),
            "exp: N is i32, but T must be one of f32, f64, bf16, f16");
  EXPECT_EQ(eval_error("gelu", {"i64[7]"}, {}, {"N"}),
            "gelu: N is i64, but T must be one of f32, f64, bf16, f16");
}

TEST(Binary, BroadcastAddMatchesVectors) {
  // A is (10,10,10), B is (1,10): B's IPF A = [[0,0,0],[0,0,1]], s = (1,1).
  Signature sig = eval("add", {"f32[10, 10, 10]", "f32[1, 10]"});
  EXPECT_EQ(sig.index(), zr("zr[0:10, 0:10, 0:10]"));
  EXPECT_EQ(sig.outputs[0].type.to_string(), "f32[10, 10, 10]");
  const zspace::IndexProjection& b = sig.find_input("b")->ipf;
  EXPECT_EQ(b, ipf({{0, 0, 0}, {0, 0, 1}}, {0, 0}, {1, 1}));
  EXPECT_EQ(b.apply(sig.index()), zr("zr[0:1, 0:10]"));
  EXPECT_EQ(b.apply(zr("zr[0:10, 0:10, 5:10]")), zr("zr[0:1, 5:10]"));
}

TEST(Binary, AllKernelsBroadcastBothWays) {
  for (const char* k : {"add", "sub", "mul", "div", "maximum"}) {
    Signature sig = eval(k, {"f32[4, 1]", "f32[1, 5]"});
    EXPECT_EQ(sig.outputs[0].type.to_string(), "f32[4, 5]") << k;
    EXPECT_EQ(sig.find_input("a")->ipf, ipf({{1, 0}, {0, 0}}, {0, 0}, {1, 1})) << k;
    EXPECT_EQ(sig.find_input("b")->ipf, ipf({{0, 0}, {0, 1}}, {0, 0}, {1, 1})) << k;
  }
  EXPECT_EQ(eval("max", {"f32[3]", "f32[3]"}).kernel, "maximum");  // max(a, b) is the alias
  EXPECT_EQ(eval("add", {"f32[]", "f32[2, 3]"}).outputs[0].type.to_string(), "f32[2, 3]");
}

TEST(Binary, Errors) {
  EXPECT_EQ(eval_error("add", {"f32[3, 4]", "f32[5]"}, {}, {"A", "B"}),
            "add: A [3, 4] and B [5] do not broadcast (dim 1 of the broadcast $d...: 4 vs 5)");
  EXPECT_EQ(eval_error("mul", {"f32[3]", "i32[3]"}, {}, {"A", "B"}),
            "mul: B is i32 but A is f32 (both have type T)");
}

TEST(BiasAdd, RowsGetTheBias) {
  Signature sig = eval("bias_add", {"f32[6, 4]", "f32[4]"});
  EXPECT_EQ(sig.dim_names(), (Names{"batch", "n"}));
  EXPECT_EQ(sig.find_input("bias")->ipf, ipf({{0, 1}}, {0}, {1}));
  EXPECT_EQ(eval_error("bias_add", {"f32[6, 4]", "f32[5]"}, {}, {"X", "b"}),
            "bias_add: X has 4 columns but b has 5 (its n dimension)");
}

// ---- reductions --------------------------------------------------------------------------

TEST(Sum, OverANumberedDim) {
  Signature sig = eval("sum", {"f32[4, 5, 6]"}, {{"dim", 1}});
  EXPECT_EQ(sig.dim_names(), (Names{"pre", "post", "reduced"}));
  EXPECT_EQ(sig.index_dims[2].reduction, Monoid::kSum);
  EXPECT_EQ(sig.outputs[0].type.to_string(), "f32[4, 6]");
  EXPECT_EQ(sig.find_input("x")->ipf, ipf({{1, 0, 0}, {0, 0, 1}, {0, 1, 0}}, {0, 0, 0}, {1, 1, 1}));
  EXPECT_EQ(sig.outputs[0].ipf, ipf({{1, 0, 0}, {0, 1, 0}}, {0, 0}, {1, 1}));
  EXPECT_EQ(sig.params, (nlohmann::json{{"dim", 1}}));
}

TEST(Sum, NegativeDimIsNormalisedAndDefaultIsLast) {
  EXPECT_EQ(eval("sum", {"f32[4, 5, 6]"}, {{"dim", -3}}).params, (nlohmann::json{{"dim", 0}}));
  Signature last = eval("sum", {"f32[4, 5, 6]"});
  EXPECT_EQ(last.params, (nlohmann::json{{"dim", 2}}));
  EXPECT_EQ(last.dim_names(), (Names{"pre0", "pre1", "reduced"}));
  EXPECT_EQ(last.outputs[0].type.to_string(), "f32[4, 5]");
  EXPECT_EQ(eval("sum", {"f32[7]"}).outputs[0].type.to_string(), "f32[]");
}

TEST(Max, ReductionAndErrors) {
  Signature sig = eval("max", {"i32[4, 5]"}, {{"dim", 0}});
  EXPECT_EQ(sig.index_dims.back().reduction, Monoid::kMax);
  EXPECT_EQ(sig.outputs[0].type.to_string(), "i32[5]");
  EXPECT_EQ(eval_error("max", {"f32[4, 5]"}, {{"dim", 2}}, {"X"}),
            "max: parameter dim=2 is out of range for X of rank 2 (valid: -2 to 1)");
  EXPECT_EQ(eval_error("sum", {"f32[4, 5]"}, {{"dim", "a"}}),
            "sum: parameter dim must be an integer dimension, got \"a\"");
  EXPECT_EQ(eval_error("sum", {"f32[]"}),
            "sum: parameter dim=-1 is out of range for x of rank 0 (valid: 0 to -1)");
}

TEST(Reduce, OverTheLeadingBlockDim) {
  Signature sig = eval("reduce", {"f32[4, 10, 32]"}, {{"op", "max"}});
  EXPECT_EQ(sig.dim_names(), (Names{"d0", "d1", "block"}));
  EXPECT_EQ(sig.index_dims[2].reduction, Monoid::kMax);
  EXPECT_EQ(sig.outputs[0].type.to_string(), "f32[10, 32]");
  EXPECT_EQ(sig.find_input("x")->ipf, ipf({{0, 0, 1}, {1, 0, 0}, {0, 1, 0}}, {0, 0, 0}, {1, 1, 1}));
  EXPECT_EQ(eval("reduce", {"f32[4, 10]"}).index_dims.back().reduction, Monoid::kSum);
  EXPECT_EQ(eval_error("reduce", {"f32[4, 10]"}, {{"op", "mean"}}),
            "reduce: parameter op must be one of sum, max, min, prod, got \"mean\"");
  EXPECT_EQ(eval_error("reduce", {"f32[]"}, {}, {"P"}),
            "reduce: P must have rank at least 1 (x is [$block, $d...]) but it is f32[]");
}

TEST(Softmax, RowsAreWholeWindows) {
  Signature sig = eval("softmax", {"f32[2, 3, 7]"});
  EXPECT_EQ(sig.dim_names(), (Names{"batch0", "batch1"}));
  EXPECT_EQ(sig.find_input("x")->ipf, ipf({{1, 0}, {0, 1}, {0, 0}}, {0, 0, 0}, {1, 1, 7}));
  EXPECT_EQ(sig.outputs[0].ipf.apply(zr("zr[1:2, 0:3]")), zr("zr[1:2, 0:3, 0:7]"));
  EXPECT_EQ(eval_error("softmax", {"i32[2, 3]"}, {}, {"S"}),
            "softmax: S is i32, but T must be one of f32, f64, bf16, f16");
}

// ---- layout ------------------------------------------------------------------------------

TEST(Transpose, SwapsTheLastTwoDims) {
  Signature sig = eval("transpose", {"f32[2, 3, 5]"});
  EXPECT_EQ(sig.dim_names(), (Names{"batch", "n", "m"}));
  EXPECT_EQ(sig.outputs[0].type.to_string(), "f32[2, 5, 3]");
  EXPECT_EQ(sig.find_input("x")->ipf, ipf({{1, 0, 0}, {0, 0, 1}, {0, 1, 0}}, {0, 0, 0}, {1, 1, 1}));
  EXPECT_EQ(eval_error("transpose", {"f32[3]"}, {}, {"V"}),
            "transpose: V must have rank at least 2 (x is [$batch..., $m, $n]) but it is f32[3]");
}

TEST(Permute, ReordersDims) {
  Signature sig = eval("permute", {"f32[2:4, 3, 5]"}, {{"perm", {2, 0, 1}}});
  EXPECT_EQ(sig.outputs[0].type.to_string(), "f32[5, 2, 3]");
  EXPECT_EQ(sig.dim_names(), (Names{"d0", "d1", "d2"}));
  // x dim 0 is result dim 1, x dim 1 is result dim 2, x dim 2 is result dim 0.
  EXPECT_EQ(sig.find_input("x")->ipf, ipf({{0, 1, 0}, {0, 0, 1}, {1, 0, 0}}, {2, 0, 0}, {1, 1, 1}));
  EXPECT_THAT(eval_error("permute", {"f32[2, 3]"}, {{"perm", {0, 0}}}, {"X"}),
              HasSubstr("permute: perm [0, 0] for X f32[2, 3]"));
  EXPECT_THAT(eval_error("permute", {"f32[2, 3]"}, {{"perm", {0, 1, 2}}}),
              HasSubstr("permute: perm [0, 1, 2]"));
  EXPECT_EQ(eval_error("permute", {"f32[2, 3]"}, {{"perm", {-1, 0}}}, {"X"}),
            "permute: perm [-1, 0] is not a permutation of 0..1");
  EXPECT_EQ(eval_error("permute", {"f32[2, 3]"}), "permute: missing parameter 'perm' (ints)");
}

TEST(Reshape, SplitAndMergeForAttentionHeads) {
  // [B·S, H·D] -> [B, S, H, D]: the index is the finer shape; x reads [S·b + s, D·h + d].
  Signature split = eval("reshape", {"f32[6, 8]"}, {{"shape", {2, 3, 4, 2}}});
  EXPECT_EQ(split.index(), zr("zr[0:2, 0:3, 0:4, 0:2]"));
  EXPECT_EQ(split.dim_names(), (Names{"d0", "d1", "d2", "d3"}));
  EXPECT_EQ(split.find_input("x")->ipf, ipf({{3, 1, 0, 0}, {0, 0, 2, 1}}, {0, 0}, {1, 1}));
  EXPECT_EQ(split.outputs[0].ipf, zspace::IndexProjection::identity(4));
  EXPECT_EQ(split.find_input("x")->ipf.apply(zr("zr[1:2, 0:3, 0:4, 0:2]")), zr("zr[3:6, 0:8]"));
  // And back: [B, S, H, D] -> [B·S, H·D].
  Signature merge = eval("reshape", {"f32[2, 3, 4, 2]"}, {{"shape", {6, -1}}});
  EXPECT_EQ(merge.outputs[0].type.to_string(), "f32[6, 8]");
  EXPECT_EQ(merge.outputs[0].ipf, ipf({{3, 1, 0, 0}, {0, 0, 2, 1}}, {0, 0}, {1, 1}));
  EXPECT_EQ(merge.find_input("x")->ipf, zspace::IndexProjection::identity(4));
}

TEST(Reshape, UnitDimsAndOffsets) {
  Signature sig = eval("reshape", {"f32[10:14, 1, 6]"}, {{"shape", {4, 6, 1}}});
  EXPECT_EQ(sig.outputs[0].type.to_string(), "f32[4, 6, 1]");
  EXPECT_EQ(sig.find_input("x")->ipf.apply(sig.index()), zr("zr[10:14, 0:1, 0:6]"));
  EXPECT_EQ(sig.outputs[0].ipf.apply(sig.index()), zr("zr[0:4, 0:6, 0:1]"));
  EXPECT_EQ(
      eval("reshape", {"f32[1, 1]"}, {{"shape", std::vector<int>{}}}).outputs[0].type.to_string(),
      "f32[]");
}

TEST(Reshape, Errors) {
  EXPECT_EQ(
      eval_error("reshape", {"f32[6, 4]"}, {{"shape", {4, 6}}}, {"X"}),
      "reshape: X f32[6, 4] to [4, 6]: dims [6, 4] become [4, 6], which is neither a split nor a "
      "merge of adjacent dims");
  EXPECT_EQ(eval_error("reshape", {"f32[6, 4]"}, {{"shape", {5, 5}}}, {"X"}),
            "reshape: cannot reshape X f32[6, 4] (24 elements) to [5, 5] (25 elements)");
  EXPECT_EQ(eval_error("reshape", {"f32[6, 4]"}, {{"shape", {-1, -1}}}),
            "reshape: shape entries must be >= 0 (one may be -1), got -1");
  EXPECT_EQ(eval_error("reshape", {"f32[6, 4]"}, {{"shape", {-2, 12}}}),
            "reshape: parameter shape must be >= -1, got -2");
  EXPECT_EQ(eval_error("reshape", {"f32[6, 4]"}, {{"shape", {5, -1}}}),
            "reshape: cannot infer the -1 in shape [5, -1] for 24 elements");
  EXPECT_EQ(eval_error("reshape", {"f32[6, 4]"}, {{"shape", "6x4"}}),
            "reshape: parameter shape must be a list of integers, got \"6x4\"");
}

// ---- convolution -------------------------------------------------------------------------

TEST(Pad, ResultStartsBeforeItsInput) {
  Signature sig = eval("pad", {"f32[2, 3, 8, 8]"}, {{"padding", 1}});
  EXPECT_EQ(sig.outputs[0].type.to_string(), "f32[0:2, 0:3, -1:9, -1:9]");
  EXPECT_EQ(sig.dim_names(), (Names{"lead0", "lead1", "ph", "pw"}));
  EXPECT_EQ(sig.find_input("x")->ipf, ipf({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}},
                                          {0, 0, 0, 0}, {1, 1, 8, 8}));
  EXPECT_EQ(sig.outputs[0].ipf, ipf({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}},
                                    {0, 0, -1, -1}, {1, 1, 1, 1}));
  EXPECT_EQ(sig.params, (nlohmann::json{{"padding", 1}, {"value", 0.0}}));
  EXPECT_EQ(
      eval("pad", {"f32[0:2, 0:3, -1:9, -1:9]"}, {{"padding", 2}}).outputs[0].type.to_string(),
      "f32[0:2, 0:3, -3:11, -3:11]");
  EXPECT_EQ(eval_error("pad", {"f32[2, 3]"}, {{"padding", -1}}),
            "pad: parameter padding must be >= 0, got -1");
  EXPECT_EQ(eval_error("pad", {"f32[2, 3]"}), "pad: missing parameter 'padding' (int)");
}

TEST(Conv2d, OverlappingStridedWindows) {
  Signature sig = eval("conv2d", {"f32[8, 3, 32, 32]", "f32[16, 3, 3, 3]"}, {{"stride", 2}});
  EXPECT_EQ(sig.dim_names(), (Names{"n", "o", "oh", "ow", "c"}));
  EXPECT_EQ(sig.index(), zr("zr[0:8, 0:16, 0:15, 0:15, 0:3]"));
  EXPECT_EQ(sig.index_dims[4].reduction, Monoid::kSum);
  EXPECT_EQ(sig.outputs[0].type.to_string(), "f32[8, 16, 15, 15]");
  EXPECT_EQ(sig.find_input("x")->ipf,
            ipf({{1, 0, 0, 0, 0}, {0, 0, 0, 0, 1}, {0, 0, 2, 0, 0}, {0, 0, 0, 2, 0}}, {0, 0, 0, 0},
                {1, 1, 3, 3}));
  // Neighbouring output rows 0 and 1 read x rows 0..3 and 2..5: the windows overlap.
  EXPECT_EQ(sig.find_input("x")->ipf.apply(zr("zr[0:1, 0:1, 0:2, 0:1, 0:3]")),
            zr("zr[0:1, 0:3, 0:5, 0:3]"));
  EXPECT_EQ(sig.find_input("w")->ipf,
            ipf({{0, 1, 0, 0, 0}, {0, 0, 0, 0, 1}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}}, {0, 0, 0, 0},
                {1, 1, 3, 3}));
  EXPECT_EQ(sig.params, (nlohmann::json{{"stride", 2}}));  // padding is sugar: never recorded
}

TEST(Conv2d, ReadsAPaddedInputAtNegativeCoordinates) {
  Signature sig = eval("conv2d", {"f32[0:1, 0:3, -1:9, -1:9]", "f32[4, 3, 3, 3]"});
  EXPECT_EQ(sig.outputs[0].type.to_string(), "f32[1, 4, 8, 8]");
  EXPECT_EQ(sig.find_input("x")->ipf.apply(sig.index()), zr("zr[0:1, 0:3, -1:9, -1:9]"));
  EXPECT_EQ(sig.find_input("x")->ipf.apply(zr("zr[0:1, 0:4, 0:1, 0:1, 0:3]")),
            zr("zr[0:1, 0:3, -1:2, -1:2]"));
}

TEST(Conv2d, Errors) {
  EXPECT_EQ(eval_error("conv2d", {"f32[1, 3, 2, 2]", "f32[4, 3, 3, 3]"}, {}, {"I", "K"}),
            "conv2d: I is 2×2 but the filters K are 3×3: larger than the (padded) input");
  EXPECT_EQ(eval_error("conv2d", {"f32[1, 3, 8, 8]", "f32[4, 2, 3, 3]"}, {}, {"I", "K"}),
            "conv2d: I has 3 in dim 1 but K has 2 (its c dimension)");
  EXPECT_EQ(eval_error("conv2d", {"f32[1, 3, 8, 8]", "f32[4, 3, 3, 3]"}, {{"stride", 0}}),
            "conv2d: parameter stride must be >= 1, got 0");
  EXPECT_THAT(eval_error("conv2d", {"f32[1, 3, 8, 8]", "f32[4, 3, 3, 3]"}, {{"padding", 1}}),
              HasSubstr("conv2d: parameter padding=1 is expanded by the kernel's sugar"));
  EXPECT_EQ(eval_error("conv2d", {"f32[3, 8, 8]", "f32[4, 3, 3, 3]"}, {}, {"I"}),
            "conv2d: I must have rank 4 (x is [$n, $c, $ih, $iw]) but it is f32[3, 8, 8]");
}

TEST(EveryBuiltin, OutputIpfsCoverTheirTensorsExactly) {
  // evaluate_signature self-checks this; make sure every kernel has been through it once.
  struct Case {
    const char* kernel;
    std::vector<std::string> types;
    nlohmann::json params;
  };
  const std::vector<Case> cases = {
      {"linear", {"f32[3, 4]", "f32[5, 4]", "f32[5]"}, {}},
      {"matmul", {"f32[2, 3, 4]", "f32[2, 4, 5]"}, {}},
      {"bias_add", {"f32[3, 4]", "f32[4]"}, {}},
      {"sum", {"f32[3, 4]"}, {{"dim", 0}}},
      {"reduce", {"f32[3, 4]"}, {}},
      {"softmax", {"f32[3, 4]"}, {}},
      {"transpose", {"f32[3, 4]"}, {}},
      {"permute", {"f32[3, 4]"}, {{"perm", {1, 0}}}},
      {"reshape", {"f32[3, 4]"}, {{"shape", {12}}}},
      {"pad", {"f32[1, 1, 3, 4]"}, {{"padding", 2}}},
      {"conv2d", {"f32[1, 1, 3, 4]", "f32[2, 1, 2, 2]"}, {}},
  };
  std::set<std::string> covered;
  for (const Case& c : cases) {
    Signature sig =
        eval(c.kernel, c.types, c.params.is_null() ? nlohmann::json::object() : c.params);
    for (const Port& out : sig.outputs)
      EXPECT_EQ(out.ipf.apply(sig.index()), out.type.range) << c.kernel;
    covered.insert(c.kernel);
  }
  EXPECT_EQ(covered.size(), cases.size());
}

}  // namespace
}  // namespace tapestry::metakernel
