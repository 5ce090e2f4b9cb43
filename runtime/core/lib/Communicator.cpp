//===- Communicator.cpp - The single-rank communicator --------------------===//

#include "optgen/runtime/Communicator.h"

#include "optgen/runtime/Error.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace optgen::runtime {

Request::~Request() = default;
Communicator::~Communicator() = default;

void Communicator::bindStream(void *stream) {
  if (stream)
    throw Error("this communicator works on the host: it takes no stream");
}

std::unique_ptr<Communicator> Communicator::split(int, int) {
  throw Error("this communicator has no groups: it cannot run a step with "
              "shard groups");
}

std::string Communicator::asyncError() { return {}; }

void Communicator::allGatherBytes(const void *send, size_t bytes,
                                  void *recv) {
  int ranks = size();
  if (ranks == 1) {
    if (bytes && send != recv)
      std::memcpy(recv, send, bytes);
    return;
  }
  // Whole words of F32, moved as they are.
  size_t words = (bytes + sizeof(float) - 1) / sizeof(float);
  std::vector<float> mine(words, 0.0f), all(words * ranks, 0.0f);
  if (bytes)
    std::memcpy(mine.data(), send, bytes);
  allGather(mine.data(), all.data(),
            std::vector<int64_t>(static_cast<size_t>(ranks),
                                 static_cast<int64_t>(words)),
            DType::F32)
      ->wait();
  for (int r = 0; r < ranks; ++r)
    if (bytes)
      std::memcpy(static_cast<unsigned char *>(recv) + r * bytes,
                  all.data() + r * words, bytes);
}

void Communicator::abort(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(code);
}

void checkCollectiveCounts(const std::vector<int64_t> &counts, int ranks,
                           const char *what) {
  if (static_cast<int>(counts.size()) != ranks)
    throw Error(std::string(what) + " with " + std::to_string(counts.size()) +
                " counts on " + std::to_string(ranks) +
                " ranks: one count per rank");
  for (int64_t count : counts)
    if (count < 0)
      throw Error(std::string(what) + " of " + std::to_string(count) +
                  " elements on a rank");
}

void checkCollectiveDType(DType dtype, const char *what) {
  if (dtype != DType::F32 && dtype != DType::BF16)
    throw Error(std::string(what) + " of " + std::string(dtypeName(dtype)) +
                ": collectives carry F32 or BF16");
}

namespace {

struct DoneRequest : Request {
  void wait() override {}
};

struct ChainedRequest : Request {
  ChainedRequest(RequestPtr first, Communicator &communicator, void *data,
                 int64_t count, DType dtype)
      : first(std::move(first)), communicator(communicator), data(data),
        count(count), dtype(dtype) {}
  ~ChainedRequest() override {
    // Unwaited: complete both, as every Request does; errors are lost.
    try {
      wait();
    } catch (...) {
    }
  }
  void wait() override {
    if (first) {
      first->wait();
      first.reset();
      second = communicator.allReduceMean(data, count, dtype);
    }
    if (second)
      second->wait();
  }
  RequestPtr first, second;
  Communicator &communicator;
  void *data;
  int64_t count;
  DType dtype;
};

class SingleRankCommunicator : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }

  RequestPtr allReduceMean(void *, int64_t count, DType dtype) override {
    checkCollectiveDType(dtype, "all-reduce");
    if (count < 0)
      throw Error("all-reduce of " + std::to_string(count) + " elements");
    return std::make_unique<DoneRequest>();
  }

  RequestPtr reduceScatterMean(const void *send, void *recv,
                               const std::vector<int64_t> &counts,
                               DType dtype) override {
    checkCollectiveDType(dtype, "reduce-scatter");
    checkCounts(counts);
    copy(send, recv, counts[0], dtype);
    return std::make_unique<DoneRequest>();
  }

  RequestPtr allGather(const void *send, void *recv,
                       const std::vector<int64_t> &counts,
                       DType dtype) override {
    checkCollectiveDType(dtype, "all-gather");
    checkCounts(counts);
    copy(send, recv, counts[0], dtype);
    return std::make_unique<DoneRequest>();
  }

  std::unique_ptr<Communicator> split(int, int) override {
    return std::make_unique<SingleRankCommunicator>();
  }

private:
  static void checkCounts(const std::vector<int64_t> &counts) {
    if (counts.size() != 1 || counts[0] < 0)
      throw Error("a single rank takes one non-negative count, not " +
                  std::to_string(counts.size()));
  }

  static void copy(const void *send, void *recv, int64_t count, DType dtype) {
    if (send != recv && count > 0)
      std::memcpy(recv, send, static_cast<size_t>(count) * dtypeSize(dtype));
  }
};

} // namespace

RequestPtr thenAllReduceMean(RequestPtr first, Communicator &communicator,
                             void *data, int64_t count, DType dtype) {
  return std::make_unique<ChainedRequest>(std::move(first), communicator, data,
                                          count, dtype);
}

std::unique_ptr<Communicator> makeSingleRankCommunicator() {
  return std::make_unique<SingleRankCommunicator>();
}

} // namespace optgen::runtime
