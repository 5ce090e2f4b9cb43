//===- CudaInProcessCommunicator.h - Ranks as threads on one GPU -*- C++ -*-===//
//
// The in-process communicators (InProcessCommunicator.h) for device memory:
// N ranks as threads of one process on one GPU, each with its own compute
// stream and a communication stream of its communicator's, so that the
// distributed CUDA step runs at N > 1 where NCCL cannot (it puts one rank
// on a GPU). Ranks meet on the host (Rendezvous) to exchange their buffers
// and events; the data moves on the device: each rank's communication
// stream waits for every rank's compute stream to reach the collective,
// computes its result from the others' memory (the mean in rank order,
// RankMean.h) into scratch of its own, waits until every rank has read,
// and writes its output; wait() makes the compute stream wait for that.
// The host waits for the other ranks to arrive, never for the device.
//
// Collectives meet on the host at every step, which a replayed CUDA graph
// would skip: steps over these communicators run without graphs
// (CudaOptimizer::setGraphs(false)). At most kMaxInProcessRanks ranks.
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
