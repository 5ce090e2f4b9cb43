//===- CallbackCommunicator.cpp - Collectives through C callbacks ---------===//

#include "optgen/runtime/CallbackCommunicator.h"

#include "optgen/runtime/Error.h"

#include <cstdio>
#include <string>
#include <vector>

namespace optgen::runtime {

namespace {

/// Throws the table's error for a callback that returned `status`.
void check(const optgen_collectives &table, int status, const char *what) {
  if (status == 0)
    return;
  const char *message = table.last_error ? table.last_error(table.context)
                                         : nullptr;
  throw Error(std::string(what) + " failed: " +
              (message && *message ? message : "(the caller gave no reason)"));
}

class CallbackRequest final : public Request {
public:
  CallbackRequest(const optgen_collectives &table, void *request,
                  const char *what)
      : table(table), request(request), what(what) {}
  ~CallbackRequest() override {
    // Unwaited: completed first (its buffers must outlive it); an error
    // here has nobody to go to but the log.
    if (request && table.wait(table.context, request) != 0)
      std::fprintf(stderr, "optgen: error: %s failed while abandoned\n", what);
  }
  void wait() override {
    if (!request)
      return;
    void *pending = request;
    request = nullptr;
    check(table, table.wait(table.context, pending), what);
  }

private:
  optgen_collectives table;
  void *request;
  const char *what;
};

class CallbackCommunicator final : public Communicator {
public:
  explicit CallbackCommunicator(const optgen_collectives &table)
      : table(table) {}
  int rank() const override { return table.rank; }
  int size() const override { return table.size; }

  RequestPtr allReduceMean(void *data, int64_t count, DType dtype) override {
    checkCollectiveDType(dtype, "allReduceMean");
    void *request = nullptr;
    check(table,
          table.all_reduce_mean(table.context, data, count,
                                static_cast<int32_t>(dtype), &request),
          "the caller's all_reduce_mean");
    return std::make_unique<CallbackRequest>(table, request,
                                             "the caller's all_reduce_mean");
  }

  RequestPtr reduceScatterMean(const void *send, void *recv,
                               const std::vector<int64_t> &counts,
                               DType dtype) override {
    checkCollectiveDType(dtype, "reduceScatterMean");
    checkCollectiveCounts(counts, size(), "reduceScatterMean");
    void *request = nullptr;
    check(table,
          table.reduce_scatter_mean(table.context, send, recv, counts.data(),
                                    static_cast<int32_t>(dtype), &request),
          "the caller's reduce_scatter_mean");
    return std::make_unique<CallbackRequest>(
        table, request, "the caller's reduce_scatter_mean");
  }

  RequestPtr allGather(const void *send, void *recv,
                       const std::vector<int64_t> &counts,
                       DType dtype) override {
    checkCollectiveDType(dtype, "allGather");
    checkCollectiveCounts(counts, size(), "allGather");
    void *request = nullptr;
    check(table,
          table.all_gather(table.context, send, recv, counts.data(),
                           static_cast<int32_t>(dtype), &request),
          "the caller's all_gather");
    return std::make_unique<CallbackRequest>(table, request,
                                             "the caller's all_gather");
  }

  [[noreturn]] void abort(int code) override {
    if (table.abort)
      table.abort(table.context, code);
    Communicator::abort(code);
  }

private:
  optgen_collectives table;
};

} // namespace

std::unique_ptr<Communicator>
makeCallbackCommunicator(const optgen_collectives &collectives) {
  if (!collectives.all_reduce_mean || !collectives.reduce_scatter_mean ||
      !collectives.all_gather || !collectives.wait || !collectives.last_error)
    throw Error("the collectives table lacks a function (all_reduce_mean, "
                "reduce_scatter_mean, all_gather, wait and last_error are "
                "needed)");
  if (collectives.size < 1 || collectives.rank < 0 ||
      collectives.rank >= collectives.size)
    throw Error("the collectives table says rank " +
                std::to_string(collectives.rank) + " of " +
                std::to_string(collectives.size));
  return std::make_unique<CallbackCommunicator>(collectives);
}

} // namespace optgen::runtime
