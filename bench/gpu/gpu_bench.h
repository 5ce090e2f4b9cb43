//===- gpu_bench.h - What the GPU benchmarks share --------------*- C++ -*-===//
//
// nanochat's parameters at a depth (its names, so that the spec's groups
// bind them), deterministic device data, and timing of an optimizer's steps
// with CUDA events (device time) and the host clock (the cost of enqueueing
// a step), for bench_adamw.cu and bench_step.cu.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_BENCH_GPU_BENCH_H
#define OPTGEN_BENCH_GPU_BENCH_H

#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace gpu_bench {

inline void check(cudaError_t result, const char *what) {
  if (result != cudaSuccess) {
    std::fprintf(stderr, "gpu bench: %s: %s\n", what,
                 cudaGetErrorString(result));
    std::exit(1);
  }
}

/// Deterministic values in [-scale, scale) (splitmix64 of the index).
static __global__ void fill(float *data, int64_t n, uint64_t seed,
                                   float scale) {
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    uint64_t x =
        static_cast<uint64_t>(i) + (seed << 32) + 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    data[i] = scale * (static_cast<float>(x >> 40) / 16777216.0f * 2.0f - 1.0f);
  }
}

struct Param {
  std::string name;
  std::vector<int64_t> shape;
  bool matrix; ///< a Muon matrix of the blocks
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

/// nanochat's parameters at `depth`: n_embd = 64 * depth, vocab 32768,
/// value embeddings on alternate layers (its has_ve).
inline std::vector<Param> nanochatParams(int depth) {
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
    if (i % 2 == (depth - 1) % 2)
      params.push_back({"value_embeds." + std::to_string(i) + ".weight",
                        {vocab, n}, false});
  params.push_back({"lm_head.weight", {vocab, n}, false});
  params.push_back({"resid_lambdas", {depth}, false});
  params.push_back({"x0_lambdas", {depth}, false});
  return params;
}

struct StepTimes {
  double deviceMs; ///< per step, CUDA events
  double hostUs;   ///< per step, enqueueing it
};

/// Times `steps` steps of `optimizer` on `stream`, after three warm-up
/// steps (the first captures its graph).
template <typename Optimizer>
StepTimes timeSteps(Optimizer &optimizer, cudaStream_t stream, int steps) {
  for (int s = 0; s < 3; ++s)
    optimizer.step();
  check(cudaStreamSynchronize(stream), "warm-up");
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
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return {ms / steps, 1e6 * hostSeconds / steps};
}

} // namespace gpu_bench

#endif // OPTGEN_BENCH_GPU_BENCH_H
