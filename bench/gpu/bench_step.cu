//===- bench_step.cu - optgen's nanochat step on a GPU --------------------===//
//
// The whole optimizer step of nanochat (examples/nanochat.opt, compute bf16
// as nanochat runs it on GPUs: AdamW on the embeddings, value embeddings,
// lm_head and scalars; Muon with Polar Express and NorMuon on every block
// matrix) at depths 12, 20 and 26, stepped by optgen's CUDA code, f32
// parameters and gradients on the device. Times the step with CUDA events
// (device time) and the host's cost of enqueueing it; counts Polar
// Express's standard flops. Prints one "RESULT ..." line per depth for
// bench/gpu/report.py; scripts/gpu-check.sh builds and runs it.
//
//===----------------------------------------------------------------------===//

#include "gpu_bench.h"
#include "nanochat_muon_adamw.h"

using gpu_bench::check;

namespace {

/// Polar Express's standard flops for one m x n matrix (5 iterations: the
/// Gram matrix, its square, the product with X), as a GEMM counts them.
double polarFlops(int64_t m, int64_t n) {
  double small = m < n ? m : n, large = m < n ? n : m;
  return 5 * (4.0 * small * small * large + 2.0 * small * small * small);
}

} // namespace

int main() {
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  cudaDeviceProp props{};
  check(cudaGetDeviceProperties(&props, 0), "device");
  std::printf("bench_step: %s\n", props.name);
  for (int depth : {12, 20, 26}) {
    std::vector<float *> memory;
    int64_t total = 0;
    double flops = 0;
    gpu_bench::StepTimes times;
    {
      optgen_generated::nanochat_muon_adamw optimizer;
      optimizer.setStream(stream);
      std::vector<gpu_bench::Param> params = gpu_bench::nanochatParams(depth);
      for (size_t i = 0; i < params.size(); ++i) {
        int64_t n = params[i].numel();
        float *param = nullptr, *grad = nullptr;
        check(cudaMalloc(&param, n * sizeof(float)), "parameters");
        check(cudaMalloc(&grad, n * sizeof(float)), "gradients");
        gpu_bench::fill<<<1024, 256, 0, stream>>>(param, n, 2 * i, 0.02f);
        gpu_bench::fill<<<1024, 256, 0, stream>>>(grad, n, 2 * i + 1, 0.001f);
        memory.push_back(param);
        memory.push_back(grad);
        total += n;
        if (params[i].matrix)
          flops += polarFlops(params[i].shape[0], params[i].shape[1]);
        optimizer.addParameter(
            params[i].name,
            {param, optgen::runtime::DType::F32, params[i].shape,
             optgen::runtime::Device::Cuda},
            {grad, optgen::runtime::DType::F32, params[i].shape,
             optgen::runtime::Device::Cuda});
      }
      optimizer.finalize();
      times = gpu_bench::timeSteps(optimizer, stream, 10);
    }
    std::printf("RESULT side=optgen depth=%d params=%lld step_ms=%.4f "
                "polar_gflop=%.1f host_us=%.1f\n",
                depth, static_cast<long long>(total), times.deviceMs,
                flops / 1e9, times.hostUs);
    std::fflush(stdout);
    for (float *p : memory)
      cudaFree(p);
  }
  cudaStreamDestroy(stream);
  return 0;
}
