//===- CudaCheck.cpp - CUDA runtime calls that throw ----------------------===//

#include "optgen/runtime/CudaCheck.h"

#include "optgen/runtime/Communicator.h"
#include "optgen/runtime/Error.h"

#include <chrono>
#include <thread>

namespace optgen::runtime {

std::string describeCudaError(cudaError_t result, std::string_view call,
                              std::string_view context) {
  std::string message;
  if (!context.empty())
    message.append(context).append(": ");
  message.append(call.substr(0, call.find('(')))
      .append(" failed: ")
      .append(cudaGetErrorName(result))
      .append(" (")
      .append(cudaGetErrorString(result))
      .append(")");
  return message;
}

void throwCudaError(cudaError_t result, std::string_view call,
                    std::string_view context) {
  throw Error(describeCudaError(result, call, context));
}

void waitForStream(cudaStream_t stream, Communicator *communicator,
                   const std::string &context) {
  // Polled, from a few microseconds up to a millisecond between queries.
  auto pause = std::chrono::microseconds(5);
  for (;;) {
    cudaError_t result = cudaStreamQuery(stream);
    if (result != cudaSuccess && result != cudaErrorNotReady)
      throwCudaError(result, "cudaStreamQuery", context);
    // Also once the work is done: what a failed collective left is not
    // its result.
    if (communicator) {
      std::string failed = communicator->asyncError();
      if (!failed.empty())
        throw Error(context + ": " + failed);
    }
    if (result == cudaSuccess)
      return;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
}

} // namespace optgen::runtime
