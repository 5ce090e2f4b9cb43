//===- bench_step.cu - optgen's nanochat step on a GPU --------------------===//
//
// The whole optimizer step of nanochat (examples/nanochat.opt, compute bf16
// as nanochat runs it on GPUs: AdamW on the embeddings, value embeddings,
// lm_head and scalars; Muon with Polar Express and NorMuon on every block
// matrix) at depths 12, 20 and 26 (n_embd = 64 * depth, vocab 32768, value
// embeddings on alternate layers), stepped by optgen's CUDA code, f32
// parameters and gradients on the device. Times the step with CUDA events
// (device time) and the host's cost of enqueueing it; counts Polar
// Express's standard flops. Prints one "RESULT ..." line per depth for
// bench/gpu/report.py; scripts/gpu-check.sh builds and runs it.
//
//===----------------------------------------------------------------------===//

#include "nanochat_muon_adamw.h"

#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace {

void check(cudaError_t result, const char *what) {
  if (result != cudaSuccess) {
    std::fprintf(stderr, "bench_step: %s: %s\n", what,
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
  bool matrix; ///< a Muon matrix
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

/// nanochat's parameters at `depth`, named as its model names them.
std::vector<Param> nanochatParams(int depth) {
  const int64_t vocab = 32768, n = 64 * depth;
  std::vector<Param> params{{"transformer.wte.weight", {vocab, n}, false}};
  for (int i = 0; i < depth; ++i) {
    std::string h = "transformer.h." + std::to_string(i) + ".";
    for (const char *m : {"attn.c_q", "attn.c_k", "attn.c_v", "attn.c_proj"})
      params.push_back({h + m + ".weight", {n, n}, true});
    params.push_back({h + "mlp.c_fc.weight", {4 * n, n}, true});
    params.push_back({h + "mlp.c_proj.weight", {n, 4 * n}, true});
  }
  for (int i = 0; i < depth; ++i)
    if (i % 2 == (depth - 1) % 2) // nanochat's has_ve
      params.push_back({"value_embeds." + std::to_string(i) + ".weight",
                        {vocab, n}, false});
  params.push_back({"lm_head.weight", {vocab, n}, false});
  params.push_back({"resid_lambdas", {depth}, false});
  params.push_back({"x0_lambdas", {depth}, false});
  return params;
}

/// Polar Express's standard flops for one m x n matrix (5 iterations: the
/// Gram matrix, its square, the product with X), as a GEMM counts them.
double polarFlops(int64_t m, int64_t n) {
  int64_t small = m < n ? m : n, large = m < n ? n : m;
  double gram = 2.0 * small * small * large;
  double square = 2.0 * small * small * small;
  double apply = 2.0 * small * small * large;
  return 5 * (gram + square + apply);
}

} // namespace

int main() {
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  cudaDeviceProp props{};
  check(cudaGetDeviceProperties(&props, 0), "device");
  std::printf("bench_step: %s\n", props.name);
  for (int depth : {12, 20, 26}) {
    std::vector<Param> params = nanochatParams(depth);
    std::vector<float *> memory;
    int64_t total = 0;
    double flops = 0;
    {
      optgen_generated::nanochat_muon_adamw optimizer;
      optimizer.setStream(stream);
      for (size_t i = 0; i < params.size(); ++i) {
        int64_t n = params[i].numel();
        float *param = nullptr, *grad = nullptr;
        check(cudaMalloc(&param, n * sizeof(float)), "parameters");
        check(cudaMalloc(&grad, n * sizeof(float)), "gradients");
        fill<<<1024, 256, 0, stream>>>(param, n, 2 * i, 0.02f);
        fill<<<1024, 256, 0, stream>>>(grad, n, 2 * i + 1, 0.001f);
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
      for (int s = 0; s < 3; ++s) // the first captures the graph
        optimizer.step();
      check(cudaStreamSynchronize(stream), "warm-up");

      const int steps = 10;
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
      std::printf("RESULT side=optgen depth=%d params=%lld step_ms=%.4f "
                  "polar_gflop=%.1f host_us=%.1f\n",
                  depth, static_cast<long long>(total), stepMs, flops / 1e9,
                  1e6 * hostSeconds / steps);
      std::fflush(stdout);
      cudaEventDestroy(start);
      cudaEventDestroy(stop);
    }
    for (float *p : memory)
      cudaFree(p);
  }
  cudaStreamDestroy(stream);
  return 0;
}
