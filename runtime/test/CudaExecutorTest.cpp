//===- CudaExecutorTest.cpp - The CUDA executor against the host one ------===//
//
// The same optimizer tables, with host rules on the host executor and
// hand-written kernels (CudaTestRules.cu) on the CUDA executor, must step
// the same parameters to the same bits, f32 and bf16, with and without CUDA
// graphs, with hyperparameters changed between steps (a graph replayed must
// see them, and one captured from a launch that read an integer one on the
// host must be captured again); checkpoints must not depend on the
// executor. What prepare() rejects before touching a device is tested
// everywhere; the rest skips itself without a GPU.
//
//===----------------------------------------------------------------------===//

#include "CudaTestRules.h"
#include "CudaTestSupport.h"
#include "TempPath.h"

#include "optgen/runtime/CudaCheck.h"
#include "optgen/runtime/CudaInProcessCommunicator.h"
#include "optgen/runtime/CudaOptimizer.h"
#if OPTGEN_TEST_NCCL
#include "optgen/runtime/NcclCommunicator.h"
#endif
#include "optgen/runtime/Error.h"
#include "optgen/runtime/Optimizer.h"
#include "optgen/runtime/Safetensors.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

using namespace optgen::runtime;
using namespace optgen::runtime::test;

namespace {

/// The host's version of CudaTestRules.cu's kernels, operation for
/// operation (this file is compiled without contraction into FMAs).
void stepMomentum(const RuleCall &call) {
  float momentum = static_cast<float>(call.hypers[kMomentumAt]);
  float lo = static_cast<float>(call.hypers[kClipAt]);
  float hi = static_cast<float>(call.hypers[kClipAt + 1]);
  float scale =
      static_cast<float>(call.hypers[kLrAt]) / static_cast<float>(call.step);
  float *velocity = call.states[0];
  for (int64_t i = 0; i < call.rows * call.cols; ++i) {
    float g = maximum(lo, minimum(hi, call.grad[i]));
    float v = momentum * velocity[i] + g;
    velocity[i] = v;
    float update = scale * v;
    if (call.workspace) {
      call.workspace[i] = update;
      update = call.workspace[i];
    }
    call.param[i] = call.param[i] - update;
  }
}

void velocityShape(const int64_t *shape, int rank, int64_t *rows,
                   int64_t *cols) {
  std::tie(rows[0], cols[0]) =
      asRowsCols(std::vector<int64_t>(shape, shape + rank));
}

int64_t matrixWorkspace(const int64_t *shape, int) {
  return shape[0] * shape[1];
}

/// The host's version of launchGradStatistics and its finish.
void gradStatistics(const float *, const float *grad, int64_t count,
                    double *partials) {
  partials[0] = 0;
  partials[1] = -INFINITY;
  for (int64_t i = 0; i < count; ++i) {
    double g = grad[i];
    partials[0] += g * g;
    partials[1] = std::max(partials[1], std::fabs(g));
  }
}

void gradStatisticsFinish(const double *partials, float *globals) {
  globals[0] = std::sqrt(static_cast<float>(partials[0]));
  globals[1] = static_cast<float>(partials[1]);
}

/// Elementwise momentum for every parameter, and a matrix version of it
/// (members of one shape, a workspace) for the "w" ones: on the host, or
/// on a CUDA device; with `globals`, the gradients' norm and largest
/// magnitude too (which the rules do not read).
OptimizerSpec momentumSpec(bool onDevice, bool globals = false) {
  std::vector<HyperSpec> hypers = {
      {"momentum", 1, kMomentumAt, false, true, {0.9}},
      {"lr", 1, kLrAt, false, true, {0.1}},
      {"clip", 2, kClipAt, false, true, {-1.0, 1.0}}};
  auto rule = [&](const char *name, int rank, bool elementwise,
                  void (*launch)(const DeviceCall &)) {
    RuleSpec spec{name,          rank,
                  hypers,        {"velocity"},
                  velocityShape, onDevice ? nullptr : stepMomentum,
                  elementwise,   elementwise ? nullptr : matrixWorkspace};
    spec.launch = onDevice ? launch : nullptr;
    return spec;
  };
  OptimizerSpec spec;
  spec.name = "momentum";
  spec.rules = {rule("momentum", -1, true, launchMomentum),
                rule("momentum_matrix", 2, false, launchMomentumMatrix)};
  spec.groups = {{"matrices", 1, {"w*"}, nullptr, {{"lr", {0.05}}}},
                 {"rest", 0, {"*"}, nullptr, {}}};
  spec.distribution = Distribution::None;
  spec.smallNumel = 0;
  if (globals)
    spec.globals = {{"grad_norm", "grad_peak"},
                    {PartialKind::Sum, PartialKind::Max},
                    onDevice ? nullptr : gradStatistics,
                    onDevice ? nullptr : gradStatisticsFinish,
                    onDevice ? launchGradStatistics : nullptr,
                    onDevice ? launchGradStatisticsFinish : nullptr,
                    0};
  return spec;
}

/// Parameters and gradients as host bytes of one dtype: a bucket of three
/// matrices, a matrix alone, two vectors, a scalar and a rank-3 tensor.
struct Model {
  DType dtype;
  std::vector<std::string> names = {"w0", "w1", "w2", "w3",
                                    "b0", "b1", "s",  "e"};
  std::vector<std::vector<int64_t>> shapes = {
      {24, 40}, {24, 40}, {24, 40}, {7, 5}, {40}, {40}, {}, {3, 17, 29}};
  std::vector<std::vector<unsigned char>> params, grads;

  explicit Model(DType dtype) : dtype(dtype) {
    for (size_t t = 0; t < names.size(); ++t) {
      params.push_back(encode(t, [&](int64_t i) {
        return std::sin(0.37f * static_cast<float>(i + 13 * t));
      }));
      grads.push_back({});
    }
    setGradients(0);
  }
  /// Gradients of step `step`, some beyond the clipping range.
  void setGradients(int step) {
    setGradients([&](size_t t, int64_t i) {
      return 2.5f * std::cos(0.91f * static_cast<float>(i * 7 + t) +
                             static_cast<float>(step));
    });
  }
  /// Gradient t's element i is f(t, i), written into the memory an
  /// optimizer was given (after the first time).
  void setGradients(const std::function<float(size_t, int64_t)> &f) {
    for (size_t t = 0; t < names.size(); ++t) {
      std::vector<unsigned char> bytes =
          encode(t, [&](int64_t i) { return f(t, i); });
      if (grads[t].empty())
        grads[t] = std::move(bytes);
      else
        std::copy(bytes.begin(), bytes.end(), grads[t].begin());
    }
  }
  std::vector<unsigned char> encode(size_t t,
                                    const std::function<float(int64_t)> &f) {
    int64_t numel = *checkedNumel(shapes[t]);
    std::vector<float> values;
    for (int64_t i = 0; i < numel; ++i)
      values.push_back(f(i));
    std::vector<unsigned char> bytes(static_cast<size_t>(numel) *
                                     dtypeSize(dtype));
    convertElements(values.data(), DType::F32, bytes.data(), dtype, numel);
    return bytes;
  }
  TensorView view(std::vector<unsigned char> &bytes, size_t t) {
    return {bytes.data(), dtype, shapes[t], Device::Host};
  }
};

/// One model stepped on the host and on the CUDA device.
struct HostAndDevice {
  Model host, device;
  /// Before the optimizer: freed after it.
  std::vector<std::unique_ptr<DeviceBytes>> params, grads;
  Optimizer hostOpt{momentumSpec(false)};
  CudaOptimizer deviceOpt{momentumSpec(true)};

  explicit HostAndDevice(DType dtype, bool globals = false)
      : host(dtype), device(dtype), hostOpt(momentumSpec(false, globals)),
        deviceOpt(momentumSpec(true, globals)) {
    for (size_t t = 0; t < host.names.size(); ++t) {
      params.push_back(std::make_unique<DeviceBytes>(device.params[t]));
      grads.push_back(std::make_unique<DeviceBytes>(device.grads[t]));
      hostOpt.addParameter(host.names[t], host.view(host.params[t], t),
                           host.view(host.grads[t], t));
      deviceOpt.addParameter(
          device.names[t],
          {params[t]->data, dtype, device.shapes[t], Device::Cuda},
          {grads[t]->data, dtype, device.shapes[t], Device::Cuda});
    }
  }
  void finalize() {
    hostOpt.finalize();
    deviceOpt.finalize();
  }
  /// Step `step` (0, 1, ...) on both, with that step's gradients.
  void step(int step) {
    host.setGradients(step);
    device.setGradients(step);
    for (size_t t = 0; t < grads.size(); ++t)
      grads[t]->upload(device.grads[t]);
    hostOpt.step();
    deviceOpt.step();
  }
  void expectSameParameters() {
    for (size_t t = 0; t < params.size(); ++t)
      EXPECT_EQ(params[t]->download(), host.params[t])
          << "parameter " << host.names[t];
  }
};

/// Every tensor of two checkpoints, byte for byte.
void expectSameCheckpoints(const std::string &a, const std::string &b) {
  SafetensorsFile first = SafetensorsFile::open(a);
  SafetensorsFile second = SafetensorsFile::open(b);
  ASSERT_EQ(first.names(SafetensorsFile::NameOrder::Sorted),
            second.names(SafetensorsFile::NameOrder::Sorted));
  for (const std::string &name :
       first.names(SafetensorsFile::NameOrder::Sorted)) {
    TensorView x = first.view(name), y = second.view(name);
    ASSERT_EQ(x.byteSize(), y.byteSize()) << name;
    EXPECT_EQ(0, std::memcmp(x.data, y.data, x.byteSize())) << name;
  }
}

using Variant = std::tuple<DType, bool>; // the dtype, CUDA graphs

class CudaMatchesHost : public testing::TestWithParam<Variant> {};

TEST_P(CudaMatchesHost, StepsSeeNewHyperparametersAndGiveTheHostsBits) {
  SKIP_WITHOUT_CUDA_DEVICE();
  auto [dtype, graphs] = GetParam();
  HostAndDevice both(dtype);
  both.deviceOpt.setGraphs(graphs);
  both.finalize();
  ASSERT_EQ(both.deviceOpt.schedule().units.size(), 5u);
  EXPECT_EQ(both.deviceOpt.stateBytes(), both.hostOpt.stateBytes());
  EXPECT_EQ(both.deviceOpt.bytesSent(), 0);
  for (int step = 0; step < 5; ++step) {
    for (OptimizerFront *opt :
         {static_cast<OptimizerFront *>(&both.hostOpt),
          static_cast<OptimizerFront *>(&both.deviceOpt)}) {
      if (step == 2)
        opt->setHyper("matrices", "lr", 0.02);
      if (step == 3) {
        opt->setHyper("rest", "clip", std::vector<double>{-0.5, 0.75});
        opt->setHyper("matrices", "momentum", 0.5);
      }
    }
    both.step(step);
    both.expectSameParameters();
  }
  EXPECT_EQ(both.deviceOpt.stepCount("w1"), 5);
  EXPECT_EQ(both.deviceOpt.stepCount("s"), 5);

  std::string hostPath = tempPath("cuda_host.safetensors");
  std::string devicePath = tempPath("cuda_device.safetensors");
  both.hostOpt.saveState(hostPath);
  both.deviceOpt.saveState(devicePath);
  expectSameCheckpoints(hostPath, devicePath);
  std::remove(hostPath.c_str());
  std::remove(devicePath.c_str());
}

INSTANTIATE_TEST_SUITE_P(
    DTypesAndGraphs, CudaMatchesHost,
    testing::Combine(testing::Values(DType::F32, DType::BF16), testing::Bool()),
    [](const testing::TestParamInfo<Variant> &info) {
      return std::string(dtypeName(std::get<0>(info.param))) +
             (std::get<1>(info.param) ? "Graphs" : "NoGraphs");
    });

/// The globals' phase on the device (partials folded member by member,
/// the finish, inside the captured graph) gives the host's globals at
/// every step, and leaves the update as it was.
TEST_P(CudaMatchesHost, GlobalsAreTheHosts) {
  SKIP_WITHOUT_CUDA_DEVICE();
  auto [dtype, graphs] = GetParam();
  HostAndDevice both(dtype, /*globals=*/true);
  both.deviceOpt.setGraphs(graphs);
  both.finalize();
  for (int step = 0; step < 3; ++step) {
    both.step(step);
    both.expectSameParameters();
    for (const char *name : {"grad_norm", "grad_peak"})
      EXPECT_FLOAT_EQ(static_cast<float>(both.deviceOpt.globalValue(name)),
                      static_cast<float>(both.hostOpt.globalValue(name)))
          << name << " at step " << step;
  }
  EXPECT_EQ(both.deviceOpt.captures(), graphs ? 1 : 0);
}

TEST(CudaExecutorTest, ACheckpointRoundTripsThroughTheDevice) {
  SKIP_WITHOUT_CUDA_DEVICE();
  std::string path = tempPath("cuda_roundtrip.safetensors");
  HostAndDevice saved(DType::F32);
  saved.finalize();
  saved.step(0);
  saved.step(1);
  saved.deviceOpt.saveState(path);

  // A fresh device optimizer loads it and goes on as the host one does.
  Model model(DType::F32);
  model.params = saved.host.params;
  std::vector<std::unique_ptr<DeviceBytes>> params, grads;
  CudaOptimizer loaded(momentumSpec(true));
  for (size_t t = 0; t < model.names.size(); ++t) {
    params.push_back(std::make_unique<DeviceBytes>(model.params[t]));
    grads.push_back(std::make_unique<DeviceBytes>(model.grads[t]));
    loaded.addParameter(
        model.names[t],
        {params[t]->data, DType::F32, model.shapes[t], Device::Cuda},
        {grads[t]->data, DType::F32, model.shapes[t], Device::Cuda});
  }
  loaded.finalize();
  loaded.loadState(path);
  EXPECT_EQ(loaded.stepCount("e"), 2);
  saved.step(2);
  model.setGradients(2);
  for (size_t t = 0; t < grads.size(); ++t)
    grads[t]->upload(model.grads[t]);
  loaded.step();
  for (size_t t = 0; t < params.size(); ++t)
    EXPECT_EQ(params[t]->download(), saved.host.params[t])
        << "parameter " << model.names[t];
  std::remove(path.c_str());
}

TEST(CudaExecutorTest, StepsRunOnTheCallersStream) {
  SKIP_WITHOUT_CUDA_DEVICE();
  cudaStream_t stream = nullptr;
  OPTGEN_CUDA_CHECK(cudaStreamCreate(&stream), "test stream");
  {
    HostAndDevice both(DType::BF16);
    both.deviceOpt.setStream(stream); // before finalize()
    both.finalize();
    both.step(0);
    both.expectSameParameters();
    both.deviceOpt.setStream(nullptr); // its own again
    both.step(1);
    both.expectSameParameters();
    both.deviceOpt.setStream(stream);
    both.step(2);
    both.expectSameParameters();
    both.deviceOpt.setStream(nullptr); // the stream goes first
  }
  cudaStreamDestroy(stream);
}

/// A schedule compiled into the code: one elementwise unit whose members
/// differ in shape (which the planner never makes), stepped by `step`.
OptimizerSpec compiledSpec(bool onDevice, void (*step)(Executor &)) {
  OptimizerSpec spec = momentumSpec(onDevice);
  spec.groups = {{"rest", 0, {"*"}, nullptr, {}}};
  spec.plannedParams = {{"b0", {40}, 0, -1}, {"e", {3, 17, 29}, 0, -1}};
  spec.compiledSchedule = CompiledSchedule{
      1, {{UnitKind::Local, 0, {0, 1}, {}, {}, DType::F32}}, step};
  return spec;
}

void computeUnit0(Executor &x) { x.compute(0); }
void computeNothing(Executor &) {}
void computeTwice(Executor &x) {
  x.compute(0);
  x.compute(0);
}

TEST(CudaExecutorTest, AnElementwiseUnitMayMixShapes) {
  SKIP_WITHOUT_CUDA_DEVICE();
  Model host(DType::F32), device(DType::F32);
  std::vector<std::unique_ptr<DeviceBytes>> params, grads;
  Optimizer hostOpt(compiledSpec(false, computeUnit0));
  CudaOptimizer deviceOpt(compiledSpec(true, computeUnit0));
  for (size_t t : {4, 7}) { // b0, e
    params.push_back(std::make_unique<DeviceBytes>(device.params[t]));
    grads.push_back(std::make_unique<DeviceBytes>(device.grads[t]));
    hostOpt.addParameter(host.names[t], host.view(host.params[t], t),
                         host.view(host.grads[t], t));
    deviceOpt.addParameter(
        device.names[t],
        {params.back()->data, DType::F32, device.shapes[t], Device::Cuda},
        {grads.back()->data, DType::F32, device.shapes[t], Device::Cuda});
  }
  hostOpt.finalize();
  deviceOpt.finalize();
  for (int step = 0; step < 3; ++step) {
    hostOpt.step();
    deviceOpt.step();
  }
  EXPECT_EQ(params[0]->download(), host.params[4]);
  EXPECT_EQ(params[1]->download(), host.params[7]);
}

/// The compiled step a test chooses.
void (*compiledStep)(Executor &) = computeUnit0;
void runCompiledStep(Executor &x) { compiledStep(x); }

TEST(CudaExecutorTest, AStepOutOfOrderFailsAndTheNextOneRuns) {
  SKIP_WITHOUT_CUDA_DEVICE();
  for (bool graphs : {true, false}) {
    Model device(DType::F32), host(DType::F32);
    std::vector<std::unique_ptr<DeviceBytes>> params, grads;
    Optimizer hostOpt(compiledSpec(false, runCompiledStep));
    CudaOptimizer deviceOpt(compiledSpec(true, runCompiledStep));
    deviceOpt.setGraphs(graphs);
    for (size_t t : {4, 7}) {
      params.push_back(std::make_unique<DeviceBytes>(device.params[t]));
      grads.push_back(std::make_unique<DeviceBytes>(device.grads[t]));
      hostOpt.addParameter(host.names[t], host.view(host.params[t], t),
                           host.view(host.grads[t], t));
      deviceOpt.addParameter(
          device.names[t],
          {params.back()->data, DType::F32, device.shapes[t], Device::Cuda},
          {grads.back()->data, DType::F32, device.shapes[t], Device::Cuda});
    }
    hostOpt.finalize();
    deviceOpt.finalize();
    // The first step fails (while it is being captured, with graphs): it
    // counts, as on the host, but steps nothing and leaves no capture open.
    compiledStep = computeNothing;
    EXPECT_THROW(hostOpt.step(), Error);
    try {
      deviceOpt.step();
      FAIL() << "no Error";
    } catch (const Error &error) {
      EXPECT_EQ(std::string(error.what()),
                "the step left unit 0 (local) incomplete: it was not "
                "computed");
    }
    compiledStep = computeUnit0;
    hostOpt.step();
    deviceOpt.step();
    EXPECT_EQ(params[0]->download(), host.params[4]) << graphs;
    EXPECT_EQ(params[1]->download(), host.params[7]) << graphs;
    EXPECT_EQ(deviceOpt.stepCount("e"), 2);

    compiledStep = computeTwice;
    try {
      deviceOpt.step();
      FAIL() << "no Error";
    } catch (const Error &error) {
      EXPECT_EQ(std::string(error.what()),
                "unit 0 (local): compute after it was computed");
    }
    compiledStep = computeUnit0;
    EXPECT_NO_THROW(deviceOpt.step());
    EXPECT_EQ(deviceOpt.stepCount("e"), 4);
  }
}

/// The host's version of launchRepeatedProducts: the same products in f32,
/// whose sums are exact for the test's gradients (one nonzero term each),
/// so that the device's order of summation does not matter.
void stepRepeatedProducts(const RuleCall &call) {
  int64_t rows = call.rows, cols = call.cols;
  float lr = static_cast<float>(call.hypers[kRepeatLrAt]);
  std::vector<float> product(static_cast<size_t>(cols * cols));
  std::vector<float> update(static_cast<size_t>(rows * cols));
  for (int t = 0; t < static_cast<int>(call.hypers[kRepeatTimesAt]); ++t) {
    for (int64_t i = 0; i < cols; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        float sum = 0.0f;
        for (int64_t k = 0; k < rows; ++k)
          sum += call.grad[k * cols + i] * call.param[k * cols + j];
        product[i * cols + j] = sum;
      }
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        float sum = 0.0f;
        for (int64_t k = 0; k < cols; ++k)
          sum += call.grad[i * cols + k] * product[k * cols + j];
        update[i * cols + j] = sum;
      }
    for (int64_t i = 0; i < rows * cols; ++i)
      call.param[i] = call.param[i] - lr * update[i];
  }
}

void noStates(const int64_t *, int, int64_t *, int64_t *) {}

/// One rule of repeated products for every parameter: its learning rate a
/// float, its number of repetitions an int.
OptimizerSpec repeatSpec(bool onDevice) {
  RuleSpec rule{"repeat",
                2,
                {{"lr", 1, kRepeatLrAt, false, true, {0.5}},
                 {"times", 1, kRepeatTimesAt, true, true, {2}}},
                {},
                noStates,
                onDevice ? nullptr : stepRepeatedProducts,
                false,
                repeatWorkspace};
  rule.launch = onDevice ? launchRepeatedProducts : nullptr;
  OptimizerSpec spec;
  spec.name = "repeat";
  spec.rules = {rule};
  spec.groups = {{"all", 0, {"*"}, nullptr, {}}};
  spec.distribution = Distribution::None;
  spec.smallNumel = 0;
  return spec;
}

TEST(CudaExecutorTest, AnIntegerHyperparameterChangeCapturesTheStepAgain) {
  SKIP_WITHOUT_CUDA_DEVICE();
  // Two 4x3 matrices (one unit): parameters without zeros, and gradients
  // whose columns have one nonzero (+-1) each, so that every sum of the
  // products has one nonzero term and is exact in any order.
  constexpr int64_t rows = 4, cols = 3;
  std::vector<std::string> names = {"w0", "w1"};
  std::vector<std::vector<float>> hostParams, hostGrads(2);
  std::vector<std::unique_ptr<DeviceBytes>> params, grads;
  auto setGradients = [&](int step) {
    for (size_t t = 0; t < names.size(); ++t) {
      hostGrads[t].assign(rows * cols, 0.0f);
      for (int64_t i = 0; i < rows; ++i) {
        int64_t j = (i + step + static_cast<int64_t>(t)) % rows;
        if (j < cols)
          hostGrads[t][i * cols + j] = i % 2 ? -1.0f : 1.0f;
      }
    }
  };
  setGradients(0);
  Optimizer hostOpt(repeatSpec(false));
  CudaOptimizer deviceOpt(repeatSpec(true));
  deviceOpt.setGraphs(true);
  for (size_t t = 0; t < names.size(); ++t) {
    std::vector<float> values;
    for (int64_t i = 0; i < rows * cols; ++i)
      values.push_back(static_cast<float>((i + 3 * t) % 4) - 1.5f);
    hostParams.push_back(values);
    params.push_back(std::make_unique<DeviceBytes>(bytesOf(values)));
    grads.push_back(std::make_unique<DeviceBytes>(bytesOf(hostGrads[t])));
  }
  for (size_t t = 0; t < names.size(); ++t) {
    hostOpt.addParameter(
        names[t],
        {hostParams[t].data(), DType::F32, {rows, cols}, Device::Host},
        {hostGrads[t].data(), DType::F32, {rows, cols}, Device::Host});
    deviceOpt.addParameter(
        names[t], {params[t]->data, DType::F32, {rows, cols}, Device::Cuda},
        {grads[t]->data, DType::F32, {rows, cols}, Device::Cuda});
  }
  hostOpt.finalize();
  deviceOpt.finalize();
  ASSERT_EQ(deviceOpt.schedule().units.size(), 1u);
  // Captures after each step: the first step's; none for the float change
  // at step 2; one for the int change at step 3.
  const int64_t captures[] = {1, 1, 1, 2, 2};
  for (int step = 0; step < 5; ++step) {
    for (OptimizerFront *opt : {static_cast<OptimizerFront *>(&hostOpt),
                                static_cast<OptimizerFront *>(&deviceOpt)}) {
      if (step == 2)
        opt->setHyper("all", "lr", 0.25);
      if (step == 3)
        opt->setHyper("all", "times", 3);
    }
    setGradients(step);
    for (size_t t = 0; t < names.size(); ++t)
      grads[t]->upload(bytesOf(hostGrads[t]));
    hostOpt.step();
    deviceOpt.step();
    for (size_t t = 0; t < names.size(); ++t)
      EXPECT_EQ(params[t]->download(), bytesOf(hostParams[t]))
          << "parameter " << names[t] << " after step " << step;
    EXPECT_EQ(deviceOpt.captures(), captures[step]) << "after step " << step;
  }
}

TEST(CudaExecutorTest, MemoryTaggedCudaMustBeOnTheDevice) {
  SKIP_WITHOUT_CUDA_DEVICE();
  std::vector<float> hostMemory(40, 0.0f);
  CudaOptimizer opt(momentumSpec(true));
  opt.addParameter("b0", {hostMemory.data(), DType::F32, {40}, Device::Cuda},
                   {hostMemory.data(), DType::F32, {40}, Device::Cuda});
  try {
    opt.finalize();
    FAIL() << "no Error";
  } catch (const Error &error) {
    EXPECT_NE(std::string(error.what())
                  .find("parameter 'b0' is tagged cuda but is host memory"),
              std::string::npos)
        << error.what();
  }
}

// What prepare() rejects before it touches a device: these run everywhere.

/// finalize()'s error for `spec` with parameter "w0" ([4, 4] f32) at `data`
/// tagged `device`.
std::string finalizeError(OptimizerSpec spec, void *data, Device device) {
  CudaOptimizer opt(std::move(spec));
  opt.addParameter("w0", {data, DType::F32, {4, 4}, device},
                   {data, DType::F32, {4, 4}, device});
  try {
    opt.finalize();
  } catch (const Error &error) {
    return error.what();
  }
  return "(no error)";
}

TEST(CudaExecutorTest, HostMemoryIsRejectedBeforeTheDeviceIsTouched) {
  std::vector<float> memory(16);
  EXPECT_EQ(finalizeError(momentumSpec(true), memory.data(), Device::Host),
            "parameter 'w0' is in host memory; the CUDA executor steps CUDA "
            "memory");
}

TEST(CudaExecutorTest, ARuleCompiledForTheHostIsRejected) {
  std::vector<float> memory(16); // never touched: its tag is enough
  EXPECT_EQ(finalizeError(momentumSpec(false), memory.data(), Device::Cuda),
            "parameter 'w0' runs rule 'momentum_matrix', which was compiled "
            "for the host, not a CUDA device");
}

TEST(CudaExecutorTest, MemoryMisalignedForItsDTypeIsRejected) {
  std::vector<float> memory(17);
  void *odd = reinterpret_cast<unsigned char *>(memory.data()) + 2;
  EXPECT_EQ(finalizeError(momentumSpec(true), odd, Device::Cuda),
            "parameter 'w0' is not aligned to its F32 elements");
}

TEST(CudaExecutorTest, TheDistributedStepNeedsADeviceCommunicator) {
  SKIP_WITHOUT_CUDA_DEVICE();
  DeviceBytes memory(std::vector<unsigned char>(16 * sizeof(float), 0));
  OptimizerSpec spec = momentumSpec(true);
  spec.plannedParams = {{"w0", {4, 4}, 0, -1}};
  spec.compiledSchedule = CompiledSchedule{
      1, {{UnitKind::Small, 1, {0}, {}, {16}, DType::F32}}, computeUnit0};
  EXPECT_EQ(finalizeError(spec, memory.data, Device::Cuda),
            "the distributed CUDA step needs a communicator of device memory "
            "on streams (NCCL, or the in-process CUDA one), and this one is "
            "not: this communicator works on the host: it takes no stream");
}

/// How the ranks of a distributed test communicate: in-process ranks on
/// one GPU, or NCCL with a GPU per rank.
enum class RankKind { InProcess, Nccl };

/// The distributed CUDA step (small, flat and owned units) on N ranks,
/// threads of this process, each step a CUDA graph (the default), against
/// the host executor's step on one rank: the same bits, the same
/// checkpoint (saved at N ranks, gathered whole), the same bits again after
/// a step from that checkpoint loaded at N ranks; then the optimizers are
/// destroyed, their graphs holding the communicators' collectives. Each
/// rank's gradients differ from the lone one's by multiples of 1/16 that
/// cancel over the ranks, on gradients that are multiples of 1/8, so that
/// every sum is exact, in bf16 too.
class CudaDistributedStep
    : public testing::TestWithParam<std::tuple<DType, int, RankKind>> {};

TEST_P(CudaDistributedStep, EndsWithOneRanksBits) {
  SKIP_WITHOUT_CUDA_DEVICE();
  auto [dtype, size, kind] = GetParam();
#if !OPTGEN_TEST_NCCL
  if (kind == RankKind::Nccl)
    GTEST_SKIP() << "built without NCCL";
#endif
  int devices = 0;
  ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
  if (kind == RankKind::Nccl && devices < size)
    GTEST_SKIP() << "NCCL puts a rank on a GPU: " << size << " ranks, "
                 << devices << " GPUs";
  auto gradients = [&](Model &model, int step, float offset) {
    model.setGradients([&](size_t t, int64_t i) {
      return static_cast<float>((i * 5 + static_cast<int64_t>(t) * 3 + step) %
                                15) /
                 8.0f -
             0.875f + (i % 3 == 0 ? offset : -offset);
    });
  };
  OptimizerSpec distributed = momentumSpec(true);
  distributed.distribution = Distribution::Zero2;
  distributed.smallNumel = 16;
  std::string name = testing::UnitTest::GetInstance()->current_test_info()->name();
  for (char &c : name)
    if (c == '/')
      c = '_';
  std::string saved = tempPath(name + ".host.safetensors");
  std::string savedAtN = tempPath(name + ".ranks.safetensors");

  constexpr int kSteps = 3;
  Model alone(dtype);
  Optimizer reference(momentumSpec(false));
  for (size_t t = 0; t < alone.names.size(); ++t)
    reference.addParameter(alone.names[t], alone.view(alone.params[t], t),
                           alone.view(alone.grads[t], t));
  reference.finalize();
  for (int s = 0; s < kSteps; ++s) {
    gradients(alone, s, 0.0f);
    reference.step();
  }
  reference.saveState(saved);

  auto deviceOf = [&](int r) { return kind == RankKind::Nccl ? r : 0; };
  std::vector<Model> models(size, Model(dtype));
  std::vector<std::vector<std::unique_ptr<DeviceBytes>>> params(size),
      grads(size);
  std::vector<std::unique_ptr<Communicator>> communicators;
  if (kind == RankKind::InProcess)
    communicators = makeCudaInProcessCommunicators(size);
#if OPTGEN_TEST_NCCL
  NcclId id = makeNcclId();
#endif
  // Each rank steps on a stream of its own: on the default stream, one
  // rank's synchronous copy would wait for another's step (the legacy
  // stream of their one device), which waits for that rank's collective.
  std::vector<cudaStream_t> streams(size);
  std::vector<std::unique_ptr<CudaOptimizer>> optimizers;
  for (int r = 0; r < size; ++r) {
    ASSERT_EQ(cudaSetDevice(deviceOf(r)), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking),
              cudaSuccess);
    optimizers.push_back(std::make_unique<CudaOptimizer>(distributed));
    CudaOptimizer &opt = *optimizers.back();
    opt.setStream(streams[r]);
    if (kind == RankKind::InProcess)
      opt.setCommunicator(std::move(communicators[r]));
    Model &model = models[r];
    for (size_t t = 0; t < model.names.size(); ++t) {
      params[r].push_back(std::make_unique<DeviceBytes>(model.params[t]));
      grads[r].push_back(std::make_unique<DeviceBytes>(model.grads[t]));
      opt.addParameter(
          model.names[t],
          {params[r][t]->data, dtype, model.shapes[t], Device::Cuda},
          {grads[r][t]->data, dtype, model.shapes[t], Device::Cuda});
    }
  }
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  auto offsetOf = [&](int r) {
    return (static_cast<float>(r) - static_cast<float>(size - 1) / 2.0f) /
           16.0f;
  };
  // Every rank, on a thread of its own with its device current.
  auto onRanks = [&](const std::function<void(int)> &body) {
    std::vector<std::string> errors(size);
    std::vector<std::thread> threads;
    for (int r = 0; r < size; ++r)
      threads.emplace_back([&, r] {
        try {
          OPTGEN_CUDA_CHECK(cudaSetDevice(deviceOf(r)), "the rank's device");
          body(r);
        } catch (const std::exception &error) {
          errors[r] = error.what();
        }
      });
    for (std::thread &thread : threads)
      thread.join();
    for (int r = 0; r < size; ++r)
      EXPECT_EQ(errors[r], "") << "rank " << r;
  };
  auto step = [&](int r, int s) {
    gradients(models[r], s, offsetOf(r));
    for (size_t t = 0; t < grads[r].size(); ++t)
      grads[r][t]->upload(models[r].grads[t], streams[r]);
    optimizers[r]->step();
  };
  auto expectReferenceBits = [&](const char *when) {
    for (int r = 0; r < size; ++r)
      for (size_t t = 0; t < alone.names.size(); ++t) {
        ASSERT_EQ(cudaSetDevice(deviceOf(r)), cudaSuccess);
        EXPECT_EQ(params[r][t]->download(), alone.params[t])
            << "parameter " << alone.names[t] << " on rank " << r << " of "
            << size << ", " << when;
      }
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  };

  std::vector<std::string> units(size);
  std::vector<int64_t> captures(size);
  onRanks([&](int r) {
#if OPTGEN_TEST_NCCL
    if (kind == RankKind::Nccl)
      optimizers[r]->setCommunicator(makeNcclCommunicator(id, r, size));
#endif
    optimizers[r]->finalize();
    for (const StepUnit &unit : optimizers[r]->schedule().units)
      units[r] += std::string(unitKindName(unit.kind)) + " ";
    for (int s = 0; s < kSteps; ++s)
      step(r, s);
    optimizers[r]->saveState(savedAtN);
    OPTGEN_CUDA_CHECK(cudaStreamSynchronize(streams[r]), "the ranks' steps");
    captures[r] = optimizers[r]->captures();
  });
  for (int r = 0; r < size; ++r) {
    if (size > 1) {
      EXPECT_NE(units[r].find("small"), std::string::npos) << units[r];
      EXPECT_NE(units[r].find("flat"), std::string::npos) << units[r];
      EXPECT_NE(units[r].find("owned"), std::string::npos) << units[r];
    }
    EXPECT_EQ(captures[r], 1) << "rank " << r << ": the first step captured, "
                                 "the others replayed";
  }
  expectReferenceBits("after the steps");
  expectSameCheckpoints(saved, savedAtN);

  // One more step, from the reference's checkpoint loaded at N ranks.
  gradients(alone, kSteps, 0.0f);
  reference.step();
  onRanks([&](int r) {
    optimizers[r]->loadState(saved);
    step(r, kSteps);
    OPTGEN_CUDA_CHECK(cudaStreamSynchronize(streams[r]), "the ranks' steps");
  });
  expectReferenceBits("after a step from the loaded checkpoint");

  // Each rank's optimizer goes before the memory it steps, its graph
  // before its communicator.
  onRanks([&](int r) {
    optimizers[r].reset();
    OPTGEN_CUDA_CHECK(cudaStreamDestroy(streams[r]), "the rank's stream");
  });
  std::remove(saved.c_str());
  std::remove(savedAtN.c_str());
}

INSTANTIATE_TEST_SUITE_P(
    Ranks, CudaDistributedStep,
    testing::Combine(testing::Values(DType::F32, DType::BF16),
                     testing::Values(1, 2, 3, 4),
                     testing::Values(RankKind::InProcess, RankKind::Nccl)),
    [](const testing::TestParamInfo<std::tuple<DType, int, RankKind>> &info) {
      return std::string(dtypeName(std::get<0>(info.param))) + "N" +
             std::to_string(std::get<1>(info.param)) +
             (std::get<2>(info.param) == RankKind::Nccl ? "Nccl" : "InProcess");
    });

TEST(CudaExecutorTest, AMatrixRuleStepsMembersOfOneShape) {
  std::vector<float> memory(16 + 6);
  OptimizerSpec spec = momentumSpec(true);
  spec.plannedParams = {{"w0", {4, 4}, 0, -1}, {"w1", {2, 3}, 0, -1}};
  spec.compiledSchedule = CompiledSchedule{
      1, {{UnitKind::Local, 1, {0, 1}, {}, {}, DType::F32}}, computeUnit0};
  CudaOptimizer opt(std::move(spec));
  opt.addParameter("w0", {memory.data(), DType::F32, {4, 4}, Device::Cuda},
                   {memory.data(), DType::F32, {4, 4}, Device::Cuda});
  opt.addParameter("w1", {memory.data() + 16, DType::F32, {2, 3}, Device::Cuda},
                   {memory.data() + 16, DType::F32, {2, 3}, Device::Cuda});
  try {
    opt.finalize();
    FAIL() << "no Error";
  } catch (const Error &error) {
    EXPECT_EQ(std::string(error.what()),
              "parameter 'w1' has shape [2, 3], but parameter 'w0' of the "
              "same unit 0 (local) has shape [4, 4]; rule 'momentum_matrix' "
              "is not elementwise, so it steps members of one shape");
  }
}

} // namespace
