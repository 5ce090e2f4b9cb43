//===- StreamRequest.cpp - A collective in flight on a stream -------------===//

#include "optgen/runtime/StreamRequest.h"

#include "optgen/runtime/CudaCheck.h"

#include <memory>
#include <utility>

namespace optgen::runtime {

namespace {

class StreamRequest final : public Request {
public:
  StreamRequest(cudaEvent_t done, cudaStream_t compute, std::string what)
      : done_(done), compute_(compute), what_(std::move(what)) {}
  ~StreamRequest() override {
    // Unwaited: later work on the compute stream still follows it.
    if (!waited_)
      cudaStreamWaitEvent(compute_, done_, 0);
    cudaEventDestroy(done_);
  }
  void wait() override {
    if (waited_)
      return;
    OPTGEN_CUDA_CHECK(cudaStreamWaitEvent(compute_, done_, 0),
                      "waiting for the " + what_);
    waited_ = true;
  }

private:
  cudaEvent_t done_;
  cudaStream_t compute_;
  std::string what_;
  bool waited_ = false;
};

} // namespace

RequestPtr recordStreamRequest(cudaStream_t stream, cudaStream_t compute,
                               std::string what) {
  cudaEvent_t done = nullptr;
  OPTGEN_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming),
                    what);
  cudaError_t result = cudaEventRecord(done, stream);
  if (result != cudaSuccess) {
    cudaEventDestroy(done);
    throwCudaError(result, "cudaEventRecord", what);
  }
  return std::make_unique<StreamRequest>(done, compute, std::move(what));
}

} // namespace optgen::runtime
