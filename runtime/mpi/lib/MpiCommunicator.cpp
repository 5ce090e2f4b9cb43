//===- MpiCommunicator.cpp - Collectives over MPI -------------------------===//

#include "optgen/runtime/MpiCommunicator.h"

#include "optgen/runtime/Error.h"
#include "optgen/runtime/Float16.h"

#include <mpi.h>

#include <climits>
#include <cstdio>
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

/// MPI has no bf16: bf16 travels as 16-bit integers, summed by this
/// operation in f32, each partial sum rounded once to bf16 (Float16.h).
void sumBF16(void *in, void *inout, int *length, MPI_Datatype *) {
  const uint16_t *a = static_cast<const uint16_t *>(in);
  uint16_t *b = static_cast<uint16_t *>(inout);
  for (int i = 0; i < *length; ++i)
    b[i] = toBF16Bits(fromBF16Bits(a[i]) + fromBF16Bits(b[i]));
}

MPI_Datatype mpiType(DType dtype) {
  return dtype == DType::BF16 ? MPI_UINT16_T : MPI_FLOAT;
}

/// A collective in flight; for a reduction, wait() divides its sum by the
/// world size once to make it the mean (MPI has no averaging reduction).
class MpiRequest : public Request {
public:
  MpiRequest(MPI_Request request, void *sum, int64_t count, DType dtype,
             int worldSize)
      : request(request), sum(sum), count(count), dtype(dtype),
        worldSize(worldSize) {}
  ~MpiRequest() override {
    // A collective must complete before its buffers go away.
    if (request != MPI_REQUEST_NULL)
      MPI_Wait(&request, MPI_STATUS_IGNORE);
  }
  void wait() override {
    if (request == MPI_REQUEST_NULL)
      return;
    check(MPI_Wait(&request, MPI_STATUS_IGNORE), "MPI_Wait");
    if (!sum)
      return;
    float size = static_cast<float>(worldSize);
    if (dtype == DType::BF16) {
      uint16_t *bits = static_cast<uint16_t *>(sum);
      for (int64_t i = 0; i < count; ++i)
        bits[i] = toBF16Bits(fromBF16Bits(bits[i]) / size);
    } else {
      float *values = static_cast<float *>(sum);
      for (int64_t i = 0; i < count; ++i)
        values[i] /= size;
    }
  }

private:
  MPI_Request request;
  void *sum;
  int64_t count;
  DType dtype;
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
    check(MPI_Op_create(&sumBF16, /*commute=*/1, &sumBF16_), "MPI_Op_create");
  }
  /// Over `comm`, which it frees (a split of another's).
  explicit MpiCommunicator(MPI_Comm comm) : comm_(comm), owned_(true) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    check(MPI_Op_create(&sumBF16, /*commute=*/1, &sumBF16_), "MPI_Op_create");
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized)
      return;
    MPI_Op_free(&sumBF16_);
    if (owned_)
      MPI_Comm_free(&comm_);
  }

  std::unique_ptr<Communicator> split(int color, int key) override {
    MPI_Comm comm;
    check(MPI_Comm_split(comm_, color, key, &comm), "MPI_Comm_split");
    return std::make_unique<MpiCommunicator>(comm);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  RequestPtr allReduceMean(void *data, int64_t count, DType dtype) override {
    checkCollectiveDType(dtype, "all-reduce");
    MPI_Request request;
    check(MPI_Iallreduce(MPI_IN_PLACE, data, asInt(count, "all-reduce"),
                         mpiType(dtype), sumOf(dtype), comm_, &request),
          "MPI_Iallreduce");
    return std::make_unique<MpiRequest>(request, data, count, dtype, size_);
  }

  RequestPtr reduceScatterMean(const void *send, void *recv,
                               const std::vector<int64_t> &counts,
                               DType dtype) override {
    checkCollectiveDType(dtype, "reduce-scatter");
    std::vector<int> ints = toInts(counts, "reduce-scatter");
    MPI_Request request;
    check(MPI_Ireduce_scatter(send, recv, ints.data(), mpiType(dtype),
                              sumOf(dtype), comm_, &request),
          "MPI_Ireduce_scatter");
    return std::make_unique<MpiRequest>(request, recv, counts[rank_], dtype,
                                        size_);
  }

  RequestPtr allGather(const void *send, void *recv,
                       const std::vector<int64_t> &counts,
                       DType dtype) override {
    checkCollectiveDType(dtype, "all-gather");
    std::vector<int> ints = toInts(counts, "all-gather");
    std::vector<int> offsets(ints.size(), 0);
    for (size_t r = 1; r < ints.size(); ++r)
      offsets[r] = offsets[r - 1] + ints[r - 1];
    MPI_Request request;
    check(MPI_Iallgatherv(send, ints[rank_], mpiType(dtype), recv, ints.data(),
                          offsets.data(), mpiType(dtype), comm_, &request),
          "MPI_Iallgatherv");
    return std::make_unique<MpiRequest>(request, nullptr, 0, dtype, size_);
  }

  void allGatherBytes(const void *send, size_t bytes, void *recv) override {
    int count = asInt(static_cast<int64_t>(bytes), "byte all-gather");
    (void)asInt(static_cast<int64_t>(bytes) * size_, "byte all-gather");
    check(MPI_Allgather(send, count, MPI_BYTE, recv, count, MPI_BYTE,
                        comm_),
          "MPI_Allgather");
  }

  [[noreturn]] void abort(int code) override {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code); // MPI_Abort does not return
  }

private:
  MPI_Op sumOf(DType dtype) const {
    return dtype == DType::BF16 ? sumBF16_ : MPI_SUM;
  }

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

  MPI_Comm comm_ = MPI_COMM_WORLD;
  bool owned_ = false;
  int rank_ = 0, size_ = 1;
  MPI_Op sumBF16_ = MPI_OP_NULL;
};

} // namespace

std::unique_ptr<Communicator> makeMpiCommunicator() {
  return std::make_unique<MpiCommunicator>();
}

} // namespace optgen::runtime
