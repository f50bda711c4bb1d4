// Test helpers: run a graph on the naive or application executor and read results.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tapestry/runtime/application_executor.h"
#include "tapestry/runtime/naive_executor.h"

namespace tapestry::runtime::testing {

inline BufferMap run_naive(const ir::Graph& g, std::map<std::string, Buffer> inputs) {
  return NaiveExecutor(g).run(bind_by_name(g, std::move(inputs)));
}

inline BufferMap run_sharded(const ir::Graph& g, std::map<std::string, Buffer> inputs) {
  return ApplicationExecutor(g).run(bind_by_name(g, std::move(inputs)));
}

/// The values of tensor `t` in row-major order.
template <Element T>
std::vector<T> values_of(const BufferMap& values, ir::TensorId t) {
  auto span = values.at(t).values<T>();
  return {span.begin(), span.end()};
}

/// The message of the Error `fn` throws ("no error" when it does not throw).
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace tapestry::runtime::testing
