//===- bench_adamw.cu - optgen's AdamW on nanochat's parameters, on a GPU -===//
//
// The AdamW part of nanochat's step (its embeddings, value embeddings,
// lm_head and scalars) at depths 12, 20 and 26, stepped by optgen's CUDA
// code for examples/adamw.opt (the same traffic as nanochat's AdamW: each
// element's parameter, gradient and two moments read, three written). Next
// to it, in the same process, the card's device-to-device copy bandwidth.
// Prints one "RESULT key=value ..." line per depth for bench/gpu/report.py;
// scripts/gpu-check.sh builds and runs it.
//
//===----------------------------------------------------------------------===//

#include "adamw.h"
#include "gpu_bench.h"

#include <algorithm>

using gpu_bench::check;

namespace {

/// Bytes per second of cudaMemcpyAsync device to device (read + written),
/// best of 10 copies of `bytes` after a warm-up.
double copyBandwidth(size_t bytes, cudaStream_t stream) {
  void *a = nullptr, *b = nullptr;
  check(cudaMalloc(&a, bytes), "copy buffers");
  check(cudaMalloc(&b, bytes), "copy buffers");
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  double best = 0;
  for (int r = 0; r < 11; ++r) {
    cudaEventRecord(start, stream);
    check(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream), "copy");
    cudaEventRecord(stop, stream);
    check(cudaEventSynchronize(stop), "copy");
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    if (r > 0)
      best = std::max(best, 2.0 * bytes / (ms * 1e-3));
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(a);
  cudaFree(b);
  return best;
}

} // namespace

int main() {
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  cudaDeviceProp props{};
  check(cudaGetDeviceProperties(&props, 0), "device");
  double copy = copyBandwidth(size_t{2} << 30, stream);
  std::printf("bench_adamw: %s, device copy %.0f GB/s (read + written)\n",
              props.name, copy / 1e9);
  for (int depth : {12, 20, 26}) {
    std::vector<float *> memory;
    int64_t total = 0;
    gpu_bench::StepTimes times;
    {
      optgen_generated::adamw optimizer;
      optimizer.setStream(stream);
      std::vector<gpu_bench::Param> params = gpu_bench::nanochatParams(depth);
      for (size_t i = 0; i < params.size(); ++i) {
        if (params[i].matrix)
          continue; // Muon's
        int64_t n = params[i].numel();
        float *param = nullptr, *grad = nullptr;
        check(cudaMalloc(&param, n * sizeof(float)), "parameters");
        check(cudaMalloc(&grad, n * sizeof(float)), "gradients");
        gpu_bench::fill<<<1024, 256, 0, stream>>>(param, n, 2 * i, 1.0f);
        gpu_bench::fill<<<1024, 256, 0, stream>>>(grad, n, 2 * i + 1, 0.01f);
        memory.push_back(param);
        memory.push_back(grad);
        total += n;
        optimizer.addParameter(
            params[i].name,
            {param, optgen::runtime::DType::F32, params[i].shape,
             optgen::runtime::Device::Cuda},
            {grad, optgen::runtime::DType::F32, params[i].shape,
             optgen::runtime::Device::Cuda});
      }
      optimizer.finalize();
      times = gpu_bench::timeSteps(optimizer, stream, 20);
    }
    double bytes = 28.0 * static_cast<double>(total); // 4 reads, 3 writes
    double rate = bytes / (times.deviceMs * 1e-3);
    std::printf("RESULT side=optgen depth=%d params=%lld step_ms=%.4f "
                "adamw_gbs=%.1f copy_gbs=%.1f bandwidth_pct=%.1f "
                "host_us=%.1f\n",
                depth, static_cast<long long>(total), times.deviceMs,
                rate / 1e9, copy / 1e9, 100.0 * rate / copy, times.hostUs);
    std::fflush(stdout);
    for (float *p : memory)
      cudaFree(p);
  }
  cudaStreamDestroy(stream);
  return 0;
}
