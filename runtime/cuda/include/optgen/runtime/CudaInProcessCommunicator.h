//===- CudaInProcessCommunicator.h - Ranks as threads on one GPU -*- C++ -*-===//
//
// The in-process communicators (InProcessCommunicator.h) for device memory:
// N ranks as threads of one process on one GPU, each with its own compute
// stream and a communication stream of its communicator's, so that the
// distributed CUDA step runs at N > 1 where NCCL cannot (it puts one rank
// on a GPU). The ranks meet twice for each collective: on the host when it
// is enqueued (or captured into a CUDA graph), to exchange their buffers'
// addresses and check that they call the same collective; and on the
// device each time it runs, at a barrier in device memory that every
// rank's communication stream reaches once its inputs are ready, and again
// once every rank has read them, before any rank writes an output others
// might still read (the mean in rank order, RankMean.h). So a step
// captured as a CUDA graph, the default, replays its collectives with the
// ranks meeting on the device alone. The host waits for the other ranks
// to enqueue, never for the device. At most kMaxInProcessRanks ranks.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_CUDAINPROCESSCOMMUNICATOR_H
#define OPTGEN_RUNTIME_CUDAINPROCESSCOMMUNICATOR_H

#include "optgen/runtime/Communicator.h"

#include <chrono>
#include <memory>
#include <vector>

namespace optgen::runtime {

constexpr int kMaxInProcessRanks = 8;

/// `size` communicators of device memory on the CUDA device current now,
/// rank r at index r, for the threads that step each rank. A rank that
/// waits longer than `patience` for the others throws Error.
std::vector<std::unique_ptr<Communicator>> makeCudaInProcessCommunicators(
    int size,
    std::chrono::milliseconds patience = std::chrono::milliseconds(60000));

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_CUDAINPROCESSCOMMUNICATOR_H
