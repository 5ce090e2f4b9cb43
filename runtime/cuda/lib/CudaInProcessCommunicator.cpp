//===- CudaInProcessCommunicator.cpp - Ranks as threads on one GPU --------===//

#include "optgen/runtime/CudaInProcessCommunicator.h"

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

/// What a rank's communicator shares with the others at each meeting.
struct Events {
  /// On its compute stream: the collective's inputs are ready.
  cudaEvent_t ready = nullptr;
  /// On its communication stream: it has read every rank's input.
  cudaEvent_t read = nullptr;
};

class CudaInProcessCommunicator final : public Communicator {
public:
  CudaInProcessCommunicator(std::shared_ptr<Rendezvous> rendezvous, int rank)
      : rendezvous_(std::move(rendezvous)), rank_(rank) {
    const char *context = "setting up an in-process CUDA communicator";
    OPTGEN_CUDA_CHECK(
        cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), context);
    OPTGEN_CUDA_CHECK(
        cudaEventCreateWithFlags(&events_.ready, cudaEventDisableTiming),
        context);
    OPTGEN_CUDA_CHECK(
        cudaEventCreateWithFlags(&events_.read, cudaEventDisableTiming),
        context);
  }
  ~CudaInProcessCommunicator() override {
    rendezvous_->breakOff(rank_);
    cudaStreamSynchronize(stream_);
    if (scratch_)
      cudaFree(scratch_);
    cudaEventDestroy(events_.ready);
    cudaEventDestroy(events_.read);
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
    return collective({"all-reduce", data, data, {count}, dtype, &events_},
                      count, [&](const RankSources &sources) {
                        return launchRankMean(sources, size(), 0, count, dtype,
                                              scratch_, stream_);
                      });
  }

  RequestPtr reduceScatterMean(const void *send, void *recv,
                               const std::vector<int64_t> &counts,
                               DType dtype) override {
    checkCollectiveDType(dtype, "reduce-scatter");
    checkCollectiveCounts(counts, size(), "reduce-scatter");
    int64_t offset = std::accumulate(counts.begin(), counts.begin() + rank_,
                                     int64_t{0});
    return collective({"reduce-scatter", send, recv, counts, dtype, &events_},
                      counts[rank_], [&](const RankSources &sources) {
                        return launchRankMean(sources, size(), offset,
                                              counts[rank_], dtype, scratch_,
                                              stream_);
                      });
  }

  RequestPtr allGather(const void *send, void *recv,
                       const std::vector<int64_t> &counts,
                       DType dtype) override {
    checkCollectiveDType(dtype, "all-gather");
    checkCollectiveCounts(counts, size(), "all-gather");
    int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
    size_t bytes = dtypeSize(dtype);
    return collective(
        {"all-gather", send, recv, counts, dtype, &events_}, total,
        [&](const RankSources &sources) {
          size_t at = 0;
          for (int r = 0; r < size(); ++r) {
            size_t part = static_cast<size_t>(counts[r]) * bytes;
            if (part) {
              cudaError_t result = cudaMemcpyAsync(
                  static_cast<unsigned char *>(scratch_) + at, sources.at[r],
                  part, cudaMemcpyDeviceToDevice, stream_);
              if (result != cudaSuccess)
                return result;
            }
            at += part;
          }
          return cudaSuccess;
        });
  }

  // On the host, as the interface says.
  void allGatherBytes(const void *send, size_t bytes, void *recv) override {
    allGatherBytesInProcess(*rendezvous_, rank_, send, bytes, recv);
  }
  [[noreturn]] void abort(int code) override {
    abortInProcess(*rendezvous_, rank_, code);
  }

private:

  /// Meets the other ranks with `post`, computes this rank's `outCount`
  /// elements into scratch with `compute` (reading every rank's input),
  /// and, once every rank has read, writes them to post.recv.
  template <typename Compute>
  RequestPtr collective(Rendezvous::Post post, int64_t outCount,
                        const Compute &compute) {
    std::string what = std::string(post.kind) + " on in-process rank " +
                       std::to_string(rank_);
    void *recv = post.recv;
    size_t outBytes = static_cast<size_t>(outCount) * dtypeSize(post.dtype);
    OPTGEN_CUDA_CHECK(cudaEventRecord(events_.ready, compute_), what);
    const std::vector<Rendezvous::Post> &posts =
        rendezvous_->meet(rank_, std::move(post));
    // Copied now: after leave() a rank may post its next collective.
    RankSources sources{};
    std::vector<Events *> others;
    for (int r = 0; r < size(); ++r) {
      sources.at[r] = posts[r].send;
      others.push_back(static_cast<Events *>(posts[r].extra));
    }
    for (Events *events : others)
      OPTGEN_CUDA_CHECK(cudaStreamWaitEvent(stream_, events->ready, 0), what);
    reserve(outBytes, what);
    checkCuda(compute(sources), "the collective's copy or kernel", what);
    OPTGEN_CUDA_CHECK(cudaEventRecord(events_.read, stream_), what);
    rendezvous_->leave(rank_);
    for (Events *events : others)
      OPTGEN_CUDA_CHECK(cudaStreamWaitEvent(stream_, events->read, 0), what);
    if (outBytes)
      OPTGEN_CUDA_CHECK(cudaMemcpyAsync(recv, scratch_, outBytes,
                                        cudaMemcpyDeviceToDevice, stream_),
                        what);
    return recordStreamRequest(stream_, compute_, what);
  }

  /// Scratch of at least `bytes`, once what used the old one is done.
  void reserve(size_t bytes, const std::string &what) {
    if (bytes <= scratchBytes_)
      return;
    OPTGEN_CUDA_CHECK(cudaStreamSynchronize(stream_), what);
    if (scratch_)
      cudaFree(scratch_);
    scratch_ = nullptr;
    scratchBytes_ = 0;
    OPTGEN_CUDA_CHECK(cudaMalloc(&scratch_, bytes), what);
    scratchBytes_ = bytes;
  }

  std::shared_ptr<Rendezvous> rendezvous_;
  int rank_;
  cudaStream_t stream_ = nullptr, compute_ = nullptr;
  Events events_;
  void *scratch_ = nullptr;
  size_t scratchBytes_ = 0;
};

} // namespace

std::vector<std::unique_ptr<Communicator>>
makeCudaInProcessCommunicators(int size, std::chrono::milliseconds patience) {
  if (size < 1 || size > kMaxInProcessRanks)
    throw Error("in-process CUDA communicators of " + std::to_string(size) +
                " ranks: 1 to " + std::to_string(kMaxInProcessRanks));
  auto rendezvous = std::make_shared<Rendezvous>(size, patience);
  std::vector<std::unique_ptr<Communicator>> communicators;
  for (int r = 0; r < size; ++r)
    communicators.push_back(
        std::make_unique<CudaInProcessCommunicator>(rendezvous, r));
  return communicators;
}

} // namespace optgen::runtime
