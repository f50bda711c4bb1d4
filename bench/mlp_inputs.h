// The MLP baselines' shared pieces (bench/mlp_onednn.cpp, bench/mlp_openblas.cpp): their inputs
// and the median they print.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "tapestry/runtime/npy.h"

namespace mlp_bench {

/// `size` float32 values of input `name`: from DIR/<name>.npy when `dir` is given (exit 2 when its
/// size differs), else uniform in [-1, 1) from `seed`.
inline std::vector<float> load(const char* program, const std::string& dir, const char* name,
                               std::size_t size, std::uint32_t seed) {
  std::vector<float> v(size);
  if (!dir.empty()) {
    const tapestry::runtime::Buffer b =
        tapestry::runtime::read_npy(std::filesystem::path(dir) / (std::string(name) + ".npy"));
    const auto values = b.values<float>();
    if (values.size() != size) {
      std::fprintf(stderr, "%s: %s.npy has %zu values, expected %zu\n", program, name,
                   values.size(), size);
      std::exit(2);
    }
    std::copy(values.begin(), values.end(), v.begin());
    return v;
  }
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  for (float& x : v) x = dist(gen);
  return v;
}

/// The middle value, or the mean of the middle two (v non-empty).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace mlp_bench
