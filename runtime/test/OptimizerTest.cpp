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

#include <algorithm>
#include <cmath>
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
  spec.rules.push_back(
      {"sgd",
       -1,
       {{"lr", 1, 0, false, false, {}}, {"momentum", 1, 1, false, true, {0.5}}},
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

/// The same SGD reading its hyperparameters where the table says: momentum
/// first, lr after a gap.
void stepSgdSwapped(const RuleCall &call) {
  float lr = static_cast<float>(call.hypers[3]);
  float momentum = static_cast<float>(call.hypers[0]);
  for (int64_t i = 0; i < call.rows * call.cols; ++i) {
    call.states[0][i] = momentum * call.states[0][i] + call.grad[i];
    call.param[i] -= lr * call.states[0][i];
  }
}

TEST(OptimizerTest, HyperparametersSitWhereTheTableSays) {
  OptimizerSpec spec = sgdSpec();
  spec.rules[0].hypers = {{"lr", 1, 3, false, false, {}},
                          {"momentum", 1, 0, false, true, {0.25}}};
  spec.rules[0].step = stepSgdSwapped;
  Optimizer opt(spec);
  std::vector<float> w = {0}, dw = {1};
  opt.addParameter("x", view(w, {1}), view(dw, {1}));
  opt.finalize();
  opt.setHyper("rest", "lr", 2.0);
  opt.step(); // buf = 1
  opt.step(); // buf = 0.25 + 1
  EXPECT_FLOAT_EQ(w[0], -2.0f * 1 - 2.0f * 1.25f);
  EXPECT_DOUBLE_EQ(opt.hyper("rest", "momentum"), 0.25);

  OptimizerSpec overlapping = sgdSpec();
  overlapping.rules[0].hypers = {{"lr", 2, 0, false, true, {1, 2}},
                                 {"momentum", 1, 1, false, true, {0.5}}};
  try {
    Optimizer bad(overlapping);
    FAIL() << "overlapping hyperparameters must be an error";
  } catch (const Error &error) {
    EXPECT_NE(std::string(error.what()).find("'lr' and 'momentum' overlap"),
              std::string::npos)
        << error.what();
  }
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

namespace {

/// A step compiled by hand for sgdSpec's compiledParams() on one rank:
/// what generated code prints for `--shapes ... --world-size 1` of a
/// distributed spec, every kind of unit included.
int compiledSteps = 0;

void compiledStep(Executor &x) {
  ++compiledSteps;
  Token t0 = x.launchAllReduce(0);
  Token t1 = x.launchReduceScatter(1);
  Token t2 = x.launchReduceScatter(2);
  x.wait(t0);
  x.compute(0);
  x.wait(t1);
  x.compute(1);
  Token t3 = x.launchAllGather(1);
  x.wait(t2);
  x.compute(2);
  Token t4 = x.launchAllGather(2);
  x.wait(t3);
  x.wait(t4);
}

OptimizerSpec compiledSpec(int worldSize = 1,
                           void (*step)(Executor &) = compiledStep) {
  OptimizerSpec spec = sgdSpec();
  spec.rules[0].elementwise = true;
  spec.plannedParams = {{"a.weight", {4, 4}, 0, -1},
                        {"b.weight", {4, 4}, 0, -1},
                        {"bias", {40}, 1, -1},
                        {"tiny", {3}, 1, -1}};
  spec.compiledSchedule = CompiledSchedule{
      worldSize,
      {{UnitKind::Small, 0, {3}, {}, {3}, DType::F32},
       {UnitKind::Flat, 0, {2}, {}, {40}, DType::F32},
       {UnitKind::Owned, 0, {0, 1}, {0, 0}, {32}, DType::F32}},
      step};
  return spec;
}

struct Model {
  std::vector<float> a, da, b, db, bias, dbias, tiny, dtiny;
  Model() {
    for (int i = 0; i < 16; ++i) {
      a.push_back(0.1f * i);
      da.push_back(1.0f - 0.05f * i);
      b.push_back(-0.2f * i);
      db.push_back(0.3f);
    }
    for (int i = 0; i < 40; ++i) {
      bias.push_back(0.01f * i);
      dbias.push_back(0.5f - 0.02f * i);
    }
    tiny = {1, 2, 3};
    dtiny = {-1, 0, 1};
  }
  /// Registers in another order than the compiled one.
  void addTo(OptimizerFront &opt) {
    opt.addParameter("tiny", view(tiny, {3}), view(dtiny, {3}));
    opt.addParameter("bias", view(bias, {40}), view(dbias, {40}));
    opt.addParameter("b.weight", view(b, {4, 4}), view(db, {4, 4}));
    opt.addParameter("a.weight", view(a, {4, 4}), view(da, {4, 4}));
  }
};

/// The program of a step as text: "compute u0; wait t1; ...".
std::string programText(const StepSchedule &schedule) {
  static const char *const names[] = {
      "allreduce", "reducescatter", "allgather", "wait",
      "compute",   "partials",      "gather",    "finish"};
  std::string text;
  for (const ScheduleOp &op : schedule.program) {
    text += names[static_cast<int>(op.kind)];
    if (op.unit >= 0)
      text += " u" + std::to_string(op.unit);
    if (op.token >= 0)
      text += " t" + std::to_string(op.token);
    text += "; ";
  }
  return text;
}

std::string finalizeError(OptimizerFront &opt) {
  try {
    opt.finalize();
  } catch (const Error &error) {
    return error.what();
  }
  return "";
}

TEST(OptimizerTest, ACompiledScheduleRunsItsStepAndPlansNothing) {
  Model compiled, planned;
  Optimizer withSchedule(compiledSpec());
  compiled.addTo(withSchedule);
  withSchedule.finalize();
  EXPECT_TRUE(withSchedule.schedule().program.empty());
  EXPECT_EQ(withSchedule.schedule().units[2].params,
            (std::vector<size_t>{0, 1}));
  EXPECT_EQ(withSchedule.groupOf("bias"), "rest");

  OptimizerSpec plain = sgdSpec();
  plain.rules[0].elementwise = true;
  Optimizer reference(plain);
  planned.addTo(reference);
  reference.finalize();
  compiledSteps = 0;
  for (int s = 0; s < 3; ++s) {
    withSchedule.step();
    reference.step();
  }
  EXPECT_EQ(compiledSteps, 3);
  EXPECT_EQ(compiled.a, planned.a);
  EXPECT_EQ(compiled.b, planned.b);
  EXPECT_EQ(compiled.bias, planned.bias);
  EXPECT_EQ(compiled.tiny, planned.tiny);
  EXPECT_EQ(withSchedule.stepCount("a.weight"), 3);
  EXPECT_EQ(withSchedule.stateBytes(), reference.stateBytes());
  // Collectives of one rank: 3 all-reduced, 40 and 32 scattered and
  // gathered, in f32.
  EXPECT_EQ(withSchedule.bytesSent(), 4 * (3 + 40 + 40 + 32 + 32));
}

TEST(OptimizerTest, ACompiledScheduleNamesTheFirstDifference) {
  {
    Model model;
    Optimizer opt(compiledSpec(4));
    model.addTo(opt);
    EXPECT_EQ(finalizeError(opt),
              "optimizer 'sgd' was compiled for 4 ranks, running on 1");
  }
  {
    Model model;
    Optimizer opt(compiledSpec());
    opt.addParameter("tiny", view(model.tiny, {3}), view(model.dtiny, {3}));
    opt.addParameter("bias", view(model.bias, {4, 10}),
                     view(model.dbias, {4, 10}));
    opt.addParameter("b.weight", view(model.b, {4, 4}), view(model.db, {4, 4}));
    opt.addParameter("a.weight", view(model.a, {4, 4}), view(model.da, {4, 4}));
    EXPECT_EQ(finalizeError(opt), "optimizer 'sgd' was compiled for parameter "
                                  "'bias' of shape [40], got [4, 10]");
  }
  {
    Model model;
    Optimizer opt(compiledSpec());
    opt.addParameter("tiny", view(model.tiny, {3}), view(model.dtiny, {3}),
                     "matrices");
    EXPECT_EQ(finalizeError(opt),
              "optimizer 'sgd' was compiled for parameter 'tiny' in group "
              "'rest', got group 'matrices'");
  }
  {
    Model model;
    OptimizerSpec spec = compiledSpec();
    spec.compiledSchedule->units[2].counts = {16};
    Optimizer opt(spec);
    model.addTo(opt);
    EXPECT_EQ(finalizeError(opt),
              "unit 2 (owned) of the schedule: rank 0's part is 16 elements, "
              "but it owns 32");
  }
}

void computesBeforeItsReduction(Executor &x) {
  x.launchAllReduce(0);
  x.compute(0);
}

void leavesAGatherInFlight(Executor &x) {
  Token t0 = x.launchAllReduce(0);
  Token t1 = x.launchReduceScatter(1);
  Token t2 = x.launchReduceScatter(2);
  x.wait(t0);
  x.compute(0);
  x.wait(t1);
  x.compute(1);
  x.launchAllGather(1);
  x.wait(t2);
  x.compute(2);
  x.wait(x.launchAllGather(2));
}

void gathersASmallUnit(Executor &x) { x.launchAllGather(0); }

TEST(OptimizerTest, ACompiledStepOutOfOrderIsAnError) {
  for (auto [step, error] :
       {std::pair{computesBeforeItsReduction,
                  "unit 0 (small): compute while its reduction is in flight"},
        std::pair{leavesAGatherInFlight,
                  "the step left unit 1 (flat) incomplete: its all-gather was "
                  "not waited for"},
        std::pair{gathersASmallUnit, "unit 0 (small) has no all-gather"}}) {
    Model model;
    Optimizer opt(compiledSpec(1, step));
    model.addTo(opt);
    opt.finalize();
    try {
      opt.step();
      ADD_FAILURE() << "expected: " << error;
    } catch (const Error &caught) {
      EXPECT_EQ(std::string(caught.what()), error);
    }
  }
}

/// SGD on the gradient clipped to a global norm of 1, the norm from the
/// partial sum of squares.
void stepClippedSgd(const RuleCall &call) {
  float scale = std::min(1.0f, 1.0f / call.globals[0]);
  float lr = static_cast<float>(call.hypers[0]);
  float momentum = static_cast<float>(call.hypers[1]);
  for (int64_t i = 0; i < call.rows * call.cols; ++i) {
    call.states[0][i] = momentum * call.states[0][i] + call.grad[i] * scale;
    call.param[i] -= lr * call.states[0][i];
  }
}

void squares(const float *, const float *grad, int64_t count,
             double *partials) {
  partials[0] = 0;
  for (int64_t i = 0; i < count; ++i)
    partials[0] += static_cast<double>(grad[i]) * grad[i];
}

void norm(const double *partials, float *globals) {
  globals[0] = std::sqrt(static_cast<float>(partials[0]));
}

OptimizerSpec withGlobalNorm(OptimizerSpec spec) {
  spec.rules[0].step = stepClippedSgd;
  spec.globals = {{"grad_norm"}, {PartialKind::Sum}, squares, norm};
  return spec;
}

void compiledStepWithGlobals(Executor &x) {
  Token t0 = x.launchAllReduce(0);
  Token t1 = x.launchReduceScatter(1);
  Token t2 = x.launchReduceScatter(2);
  x.wait(t0);
  x.accumulatePartials(0);
  x.wait(t1);
  x.accumulatePartials(1);
  x.wait(t2);
  x.accumulatePartials(2);
  Token t3 = x.launchPartialsGather();
  x.wait(t3);
  x.finishGlobals();
  x.compute(0);
  x.compute(1);
  Token t4 = x.launchAllGather(1);
  x.compute(2);
  Token t5 = x.launchAllGather(2);
  x.wait(t4);
  x.wait(t5);
}

// A compiled step with globals runs their phase and ends where the
// runtime's own plan does; both report the norm of every gradient.
TEST(OptimizerTest, ACompiledStepWithGlobalsRunsTheirPhase) {
  Model compiled, planned;
  Optimizer withSchedule(
      withGlobalNorm(compiledSpec(1, compiledStepWithGlobals)));
  compiled.addTo(withSchedule);
  withSchedule.finalize();
  OptimizerSpec plain = withGlobalNorm(sgdSpec());
  plain.rules[0].elementwise = true;
  Optimizer reference(plain);
  planned.addTo(reference);
  reference.finalize();
  EXPECT_EQ(programText(reference.schedule()),
            "partials u0; partials u1; partials u2; finish; "
            "compute u0; compute u1; compute u2; ");
  for (int s = 0; s < 2; ++s) {
    withSchedule.step();
    reference.step();
  }
  double squares = 0;
  for (const std::vector<float> *grad :
       {&compiled.da, &compiled.db, &compiled.dbias, &compiled.dtiny})
    for (float g : *grad)
      squares += static_cast<double>(g) * g;
  ASSERT_GT(squares, 1.0); // the clip is active
  EXPECT_FLOAT_EQ(static_cast<float>(withSchedule.globalValue("grad_norm")),
                  static_cast<float>(std::sqrt(squares)));
  EXPECT_EQ(withSchedule.globalValue("grad_norm"),
            reference.globalValue("grad_norm"));
  EXPECT_EQ(compiled.a, planned.a);
  EXPECT_EQ(compiled.b, planned.b);
  EXPECT_EQ(compiled.bias, planned.bias);
  EXPECT_EQ(compiled.tiny, planned.tiny);
  // One rank gathers its partial (8 bytes) as a copy, counted as none.
  EXPECT_EQ(withSchedule.bytesSent(), 4 * (3 + 40 + 40 + 32 + 32));
}

void updatesBeforeTheGlobals(Executor &x) {
  x.wait(x.launchAllReduce(0));
  x.compute(0);
}

void gathersBeforeEveryPartial(Executor &x) {
  x.wait(x.launchAllReduce(0));
  x.accumulatePartials(0);
  x.launchPartialsGather();
}

void finishesBeforeTheGather(Executor &x) {
  x.wait(x.launchAllReduce(0));
  x.accumulatePartials(0);
  x.finishGlobals();
}

void accumulatesTwice(Executor &x) {
  x.wait(x.launchAllReduce(0));
  x.accumulatePartials(0);
  x.accumulatePartials(0);
}

void accumulatesBeforeTheReduction(Executor &x) { x.accumulatePartials(0); }

void forgetsTheGlobals(Executor &x) { compiledStep(x); }

TEST(OptimizerTest, TheGlobalsPhaseOutOfOrderIsAnError) {
  for (auto [step, error] :
       {std::pair{updatesBeforeTheGlobals,
                  "unit 0 (small): compute before the globals it reads are "
                  "finished"},
        std::pair{gathersBeforeEveryPartial,
                  "the partials' gather before unit 1 (flat)'s partials"},
        std::pair{finishesBeforeTheGather,
                  "finishGlobals before the partials were gathered"},
        std::pair{accumulatesTwice,
                  "unit 0 (small): partials twice in a step"},
        std::pair{accumulatesBeforeTheReduction,
                  "unit 0 (small): partials before its reduction was "
                  "launched"},
        std::pair{forgetsTheGlobals,
                  "unit 0 (small): compute before the globals it reads are "
                  "finished"}}) {
    Model model;
    Optimizer opt(withGlobalNorm(compiledSpec(1, step)));
    model.addTo(opt);
    opt.finalize();
    try {
      opt.step();
      ADD_FAILURE() << "expected: " << error;
    } catch (const Error &caught) {
      EXPECT_EQ(std::string(caught.what()), error);
    }
  }
  // Without globals, their primitives are errors too; and a global is
  // named.
  Model model;
  Optimizer opt(compiledSpec(1, compiledStepWithGlobals));
  model.addTo(opt);
  opt.finalize();
  EXPECT_THROW(opt.step(), Error);
  try {
    opt.globalValue("grad_norm");
    ADD_FAILURE() << "a global of a spec without";
  } catch (const Error &caught) {
    EXPECT_EQ(std::string(caught.what()),
              "optimizer 'sgd' has no global 'grad_norm'; it has none");
  }
}

TEST(OptimizerTest, TheHostExecutorStepsOnlyHostMemory) {
  Optimizer opt(sgdSpec());
  std::vector<float> w = {1}, dw = {1};
  opt.addParameter("w", view(w, {1}),
                   TensorView{dw.data(), DType::F32, {1}, Device::Cuda});
  EXPECT_EQ(finalizeError(opt), "parameter 'w' is in cuda memory; the host "
                                "executor steps host memory");
}

} // namespace
