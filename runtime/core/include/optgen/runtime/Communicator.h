//===- Communicator.h - Collectives between ranks ---------------*- C++ -*-===//
//
// The distributed step averages gradients and shares updated parameters
// through this interface: a single-rank implementation (every collective is
// a copy), an MPI one (MpiCommunicator.h), and, with the CUDA target, NCCL.
// Every collective is non-blocking: it returns a Request, and its output may
// be read (and its input changed) only after the Request's wait().
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_COMMUNICATOR_H
#define OPTGEN_RUNTIME_COMMUNICATOR_H

#include <cstdint>
#include <memory>
#include <vector>

namespace optgen::runtime {

/// A collective in flight.
class Request {
public:
  virtual ~Request();
  /// Returns once the collective is complete; idempotent.
  virtual void wait() = 0;
};

using RequestPtr = std::unique_ptr<Request>;

class Communicator {
public:
  virtual ~Communicator();
  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// data[0, count) becomes the mean over ranks of every rank's data.
  virtual RequestPtr allReduceMean(float *data, int64_t count) = 0;

  /// Rank r receives in recv[0, counts[r]) the mean over ranks of their
  /// send[offset_r, offset_r + counts[r]), offset_r the sum of the counts
  /// before r. Every rank passes the same counts; send holds their sum.
  virtual RequestPtr reduceScatterMean(const float *send, float *recv,
                                       const std::vector<int64_t> &counts) = 0;

  /// recv (the sum of counts) becomes every rank's send[0, counts[rank]),
  /// in rank order. Every rank passes the same counts.
  virtual RequestPtr allGather(const float *send, float *recv,
                               const std::vector<int64_t> &counts) = 0;
};

/// One rank alone: every collective is a copy, complete at once.
std::unique_ptr<Communicator> makeSingleRankCommunicator();

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_COMMUNICATOR_H
