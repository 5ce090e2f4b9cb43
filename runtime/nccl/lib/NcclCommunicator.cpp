//===- NcclCommunicator.cpp - Collectives between GPUs over NCCL ----------===//

#include "optgen/runtime/NcclCommunicator.h"

#include "MeanKernel.h"
#include "optgen/runtime/CudaCheck.h"
#include "optgen/runtime/Error.h"
#include "optgen/runtime/StreamRequest.h"

#ifdef OPTGEN_RUNTIME_NCCL_MPI
#include <mpi.h>
#endif

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace optgen::runtime {

namespace {

/// "CONTEXT: CALL failed: NCCL's error (its last message)".
void checkNccl(ncclResult_t result, const char *call,
               const std::string &context, ncclComm_t comm = nullptr) {
  // (ncclInProgress is a nonblocking communicator's answer; these block.)
  if (result == ncclSuccess)
    return;
  std::string message =
      context + ": " + call + " failed: " + ncclGetErrorString(result);
  if (const char *last = comm ? ncclGetLastError(comm) : nullptr; last && *last)
    message += std::string(" (") + last + ")";
  throw Error(message);
}

ncclDataType_t ncclTypeOf(DType dtype) {
  return dtype == DType::BF16 ? ncclBfloat16 : ncclFloat32;
}

/// "reduce-scatter of 3 x 1024 BF16 elements", what a failed collective
/// says it was doing.
std::string describe(const char *what, const std::vector<int64_t> &counts,
                     DType dtype) {
  std::string text = std::string(what) + " of ";
  bool even = std::all_of(counts.begin(), counts.end(),
                          [&](int64_t c) { return c == counts.front(); });
  if (even)
    text += std::to_string(counts.size()) + " x " +
            std::to_string(counts.empty() ? 0 : counts.front());
  else
    text += std::to_string(std::accumulate(counts.begin(), counts.end(),
                                           int64_t{0})) +
            " (uneven)";
  return text + " " + std::string(dtypeName(dtype)) + " elements";
}

class NcclCommunicator final : public Communicator {
public:
  NcclCommunicator(ncclComm_t comm, bool owned) : comm_(comm), owned_(owned) {
    const std::string context = "setting up the NCCL communicator";
    checkNccl(ncclCommUserRank(comm_, &rank_), "ncclCommUserRank", context,
              comm_);
    checkNccl(ncclCommCount(comm_, &size_), "ncclCommCount", context, comm_);
    OPTGEN_CUDA_CHECK(
        cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), context);
    OPTGEN_CUDA_CHECK(
        cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming), context);
  }

  ~NcclCommunicator() override {
    // Nothing may still use the stream or the communicator; after a
    // collective failed, NCCL's abort ends the ones still waiting.
    bool failed = !asyncError().empty();
    if (!failed) {
      try {
        waitForStream(stream_, this, "destroying the NCCL communicator");
      } catch (const Error &) {
        failed = true;
      }
    }
    if (owned_)
      failed ? ncclCommAbort(comm_) : ncclCommDestroy(comm_);
    cudaEventDestroy(ready_);
    cudaStreamDestroy(stream_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void bindStream(void *stream) override {
    compute_ = static_cast<cudaStream_t>(stream);
  }

  RequestPtr allReduceMean(void *data, int64_t count, DType dtype) override {
    checkCollectiveDType(dtype, "all-reduce");
    if (count < 0)
      throw Error("all-reduce of " + std::to_string(count) + " elements");
    std::string what = describe("all-reduce", {count}, dtype);
    begin(what);
    checkNccl(ncclAllReduce(data, data, static_cast<size_t>(count),
                            ncclTypeOf(dtype), ncclSum, comm_, stream_),
              "ncclAllReduce", what, comm_);
    mean(data, count, dtype, what);
    return end(std::move(what));
  }

  RequestPtr reduceScatterMean(const void *send, void *recv,
                               const std::vector<int64_t> &counts,
                               DType dtype) override {
    checkCollectiveDType(dtype, "reduce-scatter");
    checkCollectiveCounts(counts, size(), "reduce-scatter");
    std::string what = describe("reduce-scatter", counts, dtype);
    begin(what);
    size_t bytes = dtypeSize(dtype);
    if (even(counts)) {
      checkNccl(ncclReduceScatter(send, recv, static_cast<size_t>(counts[0]),
                                  ncclTypeOf(dtype), ncclSum, comm_, stream_),
                "ncclReduceScatter", what, comm_);
    } else {
      // Rank r's part reduced to r alone; only the root's output is
      // written.
      checkNccl(ncclGroupStart(), "ncclGroupStart", what);
      int64_t offset = 0;
      for (int r = 0; r < size_; ++r) {
        const char *from = static_cast<const char *>(send) + offset * bytes;
        checkNccl(ncclReduce(from, r == rank_ ? recv : nullptr,
                             static_cast<size_t>(counts[r]),
                             ncclTypeOf(dtype), ncclSum, r, comm_, stream_),
                  "ncclReduce", what, comm_);
        offset += counts[r];
      }
      checkNccl(ncclGroupEnd(), "ncclGroupEnd", what, comm_);
    }
    mean(recv, counts[rank_], dtype, what);
    return end(std::move(what));
  }

  RequestPtr allGather(const void *send, void *recv,
                       const std::vector<int64_t> &counts,
                       DType dtype) override {
    checkCollectiveDType(dtype, "all-gather");
    checkCollectiveCounts(counts, size(), "all-gather");
    std::string what = describe("all-gather", counts, dtype);
    begin(what);
    size_t bytes = dtypeSize(dtype);
    if (even(counts)) {
      checkNccl(ncclAllGather(send, recv, static_cast<size_t>(counts[0]),
                              ncclTypeOf(dtype), comm_, stream_),
                "ncclAllGather", what, comm_);
    } else {
      // Each rank's part broadcast from it into its place.
      checkNccl(ncclGroupStart(), "ncclGroupStart", what);
      int64_t offset = 0;
      for (int r = 0; r < size_; ++r) {
        char *to = static_cast<char *>(recv) + offset * bytes;
        checkNccl(ncclBroadcast(r == rank_ ? send : nullptr, to,
                                static_cast<size_t>(counts[r]),
                                ncclTypeOf(dtype), r, comm_, stream_),
                  "ncclBroadcast", what, comm_);
        offset += counts[r];
      }
      checkNccl(ncclGroupEnd(), "ncclGroupEnd", what, comm_);
    }
    return end(std::move(what));
  }

  // Host memory, blocking: through a device buffer of the gathered bytes.
  void allGatherBytes(const void *send, size_t bytes, void *recv) override {
    if (size_ == 1) {
      if (bytes && send != recv)
        std::memcpy(recv, send, bytes);
      return;
    }
    const std::string what = "the ranks' agreement (an all-gather of " +
                             std::to_string(bytes) + " bytes)";
    unsigned char *device = nullptr;
    size_t total = bytes * static_cast<size_t>(size_);
    OPTGEN_CUDA_CHECK(cudaMalloc(reinterpret_cast<void **>(&device), total),
                      what);
    try {
      // After what the compute stream has queued (a step's graph, whose
      // collectives must come first on every rank: NCCL runs one
      // communicator's collectives in the order each rank issues them),
      // then all on the communicator's stream (a copy on the legacy
      // default stream would not be ordered with the all-gather).
      if (compute_)
        begin(what);
      OPTGEN_CUDA_CHECK(cudaMemcpyAsync(device + bytes * rank_, send, bytes,
                                        cudaMemcpyHostToDevice, stream_),
                        what);
      checkNccl(ncclAllGather(device + bytes * rank_, device, bytes, ncclChar,
                              comm_, stream_),
                "ncclAllGather", what, comm_);
      OPTGEN_CUDA_CHECK(cudaMemcpyAsync(recv, device, total,
                                        cudaMemcpyDeviceToHost, stream_),
                        what);
      waitForStream(stream_, this, what);
    } catch (...) {
      cudaFree(device);
      throw;
    }
    cudaFree(device);
  }

  std::string asyncError() override {
    ncclResult_t failure = ncclSuccess;
    if (ncclCommGetAsyncError(comm_, &failure) != ncclSuccess)
      return "ncclCommGetAsyncError failed";
    if (failure == ncclSuccess || failure == ncclInProgress)
      return {};
    std::string message = std::string("a NCCL collective failed on rank ") +
                          std::to_string(rank_) + ": " +
                          ncclGetErrorString(failure);
    if (const char *last = ncclGetLastError(comm_); last && *last)
      message += std::string(" (") + last + ")";
    return message;
  }

  // Ends this process after NCCL's communicator: ranks that wait in one of
  // its collectives see it fail (NCCL's abort), where NCCL can tell them.
  [[noreturn]] void abort(int code) override {
    ncclCommAbort(comm_);
    owned_ = false; // aborted: not to be destroyed again
    Communicator::abort(code);
  }

private:
  static bool even(const std::vector<int64_t> &counts) {
    return std::all_of(counts.begin(), counts.end(),
                       [&](int64_t c) { return c == counts.front(); });
  }

  /// The communication stream after the work queued on the compute stream.
  void begin(const std::string &what) {
    OPTGEN_CUDA_CHECK(cudaEventRecord(ready_, compute_), what);
    OPTGEN_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready_, 0), what);
  }
  /// The sum at `data` made the mean (nothing to do on one rank).
  void mean(void *data, int64_t count, DType dtype, const std::string &what) {
    if (size_ == 1)
      return;
    cudaError_t result = launchMeanOfSum(data, count, size_, dtype, stream_);
    if (result != cudaSuccess)
      throwCudaError(result, "the mean's launch", what);
  }
  /// The request of the collective just enqueued.
  RequestPtr end(std::string what) {
    return recordStreamRequest(stream_, compute_, std::move(what));
  }

  ncclComm_t comm_;
  bool owned_;
  int rank_ = 0, size_ = 1;
  cudaStream_t stream_ = nullptr;  ///< the collectives'
  cudaStream_t compute_ = nullptr; ///< the caller's (bindStream)
  cudaEvent_t ready_ = nullptr;
};

} // namespace

NcclId makeNcclId() {
  ncclUniqueId raw;
  checkNccl(ncclGetUniqueId(&raw), "ncclGetUniqueId",
            "making a NCCL unique id");
  NcclId id;
  static_assert(sizeof raw.internal == sizeof id.bytes);
  std::memcpy(id.bytes.data(), raw.internal, id.bytes.size());
  return id;
}

std::unique_ptr<Communicator> makeNcclCommunicator(const NcclId &id, int rank,
                                                   int size) {
  if (size < 1 || rank < 0 || rank >= size)
    throw Error("a NCCL communicator of rank " + std::to_string(rank) +
                " of " + std::to_string(size) + " ranks");
  ncclUniqueId raw;
  std::memcpy(raw.internal, id.bytes.data(), id.bytes.size());
  ncclComm_t comm = nullptr;
  checkNccl(ncclCommInitRank(&comm, size, raw, rank), "ncclCommInitRank",
            "joining rank " + std::to_string(rank) + " of " +
                std::to_string(size) + " to a NCCL communicator");
  try {
    return std::make_unique<NcclCommunicator>(comm, /*owned=*/true);
  } catch (...) {
    ncclCommDestroy(comm);
    throw;
  }
}

std::unique_ptr<Communicator> wrapNcclCommunicator(ncclComm_t comm) {
  if (!comm)
    throw Error("a NCCL communicator around a null ncclComm_t");
  return std::make_unique<NcclCommunicator>(comm, /*owned=*/false);
}

#ifdef OPTGEN_RUNTIME_NCCL_MPI
std::unique_ptr<Communicator> makeNcclCommunicatorOverMpi() {
  int rank = 0, size = 1;
  if (MPI_Comm_rank(MPI_COMM_WORLD, &rank) != MPI_SUCCESS ||
      MPI_Comm_size(MPI_COMM_WORLD, &size) != MPI_SUCCESS)
    throw Error("making a NCCL communicator over MPI: MPI_Comm_rank or "
                "MPI_Comm_size failed (is MPI initialised?)");
  NcclId id;
  if (rank == 0)
    id = makeNcclId();
  if (MPI_Bcast(id.bytes.data(), static_cast<int>(id.bytes.size()), MPI_BYTE,
                0, MPI_COMM_WORLD) != MPI_SUCCESS)
    throw Error("making a NCCL communicator over MPI: broadcasting the NCCL "
                "id failed on rank " +
                std::to_string(rank));
  return makeNcclCommunicator(id, rank, size);
}
#endif

} // namespace optgen::runtime
