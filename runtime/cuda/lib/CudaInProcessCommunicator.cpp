//===- CudaInProcessCommunicator.cpp - Ranks as threads on one GPU --------===//

#include "optgen/runtime/CudaInProcessCommunicator.h"

#include "RankBarrier.h"
#include "RankMeanKernel.h"
#include "optgen/runtime/CudaCheck.h"
#include "optgen/runtime/Error.h"
#include "optgen/runtime/InProcessCommunicator.h"
#include "optgen/runtime/StreamRequest.h"

#include <numeric>
#include <string>
#include <utility>

namespace optgen::runtime {

namespace {

/// What the ranks share on the device: the barrier they meet at, and each
/// rank's count of barriers passed; freed with the last communicator.
struct DeviceMeeting {
  RankBarrierState *barrier = nullptr;
  unsigned *passed = nullptr; ///< per rank
  explicit DeviceMeeting(int size) {
    const char *context = "setting up the in-process CUDA communicators";
    size_t bytes = sizeof(RankBarrierState) + size * sizeof(unsigned);
    OPTGEN_CUDA_CHECK(cudaMalloc(reinterpret_cast<void **>(&barrier), bytes),
                      context);
    passed = reinterpret_cast<unsigned *>(barrier + 1);
    // Zeroed before any rank's stream can meet at the barrier.
    OPTGEN_CUDA_CHECK(cudaMemset(barrier, 0, bytes), context);
    OPTGEN_CUDA_CHECK(cudaDeviceSynchronize(), context);
  }
  ~DeviceMeeting() { cudaFree(barrier); }
  DeviceMeeting(const DeviceMeeting &) = delete;
  DeviceMeeting &operator=(const DeviceMeeting &) = delete;
};

class CudaInProcessCommunicator final : public Communicator {
public:
  CudaInProcessCommunicator(std::shared_ptr<Rendezvous> rendezvous,
                            std::shared_ptr<DeviceMeeting> meeting, int rank)
      : rendezvous_(std::move(rendezvous)), meeting_(std::move(meeting)),
        rank_(rank) {
    const char *context = "setting up an in-process CUDA communicator";
    OPTGEN_CUDA_CHECK(
        cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), context);
    OPTGEN_CUDA_CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming),
                      context);
  }
  ~CudaInProcessCommunicator() override {
    rendezvous_->breakOff(rank_);
    cudaStreamSynchronize(stream_);
    for (void *scratch : scratch_)
      cudaFree(scratch);
    cudaEventDestroy(ready_);
    cudaStreamDestroy(stream_);
  }

  int rank() const override { return rank_; }
  int size() const override { return rendezvous_->size(); }
  void bindStream(void *stream) override {
    compute_ = static_cast<cudaStream_t>(stream);
  }

  RequestPtr allReduceMean(void *data, int64_t count, DType dtype) override {
    checkCollectiveDType(dtype, "all-reduce");
    if (count < 0)
      throw Error("all-reduce of " + std::to_string(count) + " elements");
    // In place: the mean goes to scratch until every rank has read.
    size_t bytes = static_cast<size_t>(count) * dtypeSize(dtype);
    std::string what = describe("all-reduce");
    void *scratch = this->scratch(bytes, what);
    return collective(
        {"all-reduce", data, data, {count}, dtype, nullptr}, what,
        [&](const RankSources &sources) {
          return launchRankMean(sources, size(), 0, count, dtype, scratch,
                                stream_);
        },
        [&]() -> cudaError_t {
          if (!bytes)
            return cudaSuccess;
          return cudaMemcpyAsync(data, scratch, bytes, cudaMemcpyDeviceToDevice,
                                 stream_);
        });
  }

  RequestPtr reduceScatterMean(const void *send, void *recv,
                               const std::vector<int64_t> &counts,
                               DType dtype) override {
    checkCollectiveDType(dtype, "reduce-scatter");
    checkCollectiveCounts(counts, size(), "reduce-scatter");
    int64_t offset = std::accumulate(counts.begin(), counts.begin() + rank_,
                                     int64_t{0});
    // Into recv at once: no other rank reads it.
    return collective(
        {"reduce-scatter", send, recv, counts, dtype, nullptr},
        describe("reduce-scatter"),
        [&](const RankSources &sources) {
          return launchRankMean(sources, size(), offset, counts[rank_], dtype,
                                recv, stream_);
        },
        [] { return cudaSuccess; });
  }

  RequestPtr allGather(const void *send, void *recv,
                       const std::vector<int64_t> &counts,
                       DType dtype) override {
    checkCollectiveDType(dtype, "all-gather");
    checkCollectiveCounts(counts, size(), "all-gather");
    size_t bytes = dtypeSize(dtype);
    return collective(
        {"all-gather", send, recv, counts, dtype, nullptr},
        describe("all-gather"),
        [&](const RankSources &sources) {
          size_t at = 0;
          for (int r = 0; r < size(); ++r) {
            size_t part = static_cast<size_t>(counts[r]) * bytes;
            if (part) {
              cudaError_t result = cudaMemcpyAsync(
                  static_cast<unsigned char *>(recv) + at, sources.at[r], part,
                  cudaMemcpyDeviceToDevice, stream_);
              if (result != cudaSuccess)
                return result;
            }
            at += part;
          }
          return cudaSuccess;
        },
        [] { return cudaSuccess; });
  }

  // On the host, as the interface says.
  void allGatherBytes(const void *send, size_t bytes, void *recv) override {
    allGatherBytesInProcess(*rendezvous_, rank_, send, bytes, recv);
  }
  [[noreturn]] void abort(int code) override {
    abortInProcess(*rendezvous_, rank_, code);
  }

private:
  std::string describe(const char *kind) const {
    return std::string(kind) + " on in-process rank " + std::to_string(rank_);
  }

  /// The ranks meet on the host, when the collective is enqueued (or
  /// captured), to learn each other's buffers and agree on the collective;
  /// on the device, when it runs (each time a graph holding it replays):
  /// a barrier once every rank's inputs are ready, `compute` reading them
  /// (this rank's part of the result, in recv or scratch), a barrier once
  /// every rank has read, then `finish` (scratch into recv).
  template <typename Compute, typename Finish>
  RequestPtr collective(Rendezvous::Post post, const std::string &what,
                        const Compute &compute, const Finish &finish) {
    const std::vector<Rendezvous::Post> &posts =
        rendezvous_->meet(rank_, std::move(post));
    // Copied now: after leave() a rank may post its next collective.
    RankSources sources{};
    for (int r = 0; r < size(); ++r)
      sources.at[r] = posts[r].send;
    rendezvous_->leave(rank_);
    OPTGEN_CUDA_CHECK(cudaEventRecord(ready_, compute_), what);
    OPTGEN_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready_, 0), what);
    meetOnDevice(what);
    checkCuda(compute(sources), "the collective's copy or kernel", what);
    meetOnDevice(what);
    checkCuda(finish(), "the collective's result", what);
    return recordStreamRequest(stream_, compute_, what);
  }

  void meetOnDevice(const std::string &what) {
    checkCuda(launchRankBarrier(meeting_->barrier, meeting_->passed + rank_,
                                size(), stream_),
              "the ranks' barrier", what);
  }

  /// Device memory of at least `bytes` for one collective's result. Kept
  /// until the communicator goes, never reused for a larger one: a CUDA
  /// graph holding a collective keeps using its scratch. Allocated as the
  /// collective is enqueued, which may be during the caller's capture: in
  /// relaxed mode, where the allocation is not part of the graph.
  void *scratch(size_t bytes, const std::string &what) {
    if (bytes == 0)
      return nullptr;
    if (bytes <= scratchBytes_ && !scratch_.empty())
      return scratch_.back();
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    OPTGEN_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode), what);
    void *made = nullptr;
    cudaError_t result = cudaMalloc(&made, bytes);
    cudaThreadExchangeStreamCaptureMode(&mode);
    checkCuda(result, "cudaMalloc", what + ": its scratch");
    scratch_.push_back(made);
    scratchBytes_ = bytes;
    return made;
  }

  std::shared_ptr<Rendezvous> rendezvous_;
  std::shared_ptr<DeviceMeeting> meeting_;
  int rank_;
  cudaStream_t stream_ = nullptr, compute_ = nullptr;
  /// On the compute stream: the collective's inputs are ready.
  cudaEvent_t ready_ = nullptr;
  std::vector<void *> scratch_;
  size_t scratchBytes_ = 0;
};

} // namespace

std::vector<std::unique_ptr<Communicator>>
makeCudaInProcessCommunicators(int size, std::chrono::milliseconds patience) {
  if (size < 1 || size > kMaxInProcessRanks)
    throw Error("in-process CUDA communicators of " + std::to_string(size) +
                " ranks: 1 to " + std::to_string(kMaxInProcessRanks));
  auto rendezvous = std::make_shared<Rendezvous>(size, patience);
  auto meeting = std::make_shared<DeviceMeeting>(size);
  std::vector<std::unique_ptr<Communicator>> communicators;
  for (int r = 0; r < size; ++r)
    communicators.push_back(
        std::make_unique<CudaInProcessCommunicator>(rendezvous, meeting, r));
  return communicators;
}

} // namespace optgen::runtime
