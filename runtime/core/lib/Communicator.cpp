//===- Communicator.cpp - The single-rank communicator --------------------===//

#include "optgen/runtime/Communicator.h"

#include "optgen/runtime/Error.h"

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
