//===- bench_adamw.cu - optgen's AdamW on nanochat's parameters, on a GPU -===//
//
// The AdamW part of nanochat's step (its embeddings, value embeddings,
// lm_head and scalars) at depths 12, 20 and 26 (n_embd = 64 * depth, vocab
// 32768, value embeddings on alternate layers), stepped by optgen's CUDA
// code for examples/adamw.opt (the same traffic as nanochat's AdamW: each
// element's parameter, gradient and two moments read, three written). Next
// to it, in the same process, the card's device-to-device copy bandwidth.
// Prints one "RESULT key=value ..." line per depth for
// bench/gpu/report.py; scripts/gpu-check.sh builds and runs it.
//
//===----------------------------------------------------------------------===//

#include "adamw.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace {

void check(cudaError_t result, const char *what) {
  if (result != cudaSuccess) {
    std::fprintf(stderr, "bench_adamw: %s: %s\n", what,
                 cudaGetErrorString(result));
    std::exit(1);
  }
}

/// Deterministic values in [-scale, scale) (splitmix64 of the index).
__global__ void fill(float *data, int64_t n, uint64_t seed, float scale) {
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    uint64_t x = static_cast<uint64_t>(i) + (seed << 32) + 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    data[i] = scale * (static_cast<float>(x >> 40) / 16777216.0f * 2.0f - 1.0f);
  }
}

struct Param {
  std::string name;
  std::vector<int64_t> shape;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

/// nanochat's AdamW parameters at `depth`.
std::vector<Param> adamwParams(int depth) {
  const int64_t vocab = 32768, n = 64 * depth;
  std::vector<Param> params{{"transformer.wte.weight", {vocab, n}}};
  for (int i = 0; i < depth; ++i)
    if (i % 2 == (depth - 1) % 2) // nanochat's has_ve
      params.push_back({"value_embeds." + std::to_string(i) + ".weight",
                        {vocab, n}});
  params.push_back({"lm_head.weight", {vocab, n}});
  params.push_back({"resid_lambdas", {depth}});
  params.push_back({"x0_lambdas", {depth}});
  return params;
}

/// Bytes per second of cudaMemcpyAsync device to device (read + written),
/// best of 10 copies of `bytes`.
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
    if (r > 0) // the first is a warm-up
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
    std::vector<Param> params = adamwParams(depth);
    std::vector<float *> memory;
    int64_t total = 0;
    optgen_generated::adamw optimizer;
    optimizer.setStream(stream);
    for (size_t i = 0; i < params.size(); ++i) {
      int64_t n = params[i].numel();
      float *param = nullptr, *grad = nullptr;
      check(cudaMalloc(&param, n * sizeof(float)), "parameters");
      check(cudaMalloc(&grad, n * sizeof(float)), "gradients");
      fill<<<1024, 256, 0, stream>>>(param, n, 2 * i, 1.0f);
      fill<<<1024, 256, 0, stream>>>(grad, n, 2 * i + 1, 0.01f);
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
    for (int s = 0; s < 3; ++s) // the first captures the graph
      optimizer.step();
    check(cudaStreamSynchronize(stream), "warm-up");

    const int steps = 20;
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    double hostSeconds = 0;
    cudaEventRecord(start, stream);
    for (int s = 0; s < steps; ++s) {
      auto before = std::chrono::steady_clock::now();
      optimizer.step();
      hostSeconds += std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - before)
                         .count();
    }
    cudaEventRecord(stop, stream);
    check(cudaEventSynchronize(stop), "the steps");
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    double stepMs = ms / steps;
    double bytes = 28.0 * static_cast<double>(total); // 4 reads, 3 writes
    std::printf("RESULT side=optgen depth=%d params=%lld step_ms=%.4f "
                "adamw_gbs=%.1f copy_gbs=%.1f bandwidth_pct=%.1f "
                "host_us=%.1f\n",
                depth, static_cast<long long>(total), stepMs,
                bytes / (stepMs * 1e-3) / 1e9, copy / 1e9,
                100.0 * bytes / (stepMs * 1e-3) / copy,
                1e6 * hostSeconds / steps);
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    for (float *p : memory)
      cudaFree(p);
  }
  cudaStreamDestroy(stream);
  return 0;
}
