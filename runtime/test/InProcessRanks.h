//===- InProcessRanks.h - Ranks as threads of one test --------*- C++ -*-===//
//
// The tests that step N ranks in one process (the in-process communicator,
// the C ABI's distributed step): a thread per rank, each with its own
// communicator, and each rank's error collected instead of ending the test.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_TEST_INPROCESSRANKS_H
#define OPTGEN_RUNTIME_TEST_INPROCESSRANKS_H

#include "optgen/runtime/InProcessCommunicator.h"

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace optgen::runtime::test {

/// Runs body(rank, communicator) on a thread per rank; returns each rank's
/// error message ("" when it had none). A rank that waits longer than
/// `patience` for the others fails with the communicator's error.
inline std::vector<std::string>
onRanks(int size, const std::function<void(int, Communicator &)> &body,
        std::chrono::milliseconds patience = std::chrono::milliseconds(20000)) {
  std::vector<std::unique_ptr<Communicator>> communicators =
      makeInProcessCommunicators(size, patience);
  std::vector<std::string> errors(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] {
      try {
        body(r, *communicators[r]);
      } catch (const std::exception &error) {
        errors[r] = error.what();
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  return errors;
}

} // namespace optgen::runtime::test

#endif // OPTGEN_RUNTIME_TEST_INPROCESSRANKS_H
