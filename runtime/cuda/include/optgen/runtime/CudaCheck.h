//===- CudaCheck.h - CUDA runtime calls that throw --------------*- C++ -*-===//
//
// A failed CUDA runtime call becomes an optgen::runtime::Error like every
// other failure of the runtime. Its message is often all a user sees of a
// fault on a device that may be far away, so it names the call, the CUDA
// error (cudaGetErrorName and cudaGetErrorString), and what the caller was
// doing: the parameter or unit concerned.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_CUDACHECK_H
#define OPTGEN_RUNTIME_CUDACHECK_H

#include <cuda_runtime.h>

#include <string>
#include <string_view>

namespace optgen::runtime {

/// "CONTEXT: CALL failed: cudaErrorName (its description)", CALL cut
/// before its first '(' (the function's name); no "CONTEXT: " when it is
/// empty.
std::string describeCudaError(cudaError_t result, std::string_view call,
                              std::string_view context);

/// Throws Error with describeCudaError's message.
[[noreturn]] void throwCudaError(cudaError_t result, std::string_view call,
                                 std::string_view context);

/// Throws Error unless `result` is cudaSuccess. Inline, so that a success
/// costs a comparison: build a costly context once, not at every call.
inline void checkCuda(cudaError_t result, std::string_view call,
                      std::string_view context) {
  if (result != cudaSuccess)
    throwCudaError(result, call, context);
}

/// After a kernel's launch in generated code: throws Error naming `kernel`
/// when the launch failed (cudaGetLastError). The executor adds the unit
/// and its parameters to the message.
inline void checkLaunch(const char *kernel) {
  cudaError_t result = cudaGetLastError();
  if (result != cudaSuccess)
    throwCudaError(result, "its launch",
                   std::string("kernel '") + kernel + "'");
}

class Communicator;

/// Waits on the host until the work queued on `stream` is done. Meanwhile
/// it asks `communicator` (when not null) for a collective that failed
/// after its call (Communicator::asyncError), and throws Error naming
/// `context` and that failure, since on a GPU a collective waiting for a
/// dead peer never ends; as it throws for a failed CUDA call.
void waitForStream(cudaStream_t stream, Communicator *communicator,
                   const std::string &context);

} // namespace optgen::runtime

/// checkCuda on `expression`, a CUDA runtime call, named by its own text.
#define OPTGEN_CUDA_CHECK(expression, context)                                 \
  ::optgen::runtime::checkCuda((expression), #expression, (context))

#endif // OPTGEN_RUNTIME_CUDACHECK_H
