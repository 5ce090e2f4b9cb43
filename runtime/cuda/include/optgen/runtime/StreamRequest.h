//===- StreamRequest.h - A collective in flight on a stream -----*- C++ -*-===//
//
// The Request of a device communicator (Communicator.h): its collective was
// enqueued on the communicator's own stream, and an event recorded after
// it; wait() makes the caller's compute stream wait for that event, so the
// host waits for nothing. The NCCL and the in-process CUDA communicators
// both return these.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_STREAMREQUEST_H
#define OPTGEN_RUNTIME_STREAMREQUEST_H

#include "optgen/runtime/Communicator.h"

#include <cuda_runtime.h>

#include <string>

namespace optgen::runtime {

/// Records an event on `stream` now (after the collective just enqueued
/// there) and returns the request whose wait() makes `compute` wait for
/// it; one destroyed unwaited makes `compute` wait too. `what` names the
/// collective in errors. Throws Error naming the failed CUDA call.
RequestPtr recordStreamRequest(cudaStream_t stream, cudaStream_t compute,
                               std::string what);

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_STREAMREQUEST_H
