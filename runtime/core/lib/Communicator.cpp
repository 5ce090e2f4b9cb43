//===- Communicator.cpp - The single-rank communicator --------------------===//

#include "optgen/runtime/Communicator.h"

#include "optgen/runtime/Error.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace optgen::runtime {

Request::~Request() = default;
Communicator::~Communicator() = default;

namespace {

struct DoneRequest : Request {
  void wait() override {}
};

class SingleRankCommunicator : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }

  RequestPtr allReduceMean(float *, int64_t) override {
    return std::make_unique<DoneRequest>();
  }

  RequestPtr reduceScatterMean(const float *send, float *recv,
                               const std::vector<int64_t> &counts) override {
    checkCounts(counts);
    std::copy(send, send + counts[0], recv);
    return std::make_unique<DoneRequest>();
  }

  RequestPtr allGather(const float *send, float *recv,
                       const std::vector<int64_t> &counts) override {
    checkCounts(counts);
    if (send != recv)
      std::copy(send, send + counts[0], recv);
    return std::make_unique<DoneRequest>();
  }

private:
  static void checkCounts(const std::vector<int64_t> &counts) {
    if (counts.size() != 1 || counts[0] < 0)
      throw Error("a single rank takes one non-negative count, not " +
                  std::to_string(counts.size()));
  }
};

} // namespace

std::unique_ptr<Communicator> makeSingleRankCommunicator() {
  return std::make_unique<SingleRankCommunicator>();
}

} // namespace optgen::runtime
