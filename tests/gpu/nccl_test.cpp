// NcclComm (src/gpu/nccl_comm.h) on one rank and one GPU: every operation on real device buffers
// (the destination filled with NaN bytes first, so an operation that writes nothing, or writes
// the wrong place, fails), checked against what a one-rank collective must give — the input
// itself, at the right displacement — and the errors. More than one rank is not testable here:
// NCCL refuses two ranks on one GPU (docs/gpu.md, "Multi-GPU").
#include "nccl_comm.h"

#include <cuda_runtime_api.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "tapestry/support/error.h"

namespace tapestry::gpu {
namespace {

using ir::DType;
using ::testing::HasSubstr;

int usable_gpus() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

// One rank talks to itself: NCCL's bootstrap socket on the loopback interface, which every
// machine has (a container may have no other), unless the environment chose one.
NcclUniqueId loopback_unique_id() {
  setenv("NCCL_SOCKET_IFNAME", "lo", /*overwrite=*/0);
  return NcclComm::unique_id();
}

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

class Nccl : public ::testing::Test {
 protected:
  void SetUp() override {
    if (usable_gpus() == 0) GTEST_SKIP() << "no usable GPU";
    CUDA_OK(cudaSetDevice(0));
    CUDA_OK(cudaStreamCreate(&stream_));
    comm_ = std::make_unique<NcclComm>(loopback_unique_id(), 0, 1, 0);
  }
  void TearDown() override {
    comm_.reset();
    for (void* p : buffers_) cudaFree(p);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  // A device buffer of `bytes`, every byte 0xFF (NaN in every float type).
  void* device(std::size_t bytes) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, bytes), cudaSuccess);
    EXPECT_EQ(cudaMemset(p, 0xFF, bytes), cudaSuccess);
    buffers_.push_back(p);
    return p;
  }
  template <class T>
  void* upload(const std::vector<T>& values) {
    void* p = device(values.size() * sizeof(T));
    EXPECT_EQ(cudaMemcpy(p, values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice),
              cudaSuccess);
    return p;
  }
  template <class T>
  std::vector<T> download(const void* p, std::size_t count) {
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    std::vector<T> out(count);
    EXPECT_EQ(cudaMemcpy(out.data(), p, count * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }

  cudaStream_t stream_ = nullptr;
  std::unique_ptr<NcclComm> comm_;
  std::vector<void*> buffers_;
};

std::vector<float> ramp(std::size_t n, float start) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = start + 0.25f * float(i);
  return v;
}

template <class T>
std::vector<std::uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<std::uint8_t> out(v.size() * sizeof(T));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

TEST_F(Nccl, OneRankCommunicator) {
  EXPECT_TRUE(comm_->valid());
  EXPECT_EQ(comm_->rank(), 0);
  EXPECT_EQ(comm_->size(), 1);
  EXPECT_EQ(comm_->device(), 0);
}

TEST_F(Nccl, AllReduceOfEveryReductionIsTheInputOnOneRank) {
  const std::vector<float> x = ramp(1000, -7);
  const void* send = upload(x);
  for (NcclReduction op :
       {NcclReduction::kSum, NcclReduction::kProd, NcclReduction::kMax, NcclReduction::kMin}) {
    void* recv = device(x.size() * sizeof(float));
    comm_->all_reduce(send, recv, x.size(), DType::kFloat32, op, stream_);
    EXPECT_EQ(download<float>(recv, x.size()), x) << static_cast<int>(op);
  }
  // In place, float64 and int32.
  const std::vector<double> d = {1.5, -2.25, 3e300, -0.0};
  void* inplace = upload(d);
  comm_->all_reduce(inplace, inplace, d.size(), DType::kFloat64, NcclReduction::kSum, stream_);
  EXPECT_EQ(bytes_of(download<double>(inplace, d.size())), bytes_of(d));
  const std::vector<std::int32_t> i = {7, -8, 1 << 30};
  void* ints = upload(i);
  void* ints_out = device(i.size() * 4);
  comm_->all_reduce(ints, ints_out, i.size(), DType::kInt32, NcclReduction::kSum, stream_);
  EXPECT_EQ(download<std::int32_t>(ints_out, i.size()), i);
}

TEST_F(Nccl, ReduceAndBroadcastFromRootZero) {
  // bfloat16 bits, moved exactly.
  const std::vector<std::uint16_t> x = {0x3F80, 0xC000, 0x7F80, 0x0001, 0x8000};
  const void* send = upload(x);
  void* reduced = device(x.size() * 2);
  comm_->reduce(send, reduced, x.size(), DType::kBFloat16, NcclReduction::kSum, 0, stream_);
  EXPECT_EQ(download<std::uint16_t>(reduced, x.size()), x);
  void* broadcast = device(x.size() * 2);
  comm_->broadcast(send, broadcast, x.size(), DType::kBFloat16, 0, stream_);
  EXPECT_EQ(download<std::uint16_t>(broadcast, x.size()), x);
}

TEST_F(Nccl, ReduceScatterAndAllGatherMoveTheWholeSliceOnOneRank) {
  const std::vector<float> x = ramp(4096, 3);
  const void* send = upload(x);
  void* scattered = device(x.size() * 4);
  comm_->reduce_scatter(send, scattered, x.size(), DType::kFloat32, NcclReduction::kSum, stream_);
  EXPECT_EQ(download<float>(scattered, x.size()), x);
  void* gathered = device(x.size() * 4);
  comm_->all_gather(send, gathered, x.size(), DType::kFloat32, stream_);
  EXPECT_EQ(download<float>(gathered, x.size()), x);
}

TEST_F(Nccl, TheVariantsWithCountsHonourTheDisplacement) {
  const std::vector<float> x = ramp(64, 1);
  const void* send = upload(x);
  // all_gather_v: the rank's 50 elements land at 9 of a 64-element buffer, the rest untouched.
  void* gathered = device(64 * 4);
  const std::size_t counts[] = {50};
  const std::size_t at9[] = {9};
  comm_->all_gather_v(send, gathered, counts, at9, DType::kFloat32, stream_);
  const std::vector<float> g = download<float>(gathered, 64);
  for (std::size_t i = 0; i < 64; ++i) {
    if (i >= 9 && i < 59) {
      EXPECT_EQ(g[i], x[i - 9]) << i;
    } else {
      EXPECT_TRUE(std::isnan(g[i])) << i;
    }
  }
  // reduce_scatter_v: the rank's slice is send[7, 7 + 50).
  void* scattered = device(50 * 4);
  const std::size_t at7[] = {7};
  comm_->reduce_scatter_v(send, scattered, counts, at7, DType::kFloat32, NcclReduction::kSum,
                          stream_);
  EXPECT_EQ(download<float>(scattered, 50), std::vector<float>(x.begin() + 7, x.begin() + 57));
}

TEST_F(Nccl, ExchangeSendsAndReceivesInOneGroup) {
  // To itself: a send and the matching receive must sit in one group or they deadlock. NCCL
  // pairs the n-th send to a peer with the n-th receive from it, so the receives follow the
  // sends' order (x, then y), interleaved with them as a caller may.
  const std::vector<float> x = ramp(300, -1);
  void* send = upload(x);
  void* recv = device(x.size() * 4);
  const std::vector<std::int64_t> y = {1, -2, 1LL << 40};
  void* send2 = upload(y);
  void* recv2 = device(y.size() * 8);
  const NcclTransfer transfers[] = {{NcclTransfer::kRecv, 0, recv, x.size(), DType::kFloat32},
                                    {NcclTransfer::kSend, 0, send, x.size(), DType::kFloat32},
                                    {NcclTransfer::kRecv, 0, recv2, y.size(), DType::kInt64},
                                    {NcclTransfer::kSend, 0, send2, y.size(), DType::kInt64}};
  comm_->exchange(transfers, stream_);
  EXPECT_EQ(download<float>(recv, x.size()), x);
  EXPECT_EQ(download<std::int64_t>(recv2, y.size()), y);
  const NcclTransfer bad[] = {{NcclTransfer::kSend, 1, send, 1, DType::kFloat32}};
  try {
    comm_->exchange(bad, stream_);
    FAIL() << "a send to rank 1 of 1 was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("peer 1 of a communicator of 1"));
  }
}

TEST_F(Nccl, SplitMakesACommunicatorOfTheMembers) {
  NcclComm part = comm_->split(5, 0);
  ASSERT_TRUE(part.valid());
  EXPECT_EQ(part.size(), 1);
  EXPECT_EQ(part.rank(), 0);
  const std::vector<float> x = ramp(10, 2);
  const void* send = upload(x);
  void* recv = device(40);
  part.all_reduce(send, recv, x.size(), DType::kFloat32, NcclReduction::kSum, stream_);
  EXPECT_EQ(download<float>(recv, x.size()), x);
  EXPECT_FALSE(comm_->split(-1, 0).valid());
}

TEST_F(Nccl, DtypesNcclLacksAreErrors) {
  void* p = device(16);
  EXPECT_THROW(comm_->all_reduce(p, p, 4, DType::kInt16, NcclReduction::kSum, stream_), Error);
}

TEST(NcclSetUp, BadRanksAndDevicesAreErrorsNamingThem) {
  try {
    NcclComm comm(NcclUniqueId{}, 1, 1, 0);
    FAIL() << "rank 1 of 1 was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("rank 1 of 1"));
  }
  if (usable_gpus() == 0) {
    // Without a GPU, the reason.
    try {
      NcclComm comm(NcclUniqueId{}, 0, 1, 0);
      FAIL() << "a communicator without a GPU";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("no CUDA device"));
    }
    return;
  }
  try {
    NcclComm comm(loopback_unique_id(), 0, 1, usable_gpus());
    FAIL() << "a device past the last was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(fmt::format("no CUDA device {}", usable_gpus())));
  }
}

TEST(NcclSetUp, TheMpiBootstrapNeedsMpiInitialised) {
  // The test process never calls MPI_Init (the GPU machine has no Open MPI components).
  try {
    (void)NcclComm::from_mpi();
    FAIL() << "from_mpi ran without MPI";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::AnyOf(HasSubstr("MPI is not initialised"),
                                           HasSubstr("this build has no MPI")));
  }
}

}  // namespace
}  // namespace tapestry::gpu
