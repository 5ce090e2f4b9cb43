//===- NcclCommunicator.h - Collectives between GPUs over NCCL --*- C++ -*-===//
//
// The Communicator (Communicator.h) of the distributed CUDA step: NCCL's
// collectives on a communication stream of the communicator's own, ordered
// against the caller's compute stream (bindStream) by events, so that a
// step waits for no collective on the host and a whole step can be
// captured as one CUDA graph.
//
// Semantics are the interface's, exactly: a mean is NCCL's sum (bf16
// partial sums rounded once each, as NCCL's bf16 reductions round them)
// divided once by the world size on the communication stream and rounded
// once (NCCL's own ncclAvg multiplies each input by 1/N first, which rounds
// differently). Uneven counts, which the ZeRO-2 plan gives ranks (one owns
// more of a unit than another), are a group of ncclReduce (ncclBroadcast)
// calls, one rooted at each rank; equal counts are one ncclReduceScatter
// (ncclAllGather).
//
// Three ways to make one, as training code has NCCL set up: from a unique
// id one rank makes and the caller distributes (as torch.distributed does
// over its store), from an MPI launch (the id broadcast over MPI), or
// around a ncclComm_t the caller already has (and keeps).
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_NCCLCOMMUNICATOR_H
#define OPTGEN_RUNTIME_NCCLCOMMUNICATOR_H

#include "optgen/runtime/Communicator.h"

#include <nccl.h>

#include <array>
#include <memory>

namespace optgen::runtime {

/// NCCL's unique id as plain bytes, for a caller to send to every rank.
struct NcclId {
  std::array<char, NCCL_UNIQUE_ID_BYTES> bytes{};
};

/// A new unique id (ncclGetUniqueId): made on one rank, given to all.
NcclId makeNcclId();

/// Rank `rank` of `size` ranks that were given the same `id`, on the CUDA
/// device current now (which every later collective runs on). Blocks until
/// every rank has joined (ncclCommInitRank). Throws Error naming the call
/// and NCCL's error.
std::unique_ptr<Communicator> makeNcclCommunicator(const NcclId &id, int rank,
                                                   int size);

/// A communicator on `comm`, which the caller made (and destroys after this
/// communicator), on the CUDA device current now.
std::unique_ptr<Communicator> wrapNcclCommunicator(ncclComm_t comm);

#ifdef OPTGEN_RUNTIME_NCCL_MPI
/// Every rank of MPI_COMM_WORLD (MPI initialised by the caller), ranked as
/// MPI ranks them: rank 0 makes the id and broadcasts it. Each rank selects
/// its CUDA device first.
std::unique_ptr<Communicator> makeNcclCommunicatorOverMpi();
#endif

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_NCCLCOMMUNICATOR_H
