//===- MpiExecutorTest.cpp - The distributed step on 1..N ranks -----------===//
//
// Run under mpirun: each rank steps a ZeRO-2 optimizer over MPI (small,
// flat and owned units) and, alone, the same optimizer on its own; the
// parameters must end with the same bits, for F32 and for BF16 parameters
// (whose collectives carry bf16). Each rank's gradient differs, by
// multiples of 1/16 that cancel over the ranks, so that every sum is exact
// and the mean is the gradient the lone optimizer gets. Prints "N passed, M
// failed" on rank 0 and exits non-zero if any rank failed.
//
//===----------------------------------------------------------------------===//

#include "MpiTestReport.h"

#include "optgen/runtime/MpiCommunicator.h"
#include "optgen/runtime/Optimizer.h"

#include <string>
#include <vector>

using namespace optgen::runtime;
using optgen::runtime::test::expect;
using optgen::runtime::test::report;

namespace {

/// p -= lr * (m = momentum * m + g), per element.
void stepSgd(const RuleCall &call) {
  float lr = static_cast<float>(call.hypers[0]);
  for (int64_t i = 0; i < call.rows * call.cols; ++i) {
    call.states[0][i] = 0.5f * call.states[0][i] + call.grad[i];
    call.param[i] -= lr * call.states[0][i];
  }
}

/// p -= lr * g g^T g, through the workspace.
void stepCubed(const RuleCall &call) {
  Tile g{const_cast<float *>(call.grad), call.rows, call.cols};
  Tile square{call.workspace, call.rows, call.rows};
  Tile cubed{call.workspace + call.rows * call.rows, call.rows, call.cols};
  gemm(g, false, g, true, 1.0f, nullptr, 0.0f, false, square);
  gemm(square, false, g, false, 1.0f, nullptr, 0.0f, false, cubed);
  for (int64_t i = 0; i < cubed.size(); ++i)
    call.param[i] -= static_cast<float>(call.hypers[0]) * cubed.data[i];
}

int64_t workspaceCubed(const int64_t *shape, int) {
  return shape[0] * shape[0] + shape[0] * shape[1];
}

void statesLikeParam(const int64_t *shape, int rank, int64_t *rows,
                     int64_t *cols) {
  int64_t numel = 1;
  for (int d = 0; d < rank; ++d)
    numel *= shape[d];
  rows[0] = 1;
  cols[0] = numel;
}

void noStates(const int64_t *, int, int64_t *, int64_t *) {}

bool isMatrix(const int64_t *, int rank) { return rank == 2; }

OptimizerSpec spec() {
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
std::vector<Param> model(DType dtype) {
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
void setGrads(std::vector<Param> &params, DType dtype, int s, float offset) {
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

void addAll(Optimizer &opt, std::vector<Param> &params, DType dtype) {
  for (Param &p : params)
    opt.addParameter(p.name, {p.value.data(), dtype, p.shape},
                     {p.grad.data(), dtype, p.shape});
}

} // namespace

int main() {
  std::unique_ptr<Communicator> comm = makeMpiCommunicator();
  int rank = comm->rank(), size = comm->size();
  for (DType dtype : {DType::F32, DType::BF16}) {
    std::vector<Param> shared = model(dtype), alone = model(dtype);
    Optimizer distributed(spec()), reference(spec());
    distributed.setCommunicator(makeMpiCommunicator());
    addAll(distributed, shared, dtype);
    addAll(reference, alone, dtype);
    distributed.finalize();
    reference.finalize();
    std::string name = std::string(dtypeName(dtype));
    std::string kinds;
    for (const StepUnit &unit : distributed.schedule().units)
      kinds += std::string(unitKindName(unit.kind)) + " ";
    expect(kinds == (size == 1 ? "local local local local local "
                               : "small flat owned owned "),
           "the units (" + name + "): " + kinds, rank);
    for (int s = 0; s < 3; ++s) {
      setGrads(shared, dtype, s, (rank - (size - 1) / 2.0f) / 16.0f);
      setGrads(alone, dtype, s, 0.0f);
      distributed.step();
      reference.step();
    }
    for (size_t p = 0; p < shared.size(); ++p)
      expect(shared[p].value == alone[p].value,
             "'" + shared[p].name + "' (" + name + ") as on one rank", rank);
  }

  return report(rank);
}
