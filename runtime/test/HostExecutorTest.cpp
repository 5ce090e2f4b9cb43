//===- HostExecutorTest.cpp - Buckets stepped as a batch ------------------===//
//
// A bucket of same-shape matrices is stepped in parallel across the batch,
// its state contiguous; the results must be the bits of stepping each
// matrix alone (as its own bucket, with threaded matrix products), and a
// checkpoint must not depend on the layout.
//
//===----------------------------------------------------------------------===//

#include "optgen/runtime/Optimizer.h"

#include <gtest/gtest.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include <atomic>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

using namespace optgen::runtime;

namespace {

std::atomic<int> callsInParallel{0};
/// Per OpenMP thread, the workspace its last call had.
std::vector<float *> workspaceOfThread(64, nullptr);

/// m = momentum * m + g; p -= lr * (m m^T m) / (1 + sum |m m^T m|): two
/// matrix products through the workspace, one state, a reduction.
void stepCubed(const RuleCall &call) {
#ifdef _OPENMP
  if (omp_in_parallel()) {
    ++callsInParallel;
    workspaceOfThread.at(omp_get_thread_num()) = call.workspace;
  }
#endif
  int64_t rows = call.rows, cols = call.cols;
  Tile m{call.states[0], rows, cols};
  for (int64_t i = 0; i < m.size(); ++i)
    m.data[i] = static_cast<float>(call.hypers[1]) * m.data[i] + call.grad[i];
  Tile square{call.workspace, rows, rows};
  Tile cubed{call.workspace + rows * rows, rows, cols};
  gemm(m, false, m, true, 1.0f, nullptr, 0.0f, false, square);
  gemm(square, false, m, false, 1.0f, nullptr, 0.0f, false, cubed);
  float sum = 0;
  for (int64_t i = 0; i < cubed.size(); ++i)
    sum += std::fabs(cubed.data[i]);
  float scale = static_cast<float>(call.hypers[0]) / (1.0f + sum);
  for (int64_t i = 0; i < cubed.size(); ++i)
    call.param[i] -= scale * cubed.data[i];
}

int64_t workspaceCubed(const int64_t *shape, int) {
  return shape[0] * shape[0] + shape[0] * shape[1];
}

void statesCubed(const int64_t *shape, int, int64_t *rows, int64_t *cols) {
  rows[0] = shape[0];
  cols[0] = shape[1];
}

bool always(const int64_t *, int) { return true; }

OptimizerSpec cubedSpec() {
  OptimizerSpec spec;
  spec.name = "cubed";
  spec.rules.push_back({"cubed",
                        2,
                        {{"lr", 1, 0, false, true, {0.1}},
                         {"momentum", 1, 1, false, true, {0.9}}},
                        {"m"},
                        statesCubed,
                        stepCubed,
                        false,
                        workspaceCubed});
  spec.groups.push_back({"matrices", 0, {"*"}, always, {}});
  spec.distribution = Distribution::None;
  spec.smallNumel = 0;
  return spec;
}

constexpr int kMatrices = 4;
constexpr int64_t kRows = 96, kCols = 64;

struct Matrices {
  std::vector<std::vector<float>> params, grads;
  explicit Matrices(int seed) {
    for (int k = 0; k < kMatrices; ++k) {
      std::vector<float> p, g;
      for (int64_t i = 0; i < kRows * kCols; ++i) {
        p.push_back(std::sin(0.37f * (i + k * 101 + seed)));
        g.push_back(std::cos(0.91f * (i * 7 + k)));
      }
      params.push_back(std::move(p));
      grads.push_back(std::move(g));
    }
  }
  /// All in the group's one bucket, or each alone in a group of its own.
  void addTo(Optimizer &opt, bool alone) {
    for (int k = 0; k < kMatrices; ++k) {
      std::string name = "w" + std::to_string(k);
      TensorView p{params[k].data(), DType::F32, {kRows, kCols}};
      TensorView g{grads[k].data(), DType::F32, {kRows, kCols}};
      if (alone) {
        opt.addGroup("alone" + std::to_string(k), "cubed");
        opt.addParameter(name, p, g, "alone" + std::to_string(k));
      } else {
        opt.addParameter(name, p, g);
      }
    }
  }
};

TEST(HostExecutorTest, ABucketSteppedAsABatchGivesTheBitsOfOneAtATime) {
  Matrices batched(0), alone(0);
  Optimizer batch(cubedSpec()), single(cubedSpec());
  batched.addTo(batch, false);
  alone.addTo(single, true);
  batch.finalize();
  single.finalize();
  ASSERT_EQ(batch.schedule().units.size(), 1u);
  ASSERT_EQ(single.schedule().units.size(), static_cast<size_t>(kMatrices));
  EXPECT_EQ(batch.stateBytes(), single.stateBytes());

  callsInParallel = 0;
  for (int step = 0; step < 3; ++step) {
    batch.step();
    single.step();
  }
  for (int k = 0; k < kMatrices; ++k)
    EXPECT_EQ(batched.params[k], alone.params[k]) << "matrix " << k;
#ifdef _OPENMP
  if (omp_get_max_threads() > 1) {
    EXPECT_EQ(callsInParallel, 3 * kMatrices);
    // Calls that may run at once have workspaces of their own: thread t's
    // is the t-th of the workspaces, one call's worth each.
    int64_t size = kRows * kRows + kRows * kCols;
    for (size_t t = 0; t < workspaceOfThread.size(); ++t)
      for (size_t u = 0; u < workspaceOfThread.size(); ++u)
        if (workspaceOfThread[t] && workspaceOfThread[u]) {
          EXPECT_EQ(workspaceOfThread[t] - workspaceOfThread[u],
                    (static_cast<int64_t>(t) - static_cast<int64_t>(u)) * size);
        }
  }
#endif
}

TEST(HostExecutorTest, CheckpointsDoNotDependOnTheLayout) {
  std::string path = testing::TempDir() + "/batched_state.safetensors";
  Matrices batched(1), alone(1);
  Optimizer batch(cubedSpec());
  batched.addTo(batch, false);
  batch.finalize();
  batch.step();
  batch.saveState(path);

  alone.params = batched.params;
  Optimizer single(cubedSpec());
  alone.addTo(single, true);
  single.finalize();
  single.loadState(path);
  EXPECT_EQ(single.stepCount("w2"), 1);
  batch.step();
  single.step();
  for (int k = 0; k < kMatrices; ++k)
    EXPECT_EQ(batched.params[k], alone.params[k]) << "matrix " << k;
  std::remove(path.c_str());
}

} // namespace
