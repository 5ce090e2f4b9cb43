//===- OptimizerTest.cpp - The optimizer base of generated code -----------===//
//
// An optimizer described by hand (one SGD rule with momentum, as generated
// code would describe it), checked against the same math written here.
//
//===----------------------------------------------------------------------===//

#include "optgen/runtime/Optimizer.h"

#include "optgen/runtime/Error.h"
#include "optgen/runtime/Float16.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

using namespace optgen::runtime;

namespace {

/// p -= lr * (buf = momentum * buf + g), per element.
void stepSgd(const RuleCall &call) {
  float lr = static_cast<float>(call.hypers[0]);
  float momentum = static_cast<float>(call.hypers[1]);
  for (int64_t i = 0; i < call.rows * call.cols; ++i) {
    call.states[0][i] = momentum * call.states[0][i] + call.grad[i];
    call.param[i] -= lr * call.states[0][i];
  }
}

void statesSgd(const int64_t *shape, int rank, int64_t *rows, int64_t *cols) {
  int64_t numel = 1;
  for (int d = 0; d < rank; ++d)
    numel *= shape[d];
  rows[0] = rank == 2 ? shape[0] : 1;
  cols[0] = rank == 2 ? shape[1] : numel;
}

bool isMatrix(const int64_t *, int rank) { return rank == 2; }

OptimizerSpec sgdSpec() {
  OptimizerSpec spec;
  spec.name = "sgd";
  spec.rules.push_back({"sgd",
                        -1,
                        {{"lr", 1, false, false, {}},
                         {"momentum", 1, false, true, {0.5}}},
                        {"buf"},
                        statesSgd,
                        stepSgd});
  spec.groups.push_back({"matrices", 0, {"*.weight"}, isMatrix, {{"lr", {0.1}}}});
  spec.groups.push_back({"rest", 0, {"*"}, nullptr, {{"lr", {0.01}}}});
  spec.distribution = Distribution::None;
  spec.smallNumel = 0;
  return spec;
}

TensorView view(std::vector<float> &data, std::vector<int64_t> shape) {
  return {data.data(), DType::F32, std::move(shape)};
}

TEST(OptimizerTest, StepsEachParameterWithItsGroupsHyperparameters) {
  Optimizer opt(sgdSpec());
  std::vector<float> w = {1, 2, 3, 4}, dw = {1, 1, 1, 1};
  std::vector<float> b = {1, 2}, db = {2, 2};
  opt.addParameter("layer.weight", view(w, {2, 2}), view(dw, {2, 2}));
  opt.addParameter("layer.bias", view(b, {2}), view(db, {2}));
  opt.finalize();
  EXPECT_EQ(opt.groupOf("layer.weight"), "matrices");
  EXPECT_EQ(opt.groupOf("layer.bias"), "rest");
  opt.step();
  opt.step();
  // buf: 1, then 0.5 * 1 + 1 = 1.5; p -= lr * buf each step.
  EXPECT_FLOAT_EQ(w[0], 1 - 0.1f * 1 - 0.1f * 1.5f);
  EXPECT_FLOAT_EQ(b[0], 1 - 0.01f * 2 - 0.01f * 3);
  EXPECT_EQ(opt.stepCount("layer.bias"), 2);
  EXPECT_EQ(opt.stateBytes(), static_cast<int64_t>((4 + 2) * sizeof(float)));
}

TEST(OptimizerTest, HyperparametersChangeBetweenSteps) {
  Optimizer opt(sgdSpec());
  std::vector<float> w = {0}, dw = {1};
  opt.addParameter("x", view(w, {1}), view(dw, {1}));
  opt.finalize();
  EXPECT_DOUBLE_EQ(opt.hyper("rest", "momentum"), 0.5);
  opt.setHyper("rest", "lr", 1.0);
  opt.setHyper("rest", "momentum", 0.0);
  opt.step();
  EXPECT_FLOAT_EQ(w[0], -1.0f);
  EXPECT_THROW(opt.setHyper("rest", "beta", 1.0), Error);
  EXPECT_THROW(opt.setHyper("rest", "lr", std::vector<double>{1, 2}), Error);
  EXPECT_THROW(opt.setHyper("nope", "lr", 1.0), Error);
}

TEST(OptimizerTest, ExplicitGroupWinsOverPatterns) {
  Optimizer opt(sgdSpec());
  std::vector<float> w = {1, 1, 1, 1}, dw = {1, 1, 1, 1};
  opt.addParameter("odd.weight", view(w, {2, 2}), view(dw, {2, 2}), "rest");
  opt.finalize();
  EXPECT_EQ(opt.groupOf("odd.weight"), "rest");
}

TEST(OptimizerTest, ErrorsNameTheParameter) {
  OptimizerSpec spec = sgdSpec();
  spec.groups.pop_back(); // only *.weight matrices
  Optimizer opt(spec);
  std::vector<float> b = {1}, db = {1};
  opt.addParameter("bias", view(b, {1}), view(db, {1}));
  try {
    opt.finalize();
    FAIL() << "an unmatched parameter must be an error";
  } catch (const Error &error) {
    EXPECT_NE(std::string(error.what()).find("'bias'"), std::string::npos)
        << error.what();
  }
  Optimizer twice(sgdSpec());
  twice.addParameter("x", view(b, {1}), view(db, {1}));
  EXPECT_THROW(twice.addParameter("x", view(b, {1}), view(db, {1})), Error);
  std::vector<float> g2 = {1, 2};
  EXPECT_THROW(twice.addParameter("y", view(b, {1}), view(g2, {2})), Error);
}

TEST(OptimizerTest, Bf16ParametersStepInF32AndRoundBack) {
  Optimizer opt(sgdSpec());
  std::vector<uint16_t> p = {toBF16Bits(1.0f)}, g = {toBF16Bits(1.0f)};
  opt.addParameter("x", {p.data(), DType::BF16, {1}},
                   {g.data(), DType::BF16, {1}});
  opt.setHyper("rest", "lr", 0.001);
  opt.finalize();
  opt.step();
  EXPECT_EQ(fromBF16Bits(p[0]), roundToBF16(1.0f - 0.001f));
}

TEST(OptimizerTest, CheckpointsRoundTrip) {
  std::string path = testing::TempDir() + "/optimizer_state.safetensors";
  std::vector<float> w = {1, 2}, dw = {1, -1};
  Optimizer first(sgdSpec());
  first.addParameter("w", view(w, {2}), view(dw, {2}));
  first.finalize();
  first.step();
  first.saveState(path);

  std::vector<float> w2 = w;
  Optimizer second(sgdSpec());
  second.addParameter("w", view(w2, {2}), view(dw, {2}));
  second.finalize();
  second.loadState(path);
  EXPECT_EQ(second.stepCount("w"), 1);
  first.step();
  second.step();
  EXPECT_EQ(w, w2);

  std::vector<float> other = {1, 2, 3}, dother = {0, 0, 0};
  Optimizer third(sgdSpec());
  third.addParameter("w", view(other, {3}), view(dother, {3}));
  third.finalize();
  EXPECT_THROW(third.loadState(path), Error);
  std::remove(path.c_str());
}

TEST(OptimizerTest, PlannedParametersAreExactlyThoseCompiledFor) {
  OptimizerSpec spec = sgdSpec();
  spec.plannedParams.push_back({"a.weight", {2, 2}, 0, -1});
  std::vector<float> w = {1, 1, 1, 1}, dw = {0, 0, 0, 0};
  {
    Optimizer opt(spec);
    opt.addParameter("a.weight", view(w, {2, 2}), view(dw, {2, 2}));
    opt.finalize();
    EXPECT_EQ(opt.groupOf("a.weight"), "matrices");
  }
  {
    Optimizer opt(spec);
    opt.addParameter("a.weight", view(w, {4}), view(dw, {4}));
    EXPECT_THROW(opt.finalize(), Error);
  }
  {
    Optimizer opt(spec);
    EXPECT_THROW(opt.finalize(), Error); // a.weight never registered
  }
}

} // namespace
