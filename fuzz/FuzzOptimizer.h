//===- FuzzOptimizer.h - A small optimizer for the readers' fuzzers -*- C++ -*-===//
//
// What the case and checkpoint fuzzers replay and load into: an optimizer
// of two host rules (momentum SGD on any parameter, a row-normalising one
// on matrices, with a workspace), so that reading a file reaches binding,
// hyperparameters, states of two shapes and stepping. And the fuzzers'
// scratch file: an input is written to a file of the process's own, as the
// readers read files.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_FUZZ_FUZZOPTIMIZER_H
#define OPTGEN_FUZZ_FUZZOPTIMIZER_H

#include "optgen/runtime/Optimizer.h"

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

namespace optgen::fuzz {

using namespace optgen::runtime;

/// m = momentum * m + g; p -= lr * m.
inline void stepMomentum(const RuleCall &call) {
  float lr = static_cast<float>(call.hypers[0]);
  float momentum = static_cast<float>(call.hypers[1]);
  for (int64_t i = 0; i < call.rows * call.cols; ++i) {
    call.states[0][i] = momentum * call.states[0][i] + call.grad[i];
    call.param[i] -= lr * call.states[0][i];
  }
}

/// Each row of g scaled to unit norm (in the workspace), its second moment
/// per row kept: p -= lr * g / |g_row| / sqrt(v_row + eps).
inline void stepRows(const RuleCall &call) {
  float lr = static_cast<float>(call.hypers[0]);
  for (int64_t r = 0; r < call.rows; ++r) {
    double norm = 0.0;
    for (int64_t c = 0; c < call.cols; ++c)
      norm += static_cast<double>(call.grad[r * call.cols + c]) *
              call.grad[r * call.cols + c];
    float scale = 1.0f / static_cast<float>(std::sqrt(norm) + 1e-6);
    call.states[0][r] = 0.9f * call.states[0][r] + 0.1f * static_cast<float>(norm);
    for (int64_t c = 0; c < call.cols; ++c)
      call.workspace[c] = call.grad[r * call.cols + c] * scale;
    for (int64_t c = 0; c < call.cols; ++c)
      call.param[r * call.cols + c] -=
          lr * call.workspace[c] / std::sqrt(call.states[0][r] + 1e-8f);
  }
}

inline void likeParam(const int64_t *shape, int rank, int64_t *rows,
                      int64_t *cols) {
  int64_t numel = 1;
  for (int d = 0; d < rank; ++d)
    numel *= shape[d];
  rows[0] = 1;
  cols[0] = numel;
}

inline void perRow(const int64_t *shape, int, int64_t *rows, int64_t *cols) {
  rows[0] = shape[0];
  cols[0] = 1;
}

inline int64_t rowWorkspace(const int64_t *shape, int) { return shape[1]; }

inline bool isMatrix(const int64_t *, int rank) { return rank == 2; }

inline OptimizerSpec fuzzSpec() {
  OptimizerSpec spec;
  spec.name = "fuzz";
  spec.rules.push_back({"momentum",
                        -1,
                        {{"lr", 1, 0, false, true, {0.01}},
                         {"momentum", 1, 1, false, true, {0.9}}},
                        {"m"},
                        likeParam,
                        stepMomentum,
                        true});
  spec.rules.push_back({"rows",
                        2,
                        {{"lr", 1, 0, false, true, {0.02}}},
                        {"v"},
                        perRow,
                        stepRows,
                        false,
                        rowWorkspace});
  spec.groups.push_back({"matrices", 1, {"w*"}, isMatrix, {}});
  spec.groups.push_back({"rest", 0, {"*"}, nullptr, {}});
  return spec;
}

/// `data` written to this process's scratch file, whose path it returns.
inline std::string scratchFile(const uint8_t *data, size_t size) {
  static const std::string path =
      "/tmp/optgen-fuzz-" + std::to_string(getpid()) + ".safetensors";
  FILE *file = std::fopen(path.c_str(), "wb");
  if (!file)
    return path;
  if (size)
    std::fwrite(data, 1, size, file);
  std::fclose(file);
  return path;
}

} // namespace optgen::fuzz

#endif // OPTGEN_FUZZ_FUZZOPTIMIZER_H
