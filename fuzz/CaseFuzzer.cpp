//===- CaseFuzzer.cpp - Case replay on arbitrary case files ---------------===//
//
// libFuzzer target: any bytes as an `optgen run` case file, replayed on a
// small optimizer (FuzzOptimizer.h) as `optgen run` replays one: the case
// reader, binding, hyperparameters and the steps. A malformed case must be
// an error (runCase returns 1), never a crash.
//
//===----------------------------------------------------------------------===//

#include "FuzzOptimizer.h"

#include "optgen/runtime/CaseReplay.h"

#include <cstddef>
#include <cstdint>
#include <memory>

using namespace optgen::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  CaseOptions options;
  options.casePath = optgen::fuzz::scratchFile(data, size);
  options.target = "cpu";
  runCase(
      [] {
        return std::make_unique<OptimizerStepper>(
            std::make_unique<Optimizer>(optgen::fuzz::fuzzSpec()));
      },
      options);
  return 0;
}
