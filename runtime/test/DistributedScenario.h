//===- DistributedScenario.h - One model stepped on N ranks and on one -*- C++ -*-===//
//
// What the distributed-step tests share (MPI ranks as processes, in-process
// ranks as threads): an optimizer with small, flat and owned units, its
// model in F32 or BF16, and gradients that differ per rank by multiples of
// 1/16 that cancel over the ranks, so that every sum is exact and the mean
// is the gradient a lone optimizer gets: N ranks must end with its bits.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_TEST_DISTRIBUTEDSCENARIO_H
#define OPTGEN_RUNTIME_TEST_DISTRIBUTEDSCENARIO_H

#include "optgen/runtime/Optimizer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace optgen::runtime::test {

/// p -= lr * (m = momentum * m + g), per element.
inline void stepSgd(const RuleCall &call) {
  float lr = static_cast<float>(call.hypers[0]);
  for (int64_t i = 0; i < call.rows * call.cols; ++i) {
    call.states[0][i] = 0.5f * call.states[0][i] + call.grad[i];
    call.param[i] -= lr * call.states[0][i];
  }
}

/// p -= lr * g g^T g, through the workspace.
inline void stepCubed(const RuleCall &call) {
  Tile g{const_cast<float *>(call.grad), call.rows, call.cols};
  Tile square{call.workspace, call.rows, call.rows};
  Tile cubed{call.workspace + call.rows * call.rows, call.rows, call.cols};
  gemm(g, false, g, true, 1.0f, nullptr, 0.0f, false, square);
  gemm(square, false, g, false, 1.0f, nullptr, 0.0f, false, cubed);
  for (int64_t i = 0; i < cubed.size(); ++i)
    call.param[i] -= static_cast<float>(call.hypers[0]) * cubed.data[i];
}

inline int64_t workspaceCubed(const int64_t *shape, int) {
  return shape[0] * shape[0] + shape[0] * shape[1];
}

inline void statesLikeParam(const int64_t *shape, int rank, int64_t *rows,
                     int64_t *cols) {
  int64_t numel = 1;
  for (int d = 0; d < rank; ++d)
    numel *= shape[d];
  rows[0] = 1;
  cols[0] = numel;
}

inline void noStates(const int64_t *, int, int64_t *, int64_t *) {}

inline bool isMatrix(const int64_t *, int rank) { return rank == 2; }

inline OptimizerSpec spec() {
  OptimizerSpec spec;
  spec.name = "mixed";
  spec.rules.push_back({"sgd",
                        -1,
                        {{"lr", 1, 0, false, true, {0.25}}},
                        {"m"},
                        statesLikeParam,
                        stepSgd,
                        true});
  spec.rules.push_back({"cubed",
                        2,
                        {{"lr", 1, 0, false, true, {0.001}}},
                        {},
                        noStates,
                        stepCubed,
                        false,
                        workspaceCubed});
  spec.groups.push_back({"matrices", 1, {"w*"}, isMatrix, {}});
  spec.groups.push_back({"rest", 0, {"*"}, nullptr, {}});
  spec.distribution = Distribution::Zero2;
  spec.smallNumel = 16;
  return spec;
}

struct Param {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<unsigned char> value, grad;
};

/// Five matrices of two shapes (owned), two vectors (flat, padded) and a
/// small one.
inline std::vector<Param> model(DType dtype) {
  std::vector<Param> params;
  auto add = [&](std::string name, std::vector<int64_t> shape) {
    int64_t numel = 1;
    for (int64_t d : shape)
      numel *= d;
    Param p{std::move(name), std::move(shape), {}, {}};
    p.value.resize(numel * dtypeSize(dtype));
    p.grad.resize(numel * dtypeSize(dtype));
    for (int64_t i = 0; i < numel; ++i) {
      float v = static_cast<float>((i * 7 + params.size()) % 23) / 8.0f - 1.0f;
      convertElements(&v, DType::F32, p.value.data() + i * dtypeSize(dtype),
                      dtype, 1);
    }
    params.push_back(std::move(p));
  };
  for (int k = 0; k < 5; ++k)
    add("w" + std::to_string(k), {8 + k % 2 * 4, 12});
  add("bias", {37});
  add("norm", {50});
  add("tiny", {3});
  return params;
}

/// Step `s`'s gradient of element i; `offset` is this rank's part, a
/// multiple of 1/16 that sums to zero over the ranks.
inline void setGrads(std::vector<Param> &params, DType dtype, int s, float offset) {
  for (size_t p = 0; p < params.size(); ++p) {
    int64_t numel =
        static_cast<int64_t>(params[p].grad.size() / dtypeSize(dtype));
    for (int64_t i = 0; i < numel; ++i) {
      float g = static_cast<float>((i * 5 + p * 3 + s) % 15) / 8.0f - 0.875f +
                (i % 3 == 0 ? offset : -offset);
      convertElements(&g, DType::F32,
                      params[p].grad.data() + i * dtypeSize(dtype), dtype, 1);
    }
  }
}

inline void addAll(Optimizer &opt, std::vector<Param> &params, DType dtype) {
  for (Param &p : params)
    opt.addParameter(p.name, {p.value.data(), dtype, p.shape},
                     {p.grad.data(), dtype, p.shape});
}


/// Rank `rank` of `size`'s offset of its gradients (setGrads).
inline float rankOffset(int rank, int size) {
  return (static_cast<float>(rank) - static_cast<float>(size - 1) / 2.0f) /
         16.0f;
}

/// The scenario with globals: the gradients' norm and largest magnitude
/// and the parameters' norm (partials: sum g^2, max |g|, sum p^2), the
/// norm scaling the elementwise rule's step and the parameters' the
/// matrices'. Every sum of the scenario is exact, as the gradients are.
inline void globalContribution(const float *param, const float *grad,
                               int64_t count, double *partials) {
  partials[0] = 0;
  partials[1] = -std::numeric_limits<double>::infinity();
  partials[2] = 0;
  for (int64_t i = 0; i < count; ++i) {
    partials[0] += static_cast<double>(grad[i]) * grad[i];
    partials[1] = std::max(partials[1], std::fabs(static_cast<double>(grad[i])));
    partials[2] += static_cast<double>(param[i]) * param[i];
  }
}

inline void finishGlobals(const double *partials, float *globals) {
  globals[0] = std::sqrt(static_cast<float>(partials[0]));
  globals[1] = static_cast<float>(partials[1]);
  globals[2] = std::sqrt(static_cast<float>(partials[2]));
}

/// stepSgd on g / (1 + norm) + peak / 64.
inline void stepClippedSgd(const RuleCall &call) {
  float scale = 1.0f / (1.0f + call.globals[0]);
  float lr = static_cast<float>(call.hypers[0]);
  for (int64_t i = 0; i < call.rows * call.cols; ++i) {
    call.states[0][i] = 0.5f * call.states[0][i] + call.grad[i] * scale +
                        call.globals[1] / 64.0f;
    call.param[i] -= lr * call.states[0][i];
  }
}

/// stepCubed with the learning rate over the parameters' norm.
inline void stepScaledCubed(const RuleCall &call) {
  stepCubed(call);
  for (int64_t i = 0; i < call.rows * call.cols; ++i)
    call.param[i] *= 1.0f - 0.001f / call.globals[2];
}

inline OptimizerSpec specWithGlobals() {
  OptimizerSpec withGlobals = spec();
  withGlobals.name = "mixed_globals";
  withGlobals.rules[0].step = stepClippedSgd;
  withGlobals.rules[1].step = stepScaledCubed;
  withGlobals.globals = {{"grad_norm", "grad_peak", "weight_norm"},
                         {PartialKind::Sum, PartialKind::Max, PartialKind::Sum},
                         globalContribution,
                         finishGlobals};
  return withGlobals;
}

/// The units a step of the scenario has on `size` ranks, by kind.
inline std::string expectedUnits(int size) {
  return size == 1 ? "local local local local local "
                   : "small flat owned owned ";
}

} // namespace optgen::runtime::test

#endif // OPTGEN_RUNTIME_TEST_DISTRIBUTEDSCENARIO_H
