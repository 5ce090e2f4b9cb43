//===- InProcessCommunicator.h - Ranks as threads of one process -*- C++ -*-===//
//
// N ranks in one process, each a thread with a communicator of its own:
// the multi-rank step without MPI or a second GPU. A collective is a
// meeting (Rendezvous): every rank posts its buffers, waits until all
// have, reads what it needs from the others' memory, and waits again until
// all have read before any writes its output, so that no rank's input
// changes while another reads it. Sums run in rank order, with the
// interface's semantics exactly (Communicator.h), so that N ranks end
// where one does when gradients are chosen to sum exactly.
//
// The host communicators here read and write host memory; the cuda
// component's in-process communicators (CudaInProcessCommunicator.h) meet
// the same way and move device memory on streams.
//
// A rank that does not come to a collective within the patience given
// (a rank that failed, or called another collective) makes every waiting
// rank throw Error, as does a collective that differs between ranks (kind,
// dtype or counts): an error, never a hang. abort() (a rank failing inside
// a step) ends the meetings, not the process the ranks share.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_INPROCESSCOMMUNICATOR_H
#define OPTGEN_RUNTIME_INPROCESSCOMMUNICATOR_H

#include "optgen/runtime/Communicator.h"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace optgen::runtime {

/// Where the ranks of one process meet for each collective.
class Rendezvous {
public:
  /// What a rank brings to a collective.
  struct Post {
    /// "all-reduce", "reduce-scatter", "all-gather": ranks must agree.
    const char *kind = "";
    const void *send = nullptr;
    void *recv = nullptr;
    std::vector<int64_t> counts;
    DType dtype = DType::F32;
    /// What else a rank shares with the others (a device communicator's
    /// event).
    void *extra = nullptr;
  };

  Rendezvous(int size, std::chrono::milliseconds patience);
  int size() const { return size_; }

  /// Posts `post` as `rank`'s and returns every rank's post, by rank, once
  /// all have posted. Throws Error when ranks differ in kind, dtype or
  /// counts, or when one does not come within the patience (then every
  /// later meeting fails too).
  const std::vector<Post> &meet(int rank, Post post);
  /// Returns once every rank has called leave() for the current meeting:
  /// none reads another's memory any more. Throws Error as meet() does.
  void leave(int rank);
  /// Ends every meeting: waiting ranks throw Error naming `rank`. A
  /// communicator breaks it when destroyed.
  void breakOff(int rank);

private:
  /// The barrier: returns once all ranks have arrived at it.
  void arrive(int rank, const char *where);

  int size_;
  std::chrono::milliseconds patience_;
  std::mutex mutex_;
  std::condition_variable arrived_;
  int waiting_ = 0;
  uint64_t generation_ = 0;
  std::string broken_; ///< why meetings end, once they do
  std::vector<Post> posts_;
};

/// Communicator::allGatherBytes for in-process ranks (host memory, on the
/// host, whatever memory their collectives move): rank `rank` meets the
/// others at `rendezvous` and copies every rank's `bytes` in rank order.
void allGatherBytesInProcess(Rendezvous &rendezvous, int rank,
                             const void *send, size_t bytes, void *recv);

/// Communicator::abort for in-process ranks: the process is every rank's,
/// so it is not ended; the meetings are (the other ranks' collectives
/// throw Error naming `rank`), and this rank throws Error saying so.
[[noreturn]] void abortInProcess(Rendezvous &rendezvous, int rank, int code);

/// `size` host communicators of one process, rank r at index r, for the
/// threads that step each rank. A rank that waits longer than `patience`
/// for the others throws Error.
std::vector<std::unique_ptr<Communicator>> makeInProcessCommunicators(
    int size,
    std::chrono::milliseconds patience = std::chrono::milliseconds(60000));

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_INPROCESSCOMMUNICATOR_H
