// KernelPath: names, the resolution order, and the thread-local noted set.
#include "tapestry/runtime/kernel_path.h"

#include <gtest/gtest.h>

#include <thread>

namespace tapestry::runtime {
namespace {

TEST(KernelPath, Names) {
  EXPECT_EQ(kernel_path_name(KernelPath::kOneDnn), "onednn");
  EXPECT_EQ(kernel_path_name(KernelPath::kOpenBlas), "openblas");
  EXPECT_EQ(kernel_path_name(KernelPath::kVectorised), "vectorised");
  EXPECT_EQ(kernel_path_name(KernelPath::kBody), "body");
  EXPECT_EQ(kernel_path_name(KernelPath::kPlugin), "plugin");
  EXPECT_EQ(kernel_path_name(KernelPath::kMpi), "mpi");
  EXPECT_EQ(kernel_path_name(KernelPath::kReference), "reference");
}

// Table: the noted set → the application's path.
TEST(KernelPath, ResolvesAFallbackFirstThenTheLibraries) {
  using P = KernelPath;
  const KernelPathSet none;
  struct Case {
    KernelPathSet noted;
    KernelPath expected;
  };
  const Case cases[] = {
      {none, P::kReference},  // nothing noted: a kernel without tags, the reference set
      {none.with(P::kVectorised), P::kVectorised},
      {none.with(P::kVectorised).with(P::kOneDnn), P::kOneDnn},  // GEMM + epilogue
      {none.with(P::kOpenBlas).with(P::kVectorised), P::kOpenBlas},
      {none.with(P::kOneDnn).with(P::kOpenBlas), P::kOneDnn},
      {none.with(P::kBody).with(P::kVectorised), P::kBody},
      {none.with(P::kPlugin).with(P::kVectorised), P::kPlugin},  // a fused chain with a plugin
      {none.with(P::kBody).with(P::kPlugin), P::kBody},
      {none.with(P::kPlugin).with(P::kReference), P::kReference},
      {none.with(P::kOneDnn).with(P::kReference), P::kReference},  // one stage fell back
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.noted.resolve(), c.expected) << kernel_path_name(c.expected);
  }
  EXPECT_TRUE(none.is_empty());
  EXPECT_FALSE(none.with(P::kBody).is_empty());
  EXPECT_TRUE(none.with(P::kBody).has(P::kBody));
  EXPECT_FALSE(none.with(P::kBody).has(P::kOneDnn));
  EXPECT_EQ(none.with(P::kBody).with(P::kBody), none.with(P::kBody));
}

// The executor's swap: an inner call's notes do not leak into the outer call's set, and other
// threads' notes never reach this one.
TEST(KernelPath, ExchangeNestsAndIsPerThread) {
  (void)exchange_thread_kernel_paths({});
  note_kernel_path(KernelPath::kVectorised);
  const KernelPathSet outer = exchange_thread_kernel_paths({});
  note_kernel_path(KernelPath::kOneDnn);
  std::thread other([] { note_kernel_path(KernelPath::kReference); });
  other.join();
  const KernelPathSet inner = exchange_thread_kernel_paths(outer);
  EXPECT_EQ(inner, KernelPathSet{}.with(KernelPath::kOneDnn));
  EXPECT_EQ(exchange_thread_kernel_paths({}), KernelPathSet{}.with(KernelPath::kVectorised));
}

}  // namespace
}  // namespace tapestry::runtime
