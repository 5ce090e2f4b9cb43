//===- CheckpointFuzzer.cpp - Checkpoint loading on arbitrary files -------===//
//
// libFuzzer target: any bytes as an optimizer checkpoint, loaded into a
// finalized optimizer (FuzzOptimizer.h) that has stepped once. A file that
// is malformed or not this optimizer's must be refused with an Error,
// never a crash; a refused load leaves the state as it was (checked: the
// state saved before and after a failed load is the same file).
//
// With OPTGEN_FUZZ_SEED=PATH set, it writes that optimizer's own
// checkpoint to PATH first: a seed the corpus starts from.
//
//===----------------------------------------------------------------------===//

#include "FuzzOptimizer.h"

#include "optgen/runtime/Error.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

using namespace optgen::runtime;

namespace {

/// The model: a bucket of two matrices, a lone matrix, a vector, a scalar.
struct Model {
  std::vector<std::string> names = {"w0", "w1", "w2", "bias", "scale"};
  std::vector<std::vector<int64_t>> shapes = {{4, 6}, {4, 6}, {3, 5}, {7}, {}};
  std::vector<std::vector<float>> params, grads;
  std::unique_ptr<Optimizer> optimizer;

  Model() : optimizer(std::make_unique<Optimizer>(optgen::fuzz::fuzzSpec())) {
    for (size_t t = 0; t < names.size(); ++t) {
      int64_t numel = 1;
      for (int64_t d : shapes[t])
        numel *= d;
      params.emplace_back(static_cast<size_t>(numel), 0.5f);
      grads.emplace_back(static_cast<size_t>(numel), 0.25f);
      optimizer->addParameter(names[t],
                              {params[t].data(), DType::F32, shapes[t]},
                              {grads[t].data(), DType::F32, shapes[t]});
    }
    optimizer->finalize();
    optimizer->step();
  }
};

std::vector<unsigned char> readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  if (const char *seed = std::getenv("OPTGEN_FUZZ_SEED"))
    Model().optimizer->saveState(seed);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static Model model;
  static const std::string before =
      "/tmp/optgen-fuzz-" + std::to_string(getpid()) + "-before.safetensors";
  std::string path = optgen::fuzz::scratchFile(data, size);
  model.optimizer->saveState(before);
  try {
    model.optimizer->loadState(path);
  } catch (const Error &) {
    // Refused: nothing of it may have reached the state.
    std::string after = before + ".after";
    model.optimizer->saveState(after);
    if (readAll(before) != readAll(after))
      std::abort();
  }
  return 0;
}
