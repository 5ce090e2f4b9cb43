//===- InProcessCommunicator.cpp - Ranks as threads of one process --------===//

#include "optgen/runtime/InProcessCommunicator.h"

#include "optgen/runtime/Error.h"
#include "optgen/runtime/RankMean.h"

#include <cstring>
#include <numeric>
#include <utility>

namespace optgen::runtime {

Rendezvous::Rendezvous(int size, std::chrono::milliseconds patience)
    : size_(size), patience_(patience), posts_(static_cast<size_t>(size)) {
  if (size < 1)
    throw Error("a rendezvous of " + std::to_string(size) + " ranks");
}

void Rendezvous::arrive(int rank, const char *where) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!broken_.empty())
    throw Error("rank " + std::to_string(rank) + ": " + broken_);
  uint64_t generation = generation_;
  if (++waiting_ == size_) {
    waiting_ = 0;
    ++generation_;
    arrived_.notify_all();
    return;
  }
  bool passed = arrived_.wait_for(lock, patience_, [&] {
    return generation_ != generation || !broken_.empty();
  });
  if (generation_ != generation)
    return; // everyone came, whatever happened since
  if (passed) // broken off while this rank waited
    throw Error("rank " + std::to_string(rank) + ": " + broken_);
  broken_ = "rank " + std::to_string(rank) + " waited " +
            std::to_string(patience_.count()) + " ms at " + where +
            " for the other ranks, and " + std::to_string(waiting_ - 1) +
            " of " + std::to_string(size_ - 1) +
            " came (a rank failed, or called another collective)";
  arrived_.notify_all();
  throw Error(broken_);
}

void Rendezvous::breakOff(int rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (broken_.empty())
    broken_ = "rank " + std::to_string(rank) +
              " left the collectives (its communicator was destroyed)";
  arrived_.notify_all();
}

namespace {

std::string describePost(const Rendezvous::Post &post) {
  std::string counts;
  for (size_t r = 0; r < post.counts.size(); ++r)
    counts += (r ? ", " : "") + std::to_string(post.counts[r]);
  return std::string(post.kind) + " of " + std::string(dtypeName(post.dtype)) +
         " with counts [" + counts + "]";
}

} // namespace

const std::vector<Rendezvous::Post> &Rendezvous::meet(int rank, Post post) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    posts_[static_cast<size_t>(rank)] = std::move(post);
  }
  arrive(rank, "a collective");
  // Every rank sees the same posts, so every rank throws alike.
  const Post &first = posts_[0];
  for (int r = 1; r < size_; ++r) {
    const Post &other = posts_[static_cast<size_t>(r)];
    if (std::strcmp(other.kind, first.kind) != 0 ||
        other.dtype != first.dtype || other.counts != first.counts) {
      std::string why = "rank " + std::to_string(r) + " called " +
                        describePost(other) + " where rank 0 called " +
                        describePost(first);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        broken_ = why;
      }
      throw Error("rank " + std::to_string(rank) + ": " + why);
    }
  }
  return posts_;
}

void Rendezvous::leave(int rank) { arrive(rank, "the end of a collective"); }

namespace {

struct DoneRequest final : Request {
  void wait() override {}
};

/// The mean over ranks (RankMean.h) of posts[r].send at `offset`
/// (elements), `count` elements of `dtype`, into `out`.
void meanInRankOrder(const std::vector<Rendezvous::Post> &posts,
                     int64_t offset, int64_t count, DType dtype, void *out) {
  int size = static_cast<int>(posts.size());
  if (dtype == DType::F32) {
    float *to = static_cast<float *>(out);
    for (int64_t i = 0; i < count; ++i)
      to[i] = rankMeanF32(
          [&](int r) {
            return static_cast<const float *>(posts[r].send)[offset + i];
          },
          size);
    return;
  }
  uint16_t *to = static_cast<uint16_t *>(out);
  for (int64_t i = 0; i < count; ++i)
    to[i] = rankMeanBF16(
        [&](int r) {
          return static_cast<const uint16_t *>(posts[r].send)[offset + i];
        },
        size);
}

} // namespace

void allGatherBytesInProcess(Rendezvous &rendezvous, int rank,
                             const void *send, size_t bytes, void *recv) {
  int64_t count = static_cast<int64_t>(bytes);
  const std::vector<Rendezvous::Post> &posts = rendezvous.meet(
      rank, {"byte all-gather", send, recv,
             std::vector<int64_t>(static_cast<size_t>(rendezvous.size()), count),
             DType::F32, nullptr});
  std::vector<unsigned char> gathered(bytes * posts.size());
  for (size_t r = 0; r < posts.size(); ++r)
    if (bytes)
      std::memcpy(gathered.data() + r * bytes, posts[r].send, bytes);
  rendezvous.leave(rank);
  if (!gathered.empty())
    std::memcpy(recv, gathered.data(), gathered.size());
}

void abortInProcess(Rendezvous &rendezvous, int rank, int code) {
  rendezvous.breakOff(rank);
  throw Error("rank " + std::to_string(rank) + " aborted (status " +
              std::to_string(code) +
              "): in-process ranks share a process, so the other ranks' "
              "collectives end with an error instead");
}

namespace {

class InProcessCommunicator final : public Communicator {
public:
  InProcessCommunicator(std::shared_ptr<Rendezvous> rendezvous, int rank)
      : rendezvous_(std::move(rendezvous)), rank_(rank) {}
  ~InProcessCommunicator() override { rendezvous_->breakOff(rank_); }

  int rank() const override { return rank_; }
  int size() const override { return rendezvous_->size(); }

  RequestPtr allReduceMean(void *data, int64_t count, DType dtype) override {
    checkCollectiveDType(dtype, "all-reduce");
    if (count < 0)
      throw Error("all-reduce of " + std::to_string(count) + " elements");
    const auto &posts = rendezvous_->meet(
        rank_, {"all-reduce", data, data, {count}, dtype, nullptr});
    std::vector<unsigned char> mean(static_cast<size_t>(count) *
                                    dtypeSize(dtype));
    meanInRankOrder(posts, 0, count, dtype, mean.data());
    finish(data, mean);
    return std::make_unique<DoneRequest>();
  }

  RequestPtr reduceScatterMean(const void *send, void *recv,
                               const std::vector<int64_t> &counts,
                               DType dtype) override {
    checkCollectiveDType(dtype, "reduce-scatter");
    checkCollectiveCounts(counts, size(), "reduce-scatter");
    const auto &posts = rendezvous_->meet(
        rank_, {"reduce-scatter", send, recv, counts, dtype, nullptr});
    int64_t offset = std::accumulate(counts.begin(), counts.begin() + rank_,
                                     int64_t{0});
    std::vector<unsigned char> mean(static_cast<size_t>(counts[rank_]) *
                                    dtypeSize(dtype));
    meanInRankOrder(posts, offset, counts[rank_], dtype, mean.data());
    finish(recv, mean);
    return std::make_unique<DoneRequest>();
  }

  RequestPtr allGather(const void *send, void *recv,
                       const std::vector<int64_t> &counts,
                       DType dtype) override {
    checkCollectiveDType(dtype, "all-gather");
    checkCollectiveCounts(counts, size(), "all-gather");
    const auto &posts = rendezvous_->meet(
        rank_, {"all-gather", send, recv, counts, dtype, nullptr});
    size_t bytes = dtypeSize(dtype);
    std::vector<unsigned char> gathered(
        static_cast<size_t>(std::accumulate(counts.begin(), counts.end(),
                                            int64_t{0})) *
        bytes);
    size_t at = 0;
    for (int r = 0; r < size(); ++r) {
      size_t part = static_cast<size_t>(counts[r]) * bytes;
      if (part)
        std::memcpy(gathered.data() + at, posts[r].send, part);
      at += part;
    }
    finish(recv, gathered);
    return std::make_unique<DoneRequest>();
  }

  void allGatherBytes(const void *send, size_t bytes, void *recv) override {
    allGatherBytesInProcess(*rendezvous_, rank_, send, bytes, recv);
  }
  [[noreturn]] void abort(int code) override {
    abortInProcess(*rendezvous_, rank_, code);
  }

private:
  /// Once no rank reads this one's memory any more, its output.
  void finish(void *out, const std::vector<unsigned char> &result) {
    rendezvous_->leave(rank_);
    if (!result.empty())
      std::memcpy(out, result.data(), result.size());
  }

  std::shared_ptr<Rendezvous> rendezvous_;
  int rank_;
};

} // namespace

std::vector<std::unique_ptr<Communicator>>
makeInProcessCommunicators(int size, std::chrono::milliseconds patience) {
  auto rendezvous = std::make_shared<Rendezvous>(size, patience);
  std::vector<std::unique_ptr<Communicator>> communicators;
  for (int r = 0; r < size; ++r)
    communicators.push_back(
        std::make_unique<InProcessCommunicator>(rendezvous, r));
  return communicators;
}

} // namespace optgen::runtime
