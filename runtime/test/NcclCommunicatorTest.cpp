//===- NcclCommunicatorTest.cpp - The NCCL communicator at one rank -------===//
//
// NCCL cannot put two ranks on one GPU, so here it runs at N = 1 (the
// multi-rank semantics are the interface's, tested at N = 1..4 with the
// in-process and MPI communicators): every collective leaves a rank's own
// data as the interface says, on its own stream, ordered after what the
// bound compute stream queued before it and before what that stream
// queues after wait(), without the host waiting, and inside a CUDA graph.
// The arguments it rejects are rejected everywhere, before NCCL is called.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"

#include "optgen/runtime/CudaCheck.h"
#include "optgen/runtime/Error.h"
#include "optgen/runtime/Float16.h"
#include "optgen/runtime/NcclCommunicator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

using namespace optgen::runtime;
using namespace optgen::runtime::test;

namespace {

std::string errorOf(void (*attempt)()) {
  try {
    attempt();
  } catch (const Error &error) {
    return error.what();
  }
  return "(no error)";
}

TEST(NcclCommunicatorTest, ARankOutsideTheWorldIsAnError) {
  EXPECT_EQ(errorOf([] { makeNcclCommunicator(NcclId{}, 2, 2); }),
            "a NCCL communicator of rank 2 of 2 ranks");
  EXPECT_EQ(errorOf([] { makeNcclCommunicator(NcclId{}, 0, 0); }),
            "a NCCL communicator of rank 0 of 0 ranks");
  EXPECT_EQ(errorOf([] { wrapNcclCommunicator(nullptr); }),
            "a NCCL communicator around a null ncclComm_t");
}

/// One rank's communicator with a compute stream of its own bound.
struct OneRank {
  std::unique_ptr<Communicator> communicator;
  cudaStream_t compute = nullptr;
  OneRank() {
    communicator = makeNcclCommunicator(makeNcclId(), 0, 1);
    OPTGEN_CUDA_CHECK(
        cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking), "test");
    communicator->bindStream(compute);
  }
  ~OneRank() {
    communicator.reset();
    cudaStreamDestroy(compute);
  }
};

std::vector<float> values(int64_t count, float seed) {
  std::vector<float> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    v[i] = std::sin(0.37f * static_cast<float>(i) + seed);
  return v;
}

TEST(NcclCommunicatorTest, OneRanksCollectivesAreItsOwnData) {
  SKIP_WITHOUT_CUDA_DEVICE();
  OneRank rank;
  EXPECT_EQ(rank.communicator->rank(), 0);
  EXPECT_EQ(rank.communicator->size(), 1);
  constexpr int64_t kCount = 1000;
  std::vector<float> data = values(kCount, 1.0f);
  DeviceBytes send(bytesOf(data));
  DeviceBytes recv(bytesOf(std::vector<float>(kCount, 0.0f)));

  rank.communicator->allReduceMean(send.data, kCount, DType::F32)->wait();
  rank.communicator->reduceScatterMean(send.data, recv.data, {kCount},
                                       DType::F32)
      ->wait();
  OPTGEN_CUDA_CHECK(cudaStreamSynchronize(rank.compute), "test");
  EXPECT_EQ(send.download(), bytesOf(data));
  EXPECT_EQ(recv.download(), bytesOf(data));

  DeviceBytes gathered(bytesOf(std::vector<float>(kCount, 0.0f)));
  rank.communicator->allGather(send.data, gathered.data, {kCount}, DType::F32)
      ->wait();
  OPTGEN_CUDA_CHECK(cudaStreamSynchronize(rank.compute), "test");
  EXPECT_EQ(gathered.download(), bytesOf(data));
}

TEST(NcclCommunicatorTest, ACollectiveIsOrderedBetweenTheComputeStreamsWork) {
  SKIP_WITHOUT_CUDA_DEVICE();
  OneRank rank;
  constexpr int64_t kCount = 1 << 20;
  std::vector<float> data = values(kCount, 2.0f);
  DeviceBytes staged(bytesOf(data));
  DeviceBytes send(bytesOf(std::vector<float>(kCount, 0.0f)));
  DeviceBytes recv(bytesOf(std::vector<float>(kCount, 0.0f)));
  DeviceBytes after(bytesOf(std::vector<float>(kCount, 0.0f)));
  size_t bytes = kCount * sizeof(float);
  // Queued on the compute stream: the data arrives, the reduce-scatter
  // moves it, and a copy after wait() reads its result; the host waits
  // for nothing until the end.
  OPTGEN_CUDA_CHECK(cudaMemcpyAsync(send.data, staged.data, bytes,
                                    cudaMemcpyDeviceToDevice, rank.compute),
                    "test");
  RequestPtr request =
      rank.communicator->reduceScatterMean(send.data, recv.data, {kCount},
                                           DType::F32);
  request->wait();
  OPTGEN_CUDA_CHECK(cudaMemcpyAsync(after.data, recv.data, bytes,
                                    cudaMemcpyDeviceToDevice, rank.compute),
                    "test");
  OPTGEN_CUDA_CHECK(cudaStreamSynchronize(rank.compute), "test");
  EXPECT_EQ(after.download(), bytesOf(data));
}

TEST(NcclCommunicatorTest, BF16CollectivesKeepTheirBits) {
  SKIP_WITHOUT_CUDA_DEVICE();
  OneRank rank;
  constexpr int64_t kCount = 333; // odd: not a multiple of any vector width
  std::vector<unsigned char> bits(kCount * 2);
  std::vector<float> data = values(kCount, 3.0f);
  for (int64_t i = 0; i < kCount; ++i) {
    uint16_t b = toBF16Bits(data[i]);
    std::memcpy(bits.data() + 2 * i, &b, 2);
  }
  DeviceBytes send(bits), recv(std::vector<unsigned char>(bits.size(), 0));
  rank.communicator->allReduceMean(send.data, kCount, DType::BF16)->wait();
  rank.communicator->allGather(send.data, recv.data, {kCount}, DType::BF16)
      ->wait();
  OPTGEN_CUDA_CHECK(cudaStreamSynchronize(rank.compute), "test");
  EXPECT_EQ(send.download(), bits);
  EXPECT_EQ(recv.download(), bits);
}

TEST(NcclCommunicatorTest, CollectivesReplayFromACudaGraph) {
  SKIP_WITHOUT_CUDA_DEVICE();
  OneRank rank;
  constexpr int64_t kCount = 4096;
  std::vector<float> first = values(kCount, 4.0f), second = values(kCount, 5.0f);
  DeviceBytes send(bytesOf(std::vector<float>(kCount, 0.0f)));
  DeviceBytes recv(bytesOf(std::vector<float>(kCount, 0.0f)));
  OPTGEN_CUDA_CHECK(
      cudaStreamBeginCapture(rank.compute, cudaStreamCaptureModeThreadLocal),
      "test capture");
  rank.communicator->reduceScatterMean(send.data, recv.data, {kCount},
                                       DType::F32)
      ->wait();
  cudaGraph_t graph = nullptr;
  OPTGEN_CUDA_CHECK(cudaStreamEndCapture(rank.compute, &graph), "test capture");
  cudaGraphExec_t exec = nullptr;
  OPTGEN_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0), "test graph");
  cudaGraphDestroy(graph);
  for (const std::vector<float> *data : {&first, &second}) {
    send.upload(bytesOf(*data));
    OPTGEN_CUDA_CHECK(cudaGraphLaunch(exec, rank.compute), "test graph");
    OPTGEN_CUDA_CHECK(cudaStreamSynchronize(rank.compute), "test graph");
    EXPECT_EQ(recv.download(), bytesOf(*data));
  }
  cudaGraphExecDestroy(exec);
}

/// Two ranks, each on a GPU of its own (a thread each), with NCCL
/// communicators: `body(rank, communicator)` on each; returns their errors.
std::vector<std::string> onTwoGpus(
    const std::function<void(int, std::unique_ptr<Communicator> &)> &body) {
  NcclId id = makeNcclId();
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      try {
        OPTGEN_CUDA_CHECK(cudaSetDevice(r), "the rank's GPU");
        std::unique_ptr<Communicator> communicator =
            makeNcclCommunicator(id, r, 2);
        body(r, communicator);
      } catch (const std::exception &error) {
        errors[r] = error.what();
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  return errors;
}

/// A collective whose peer is gone (its communicator destroyed) fails on
/// the device after its call returned: the host's wait for it says so,
/// from ncclCommGetAsyncError, rather than returning what it left (or, on
/// a GPU, waiting forever).
TEST(NcclCommunicatorTest, AHostWaitReportsACollectiveThatFailed) {
  SKIP_WITHOUT_CUDA_DEVICE();
  int devices = 0;
  ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
  if (devices < 2)
    GTEST_SKIP() << "two ranks need two GPUs";
  std::vector<std::string> errors =
      onTwoGpus([](int rank, std::unique_ptr<Communicator> &communicator) {
        if (rank == 1) {
          communicator.reset();
          return;
        }
        // After rank 1 has gone.
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        uint32_t mine = 7, all[2] = {};
        communicator->allGatherBytes(&mine, sizeof mine, all);
      });
  EXPECT_NE(errors[0].find("a NCCL collective failed on rank 0"),
            std::string::npos)
      << errors[0];
  EXPECT_EQ(errors[1], "");
}

TEST(NcclCommunicatorTest, CountsThatDoNotFitTheWorldAreErrors) {
  SKIP_WITHOUT_CUDA_DEVICE();
  OneRank rank;
  DeviceBytes buffer(bytesOf(std::vector<float>(8, 0.0f)));
  try {
    rank.communicator->reduceScatterMean(buffer.data, buffer.data, {4, 4},
                                         DType::F32);
    FAIL() << "no Error";
  } catch (const Error &error) {
    EXPECT_EQ(std::string(error.what()),
              "reduce-scatter with 2 counts on 1 ranks: one count per rank");
  }
  try {
    rank.communicator->allGather(buffer.data, buffer.data, {4}, DType::F64);
    FAIL() << "no Error";
  } catch (const Error &error) {
    EXPECT_EQ(std::string(error.what()),
              "all-gather of F64: collectives carry F32 or BF16");
  }
}

} // namespace
