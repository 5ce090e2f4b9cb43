//===- MpiCommunicator.cpp - Collectives over MPI -------------------------===//

#include "optgen/runtime/MpiCommunicator.h"

#include "optgen/runtime/Error.h"

#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <string>

namespace optgen::runtime {

namespace {

void check(int code, const char *what) {
  if (code == MPI_SUCCESS)
    return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw Error(std::string(what) + " failed: " + std::string(text, length));
}

int asInt(int64_t count, const char *what) {
  if (count < 0 || count > INT_MAX)
    throw Error(std::string(what) + ": " + std::to_string(count) +
                " elements is beyond what one MPI call moves");
  return static_cast<int>(count);
}

/// A collective whose result is a sum: wait() divides by the world size
/// to make it the mean (MPI has no averaging reduction).
class MpiRequest : public Request {
public:
  MpiRequest(MPI_Request request, float *scaled, int64_t count, int worldSize)
      : request(request), scaled(scaled), count(count), worldSize(worldSize) {}
  ~MpiRequest() override {
    // A collective must complete before its buffers go away.
    if (request != MPI_REQUEST_NULL)
      MPI_Wait(&request, MPI_STATUS_IGNORE);
  }
  void wait() override {
    if (request == MPI_REQUEST_NULL)
      return;
    check(MPI_Wait(&request, MPI_STATUS_IGNORE), "MPI_Wait");
    if (scaled) {
      float inverse = 1.0f / static_cast<float>(worldSize);
      for (int64_t i = 0; i < count; ++i)
        scaled[i] *= inverse;
    }
  }

private:
  MPI_Request request;
  float *scaled;
  int64_t count;
  int worldSize;
};

class MpiCommunicator : public Communicator {
public:
  MpiCommunicator() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided),
            "MPI_Init_thread");
      std::atexit([] {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized)
          MPI_Finalize();
      });
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  RequestPtr allReduceMean(float *data, int64_t count) override {
    MPI_Request request;
    check(MPI_Iallreduce(MPI_IN_PLACE, data, asInt(count, "all-reduce"),
                         MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &request),
          "MPI_Iallreduce");
    return std::make_unique<MpiRequest>(request, data, count, size_);
  }

  RequestPtr reduceScatterMean(const float *send, float *recv,
                               const std::vector<int64_t> &counts) override {
    std::vector<int> ints = toInts(counts, "reduce-scatter");
    MPI_Request request;
    check(MPI_Ireduce_scatter(send, recv, ints.data(), MPI_FLOAT, MPI_SUM,
                              MPI_COMM_WORLD, &request),
          "MPI_Ireduce_scatter");
    return std::make_unique<MpiRequest>(request, recv, counts[rank_], size_);
  }

  RequestPtr allGather(const float *send, float *recv,
                       const std::vector<int64_t> &counts) override {
    std::vector<int> ints = toInts(counts, "all-gather");
    std::vector<int> offsets(ints.size(), 0);
    for (size_t r = 1; r < ints.size(); ++r)
      offsets[r] = offsets[r - 1] + ints[r - 1];
    MPI_Request request;
    check(MPI_Iallgatherv(send, ints[rank_], MPI_FLOAT, recv, ints.data(),
                          offsets.data(), MPI_FLOAT, MPI_COMM_WORLD, &request),
          "MPI_Iallgatherv");
    return std::make_unique<MpiRequest>(request, nullptr, 0, size_);
  }

private:
  std::vector<int> toInts(const std::vector<int64_t> &counts,
                          const char *what) const {
    if (static_cast<int>(counts.size()) != size_)
      throw Error(std::string(what) + " takes one count per rank (" +
                  std::to_string(size_) + "), not " +
                  std::to_string(counts.size()));
    std::vector<int> ints;
    int64_t total = 0;
    for (int64_t c : counts) {
      ints.push_back(asInt(c, what));
      total += c;
    }
    (void)asInt(total, what);
    return ints;
  }

  int rank_ = 0, size_ = 1;
};

} // namespace

std::unique_ptr<Communicator> makeMpiCommunicator() {
  return std::make_unique<MpiCommunicator>();
}

} // namespace optgen::runtime
