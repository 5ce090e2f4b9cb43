//===- CudaCaseRunner.cpp - The main() of generated CUDA runners ----------===//

#include "optgen/runtime/CudaCaseRunner.h"

#include "optgen/runtime/CaseRunner.h"
#include "optgen/runtime/CudaCheck.h"
#include "optgen/runtime/Error.h"

#include <cstdio>
#include <string>
#include <vector>

namespace optgen::runtime {

namespace {

/// Device memory that frees itself.
struct DeviceBuffer {
  void *data = nullptr;
  DeviceBuffer(size_t bytes, const std::string &what) {
    OPTGEN_CUDA_CHECK(cudaMalloc(&data, bytes == 0 ? 1 : bytes), what);
  }
  ~DeviceBuffer() { cudaFree(data); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
};

/// Steps a CUDA optimizer on device copies of the case's host tensors.
class CudaStepper final : public Stepper {
public:
  explicit CudaStepper(std::unique_ptr<CudaOptimizer> optimizer)
      : optimizer(std::move(optimizer)) {
    OPTGEN_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                      "the runner's stream");
    OPTGEN_CUDA_CHECK(cudaEventCreate(&started), "the runner's events");
    OPTGEN_CUDA_CHECK(cudaEventCreate(&finished), "the runner's events");
    this->optimizer->setStream(stream);
  }
  ~CudaStepper() override {
    cudaStreamSynchronize(stream);
    optimizer.reset(); // before the stream it runs on
    cudaEventDestroy(started);
    cudaEventDestroy(finished);
    cudaStreamDestroy(stream);
  }

  void addGroup(const std::string &name, const std::string &rule) override {
    optimizer->addGroup(name, rule);
  }
  void setHyper(const std::string &group, const std::string &name,
                const std::vector<double> &values) override {
    optimizer->setHyper(group, name, values);
  }
  void addParameter(const std::string &name, TensorView param,
                    TensorView grad, const std::string &group) override {
    size_t bytes = param.byteSize();
    Mirrored &tensor = tensors.emplace_back();
    tensor.host = param;
    tensor.hostGrad = grad;
    tensor.param = std::make_unique<DeviceBuffer>(bytes, "parameter '" + name + "'");
    tensor.grad = std::make_unique<DeviceBuffer>(bytes, "gradient of '" + name + "'");
    // On the steps' stream, which a copy on the legacy default stream
    // would not be ordered with.
    OPTGEN_CUDA_CHECK(cudaMemcpyAsync(tensor.param->data, param.data, bytes,
                                      cudaMemcpyHostToDevice, stream),
                      "parameter '" + name + "'");
    TensorView deviceParam{tensor.param->data, param.dtype, param.shape,
                           Device::Cuda};
    TensorView deviceGrad{tensor.grad->data, grad.dtype, grad.shape,
                          Device::Cuda};
    if (group.empty())
      optimizer->addParameter(name, deviceParam, deviceGrad);
    else
      optimizer->addParameter(name, deviceParam, deviceGrad, group);
  }
  void finalize() override { optimizer->finalize(); }
  void step() override {
    for (const Mirrored &t : tensors)
      OPTGEN_CUDA_CHECK(cudaMemcpyAsync(t.grad->data, t.hostGrad.data,
                                        t.hostGrad.byteSize(),
                                        cudaMemcpyHostToDevice, stream),
                        "a gradient");
    OPTGEN_CUDA_CHECK(cudaEventRecord(started, stream), "the step's timing");
    optimizer->step();
    OPTGEN_CUDA_CHECK(cudaEventRecord(finished, stream), "the step's timing");
    for (const Mirrored &t : tensors)
      OPTGEN_CUDA_CHECK(cudaMemcpyAsync(t.host.data, t.param->data,
                                        t.host.byteSize(),
                                        cudaMemcpyDeviceToHost, stream),
                        "a parameter");
    OPTGEN_CUDA_CHECK(cudaStreamSynchronize(stream), "the step");
    float ms = 0;
    OPTGEN_CUDA_CHECK(cudaEventElapsedTime(&ms, started, finished),
                      "the step's timing");
    lastMs = ms;
  }
  double lastStepMs() const override { return lastMs; }
  int64_t stateBytes() const override { return optimizer->stateBytes(); }
  std::vector<std::pair<std::string, double>> globalValues() const override {
    return lastGlobals(*optimizer);
  }
  void saveState(const std::string &path) override {
    optimizer->saveState(path);
  }
  void loadState(const std::string &path) override {
    optimizer->loadState(path);
  }

private:
  /// A case tensor (host) and its device copy.
  struct Mirrored {
    TensorView host, hostGrad;
    std::unique_ptr<DeviceBuffer> param, grad;
  };
  std::unique_ptr<CudaOptimizer> optimizer;
  std::vector<Mirrored> tensors;
  cudaStream_t stream = nullptr;
  cudaEvent_t started = nullptr, finished = nullptr;
  double lastMs = -1;
};

} // namespace

int cudaRunnerMain(int argc, char **argv,
                   const std::function<std::unique_ptr<CudaOptimizer>()> &make) {
  CaseOptions options;
  if (int status = parseRunnerArguments(argc, argv, "cuda", options);
      status >= 0)
    return status;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "%s: no CUDA device: skipped\n", argv[0]);
    return ExitNoDevice;
  }
  return runCase(
      [&] { return std::unique_ptr<Stepper>(std::make_unique<CudaStepper>(make())); },
      options);
}

} // namespace optgen::runtime
