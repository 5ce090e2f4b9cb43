//===- Communicator.h - Collectives between ranks ---------------*- C++ -*-===//
//
// The distributed step averages gradients and shares updated parameters
// through this interface: a single-rank implementation (every collective is
// a copy), an MPI one (the mpi component's MpiCommunicator.h), and, with the
// CUDA target, NCCL. Every collective takes untyped memory and its dtype (F32
// or BF16) and is non-blocking: it returns a Request, and its output may be
// read (and its input changed) only by work ordered after the Request's
// wait().
//
// Streams. A device communicator works on a stream of its own. Its caller
// computes on another stream, bound with bindStream(): a collective launched
// afterwards starts only after the work already queued on that compute
// stream (the communicator records an event there and makes its own stream
// wait on it), and wait() makes the compute stream wait for the collective
// (an event on the communicator's stream) without blocking the host. Host
// communicators have no streams: their collectives read the memory as it is
// when launched and wait() blocks until they are complete.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_COMMUNICATOR_H
#define OPTGEN_RUNTIME_COMMUNICATOR_H

#include "optgen/runtime/Tensor.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace optgen::runtime {

/// A collective in flight.
class Request {
public:
  virtual ~Request();
  /// Makes the collective's result visible to the work that follows on the
  /// caller's compute stream: a host communicator returns once the
  /// collective is complete; a stream communicator makes the bound compute
  /// stream wait on the collective's completion event and returns at once.
  /// Idempotent. A Request destroyed unwaited completes the collective
  /// first (its buffers must outlive it).
  virtual void wait() = 0;
};

using RequestPtr = std::unique_ptr<Request>;

class Communicator {
public:
  virtual ~Communicator();
  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// Binds the caller's compute stream (opaque: a cudaStream_t for NCCL),
  /// which later collectives order after and whose later work their wait()
  /// orders after them (see the file comment). Host communicators take only
  /// null, the default, and throw Error for a stream.
  virtual void bindStream(void *stream);

  /// data[0, count) becomes the mean over ranks of every rank's data.
  /// F32 sums in f32 and divides once. BF16 sums in f32, each partial sum
  /// rounded once to bf16 (as NCCL's bf16 reductions do), then divides the
  /// sum once and rounds the mean once (Float16.h's rounding).
  virtual RequestPtr allReduceMean(void *data, int64_t count, DType dtype) = 0;

  /// Rank r receives in recv[0, counts[r]) the mean over ranks (as
  /// allReduceMean computes it) of their send[offset_r, offset_r +
  /// counts[r]), offset_r the sum of the counts before r. Every rank passes
  /// the same counts; send holds their sum.
  virtual RequestPtr reduceScatterMean(const void *send, void *recv,
                                       const std::vector<int64_t> &counts,
                                       DType dtype) = 0;

  /// recv (the sum of counts) becomes every rank's send[0, counts[rank]),
  /// in rank order. Every rank passes the same counts.
  virtual RequestPtr allGather(const void *send, void *recv,
                               const std::vector<int64_t> &counts,
                               DType dtype) = 0;

  /// A communicator over the ranks of this one that pass the same `color`,
  /// ranked by `key` (then by rank), as MPI_Comm_split makes it: the shard
  /// groups of a hybrid step and the ranks of one position across them.
  /// Every rank calls it, with no collective in flight. Throws Error where
  /// the implementation has no groups (the default).
  virtual std::unique_ptr<Communicator> split(int color, int key);

  /// Blocking, on the host, outside steps: recv (size() * bytes) becomes
  /// every rank's send[0, bytes), in rank order; every rank passes the same
  /// `bytes`. What the ranks agree with before and after a fallible phase
  /// (Agreement.h). The default carries the bytes through allGather() as
  /// F32 words, which every communicator moves without arithmetic; a
  /// device communicator, whose collectives return before they complete,
  /// overrides it.
  virtual void allGatherBytes(const void *send, size_t bytes, void *recv);

  /// A collective of this communicator that failed after its call returned
  /// (a device communicator's run later: a rank that died, aborted or
  /// called another collective), described; empty while none has. Code
  /// that waits on the host for work that includes collectives asks while
  /// it waits, since a GPU waits for a dead peer forever. The default:
  /// collectives fail in their calls.
  virtual std::string asyncError();

  /// Ends every rank's process now, with exit status `code`: what a rank
  /// does after reporting an error that the others, waiting inside a
  /// collective, cannot learn of (MPI: MPI_Abort). One rank alone exits.
  [[noreturn]] virtual void abort(int code);
};

/// A request that completes `first`, then averages data[0, count) over
/// `communicator` (allReduceMean) and completes that: the reduce-scatter of
/// a hybrid step followed by its part's average across the groups. On the
/// host the all-reduce starts when the request is waited for.
RequestPtr thenAllReduceMean(RequestPtr first, Communicator &communicator,
                             void *data, int64_t count, DType dtype);

/// Throws Error unless `counts` has one non-negative count per rank of
/// `ranks`; `what` names the collective.
void checkCollectiveCounts(const std::vector<int64_t> &counts, int ranks,
                           const char *what);

/// Throws Error unless `dtype` is one collectives carry (F32, BF16); `what`
/// names the collective.
void checkCollectiveDType(DType dtype, const char *what);

/// One rank alone: every collective is a copy, complete at once.
std::unique_ptr<Communicator> makeSingleRankCommunicator();

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_COMMUNICATOR_H
