// One case per built-in kernel (dtypes, negative starts, size-1 dims, broadcasting) with
// several shardings each: shared by the executor tests, which all must agree on them.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kernel_graphs.h"

namespace tapestry::runtime::testing {

/// Builds one operation (inputs and all) into a fresh builder.
using BuildFn = std::function<Built(GraphBuilder&)>;

struct Case {
  std::string name;
  BuildFn build;
  std::vector<std::vector<std::int64_t>> shardings;
};

inline std::vector<Case> cases() {
  return {
      {"relu f32 at negative coords",
       [](GraphBuilder& b) {
         return add_unary(b, "relu", b.tensor("X", "float32", Range({-40, 20}, {-33, 25})));
       },
       {{2, 1}, {3, 5}, {7, 2}, {1, 4}}},
      {"gelu f64 with a size-1 dim",
       [](GraphBuilder& b) {
         return add_unary(b, "gelu", b.tensor("X", "float64", Range({0, -3, 2}, {5, -2, 9})));
       },
       {{2, 1, 3}, {5, 1, 1}, {1, 1, 4}}},
      {"sub int32 broadcast",
       [](GraphBuilder& b) {
         TensorId a = b.tensor("A", "int32", Range({-2, 0, 0}, {1, 1, 5}));  // [3, 1, 5]
         TensorId c = b.tensor("B", "int32", Range({-9, 4}, {-5, 9}));       // [4, 5]
         return add_binary(b, "sub", a, c, Point{3, 4, 5});
       },
       {{3, 1, 1}, {2, 3, 2}, {1, 4, 5}}},
      {"div f32 broadcast",
       [](GraphBuilder& b) {
         TensorId a = b.tensor("A", "float32", Range::of_shape({5, 3}));
         TensorId c = b.tensor("B", "float32", Range({-1}, {2}));
         return add_binary(b, "div", a, c, Point{5, 3});
       },
       {{2, 2}, {5, 3}}},
      {"bias_add",
       [](GraphBuilder& b) {
         return add_bias_add(b, b.tensor("X", "float32", Range({-40, 20}, {-31, 27})),
                             b.tensor("b", "float32", Range({3}, {10})));
       },
       {{3, 2}, {1, 7}, {4, 1}}},
      {"linear f32 (the running example)",
       [](GraphBuilder& b) {
         return add_linear(b, b.tensor("X", "float32", Range({-40, 20}, {-33, 32})),
                           b.tensor("W", "float32", Range::of_shape({5, 12})),
                           b.tensor("b", "float32", Range::of_shape({5})));
       },
       {{2, 1, 1}, {1, 2, 1}, {3, 4, 1}, {7, 5, 1}, {4, 3, 1}}},
      {"linear f64 two batch dims",
       [](GraphBuilder& b) {
         return add_linear(b, b.tensor("X", "float64", Range({0, -1, 0}, {3, 1, 9})),
                           b.tensor("W", "float64", Range({-2, -2}, {1, 7})),
                           b.tensor("b", "float64", Range::of_shape({3})));
       },
       {{3, 2, 1, 1}, {1, 1, 3, 1}, {2, 2, 2, 1}}},
      {"linear int64",
       [](GraphBuilder& b) {
         return add_linear(b, b.tensor("X", "int64", Range::of_shape({5, 4})),
                           b.tensor("W", "int64", Range::of_shape({3, 4})),
                           b.tensor("b", "int64", Range::of_shape({3})));
       },
       {{2, 3, 1}}},
      {"matmul batched with broadcast",
       [](GraphBuilder& b) {
         TensorId a = b.tensor("A", "float32", Range({-3, 0, 0, 0}, {-1, 1, 5, 6}));  // [2,1,5,6]
         TensorId c = b.tensor("B", "float32", Range({0, 10, 0}, {3, 16, 4}));        // [3,6,4]
         return add_matmul(b, a, c, Point{2, 3});
       },
       {{2, 1, 1, 1, 1}, {1, 3, 2, 2, 1}, {2, 3, 5, 4, 1}}},
      {"sum over a middle dim",
       [](GraphBuilder& b) {
         return add_reduction(b, "sum", b.tensor("X", "float32", Range({-4, 0, 3}, {1, 9, 6})), 1);
       },
       {{2, 3, 1}, {5, 1, 1}, {1, 3, 1}}},
      {"max over dim 0",
       [](GraphBuilder& b) {
         return add_reduction(b, "max", b.tensor("X", "int32", Range({-4, 0}, {3, 5})), 0);
       },
       {{2, 1}, {5, 1}}},
      {"reduce prod over blocks",
       [](GraphBuilder& b) {
         return add_reduce(b, b.tensor("P", "float64", Range({0, -2, 0}, {4, 1, 5})),
                           ir::Monoid::kProd);
       },
       {{3, 1, 1}, {2, 5, 1}}},
      {"softmax rows",
       [](GraphBuilder& b) {
         return add_softmax(b, b.tensor("X", "float32", Range({-40, -7, 20}, {-37, -2, 29})));
       },
       {{3, 1}, {2, 5}, {1, 2}}},
      {"conv2d stride 1 (overlapping windows)",
       [](GraphBuilder& b) {
         return add_conv2d(b, b.tensor("X", "float32", Range({0, 0, -3, -3}, {2, 3, 5, 4})),
                           b.tensor("W", "float32", Range::of_shape({4, 3, 3, 2})), 1);
       },
       {{2, 1, 1, 1, 1}, {1, 2, 3, 2, 1}, {2, 4, 6, 6, 1}}},
      {"conv2d stride 2",
       [](GraphBuilder& b) {
         return add_conv2d(b, b.tensor("X", "float64", Range({-1, 0, 0, 0}, {0, 2, 9, 8})),
                           b.tensor("W", "float64", Range({0, 0, -1, -1}, {3, 2, 2, 2})), 2);
       },
       {{1, 3, 2, 2, 1}, {1, 1, 4, 3, 1}}},
      {"pad into negative coordinates",
       [](GraphBuilder& b) {
         return add_pad(b, b.tensor("X", "float32", Range({0, 0, -2, 3}, {2, 3, 2, 8})), 2, 0.5);
       },
       {{2, 3, 1, 1}, {1, 1, 4, 3}, {2, 1, 8, 9}}},
      {"transpose in tiles (both inner extents >= 32, uneven tails)",
       [](GraphBuilder& b) {
         return add_permute(b, "transpose",
                            b.tensor("X", "float32", Range({1, -3, 4}, {4, 67, 49})), {0, 2, 1});
       },
       {{1, 1, 1}, {3, 1, 1}, {1, 2, 3}}},
      {"transpose",
       [](GraphBuilder& b) {
         return add_permute(b, "transpose", b.tensor("X", "int64", Range({5, -5, 0}, {7, 0, 3})),
                            {0, 2, 1});
       },
       {{2, 3, 5}, {1, 2, 1}}},
      {"permute",
       [](GraphBuilder& b) {
         return add_permute(b, "permute", b.tensor("X", "float32", Range::of_shape({2, 3, 4})),
                            {2, 0, 1});
       },
       {{4, 2, 3}, {3, 1, 2}}},
      {"reshape split",
       [](GraphBuilder& b) {
         return add_reshape(b, b.tensor("X", "float32", Range({-6}, {6})), Point{3, 4}, Point{3, 4},
                            {{4, 1}}, {{1, 0}, {0, 1}});
       },
       {{3, 1}, {2, 3}, {1, 4}}},
  };
}

}  // namespace tapestry::runtime::testing
