//===- CudaCheckTest.cpp - Messages of failed CUDA calls ------------------===//
//
// A failed CUDA call's message is often all a user sees of a fault on a
// device: it must name the call, the CUDA error and what was being done.
// Needs no GPU: the messages come from cudart alone.
//
//===----------------------------------------------------------------------===//

#include "optgen/runtime/CudaCheck.h"

#include "CudaTestRules.h"

#include "optgen/runtime/Error.h"

#include <gtest/gtest.h>

using namespace optgen::runtime;

namespace {

TEST(CudaCheckTest, AMessageNamesTheCallTheErrorAndTheContext) {
  EXPECT_EQ(
      describeCudaError(cudaErrorMemoryAllocation, "cudaMalloc(&data, bytes)",
                        "parameter 'layer.0.weight'"),
      "parameter 'layer.0.weight': cudaMalloc failed: "
      "cudaErrorMemoryAllocation (" +
          std::string(cudaGetErrorString(cudaErrorMemoryAllocation)) + ")");
  EXPECT_EQ(describeCudaError(cudaErrorInvalidValue, "cudaMemcpy", ""),
            "cudaMemcpy failed: cudaErrorInvalidValue (" +
                std::string(cudaGetErrorString(cudaErrorInvalidValue)) + ")");
}

TEST(CudaCheckTest, ASuccessPassesAndAFailureThrowsError) {
  EXPECT_NO_THROW(OPTGEN_CUDA_CHECK(cudaSuccess, "nothing"));
  try {
    OPTGEN_CUDA_CHECK(cudaErrorLaunchFailure, "unit 2 (local)");
    FAIL() << "no Error";
  } catch (const Error &error) {
    EXPECT_EQ(std::string(error.what()),
              describeCudaError(cudaErrorLaunchFailure,
                                "cudaErrorLaunchFailure", "unit 2 (local)"));
  }
}

TEST(CudaCheckTest, AFailedLaunchNamesItsKernel) {
  try {
    optgen::runtime::test::launchTooManyThreads();
    FAIL() << "no Error";
  } catch (const Error &error) {
    // cudaErrorInvalidConfiguration on a GPU; without one, what cudart
    // says of its absence.
    std::string message = error.what();
    EXPECT_EQ(message.rfind("kernel 'emptyKernel': its launch failed: cuda", 0),
              0u)
        << message;
  }
  cudaGetLastError(); // the next test starts without it
}

} // namespace
