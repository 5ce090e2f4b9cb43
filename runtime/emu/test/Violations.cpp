//===- Violations.cpp - Programs that break CUDA's rules ------------------===//
//
// optgen-emu-violations RULE runs a small program that breaks one of the
// rules the emulated device enforces, and prints what the emulator said of
// it: the CUDA error of the call (or of the next synchronisation, for a
// fault inside a kernel) with its message. Each rule is a ctest
// (runtime/emu/violation/RULE) expecting the error and the rule's words;
// `optgen-emu-violations --list` names them.
//
//===----------------------------------------------------------------------===//

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace {

/// Prints "CALL: NAME: TEXT" for a failed call; returns whether it failed.
bool said(const char *call, cudaError_t result) {
  if (result == cudaSuccess)
    return false;
  std::printf("%s: %s: %s\n", call, cudaGetErrorName(result),
              cudaGetErrorString(result));
  return true;
}

#define CALL(expression) said(#expression, (expression))

__global__ void scale(float *data, int count, float factor) {
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
       i < count; i += static_cast<int>(gridDim.x * blockDim.x))
    data[i] *= factor;
}

// The misaligned access is the point: the emulated device is what must
// report it, so UBSan's own alignment check (the sanitizer suite) stays out.
__global__ __attribute__((no_sanitize("alignment"))) void
loadVector(const float *data, float *out) {
  float4 v = *reinterpret_cast<const float4 *>(data);
  out[threadIdx.x] = v.x;
}

__global__ void divergentBarrier(float *out) {
  if (threadIdx.x >= 16)
    return;
  __syncthreads();
  out[threadIdx.x] = 1.0f;
}

__global__ void shuffleWithoutLanes(int *out) {
  if (threadIdx.x >= 8)
    return;
  out[threadIdx.x] = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x), 0);
}

__global__ void writePastTheEnd(float *data, int count) {
  data[count + 64] = 1.0f;
}

__global__ void trap() { __trap(); }

/// A block's sum whose first barrier is missing when `broken`: threads read
/// their neighbours' shared values before those are written.
__global__ void blockSum(const float *in, float *out, bool broken) {
  __shared__ float partial[256];
  partial[threadIdx.x] = in[blockIdx.x * 256 + threadIdx.x];
  if (!broken)
    __syncthreads();
  for (int width = 128; width > 0; width /= 2) {
    if (static_cast<int>(threadIdx.x) < width)
      partial[threadIdx.x] += partial[threadIdx.x + width];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    out[blockIdx.x] = partial[0];
  __syncthreads();
}

/// Two streams, one writing what the other reads, without an event.
void unorderedStreams(bool ordered) {
  float *data = nullptr, *sums = nullptr;
  cudaMalloc(&data, 256 * sizeof(float));
  cudaMalloc(&sums, sizeof(float));
  cudaStream_t a = nullptr, b = nullptr;
  cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
  std::vector<float> ones(256, 1.0f);
  cudaMemcpyAsync(data, ones.data(), 256 * sizeof(float),
                  cudaMemcpyHostToDevice, a);
  optgen::emu::launchKernel<scale>(dim3(1), dim3(256), 0, a, data, 256, 2.0f);
  if (ordered) {
    cudaEvent_t written;
    cudaEventCreate(&written);
    cudaEventRecord(written, a);
    cudaStreamWaitEvent(b, written, 0);
  }
  optgen::emu::launchKernel<blockSum>(dim3(1), dim3(256), 0, b, data, sums,
                                      false);
  float sum = 0;
  cudaMemcpyAsync(&sum, sums, sizeof sum, cudaMemcpyDeviceToHost, b);
  cudaStreamSynchronize(a);
  std::printf("sum %g\n", sum);
}

void missingBarrier(bool broken) {
  float *data = nullptr, *sums = nullptr;
  cudaMalloc(&data, 512 * sizeof(float));
  cudaMalloc(&sums, 2 * sizeof(float));
  std::vector<float> ones(512, 1.0f);
  cudaMemcpy(data, ones.data(), 512 * sizeof(float), cudaMemcpyHostToDevice);
  optgen::emu::launchKernel<blockSum>(dim3(2), dim3(256), 0, nullptr, data,
                                      sums, broken);
  float got[2] = {};
  cudaMemcpy(got, sums, sizeof got, cudaMemcpyDeviceToHost);
  std::printf("sums %g %g (256 each)\n", got[0], got[1]);
}

template <auto Kernel, typename... Args>
void launch(dim3 grid, dim3 block, size_t shared, cudaStream_t stream,
            Args... args) {
  optgen::emu::launchKernel<Kernel>(grid, block, shared, stream, args...);
}

cudaStream_t nonBlocking() {
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  return stream;
}

const std::map<std::string, std::function<void()>> &rules() {
  static const std::map<std::string, std::function<void()>> all = {
      {"capture-malloc",
       [] {
         cudaStream_t s = nonBlocking();
         cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
         void *p = nullptr;
         CALL(cudaMalloc(&p, 64));
         cudaGraph_t graph;
         CALL(cudaStreamEndCapture(s, &graph));
       }},
      {"capture-synchronous-copy",
       [] {
         float *d = nullptr;
         cudaMalloc(&d, 64);
         float h[16] = {};
         cudaStream_t s = nonBlocking();
         cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
         CALL(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
       }},
      {"capture-synchronize",
       [] {
         cudaStream_t s = nonBlocking();
         cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
         CALL(cudaStreamSynchronize(s));
       }},
      {"capture-legacy-stream",
       [] {
         cudaStream_t blocking = nullptr;
         cudaStreamCreate(&blocking);
         float *d = nullptr;
         cudaMalloc(&d, 64);
         cudaStreamBeginCapture(blocking, cudaStreamCaptureModeRelaxed);
         CALL(cudaMemsetAsync(d, 0, 64, cudaStreamLegacy));
       }},
      {"capture-merge",
       [] {
         cudaStream_t a = nonBlocking(), b = nonBlocking();
         cudaEvent_t e;
         cudaEventCreate(&e);
         cudaStreamBeginCapture(a, cudaStreamCaptureModeRelaxed);
         cudaStreamBeginCapture(b, cudaStreamCaptureModeRelaxed);
         cudaEventRecord(e, a);
         CALL(cudaStreamWaitEvent(b, e, 0));
       }},
      {"capture-uncaptured-event",
       [] {
         cudaStream_t a = nonBlocking(), b = nonBlocking();
         cudaEvent_t e;
         cudaEventCreate(&e);
         cudaEventRecord(e, a);
         cudaStreamBeginCapture(b, cudaStreamCaptureModeThreadLocal);
         CALL(cudaStreamWaitEvent(b, e, 0));
       }},
      {"capture-pageable-copy",
       [] {
         float *d = nullptr;
         cudaMalloc(&d, 64);
         std::vector<float> h(16);
         cudaStream_t s = nonBlocking();
         cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
         CALL(cudaMemcpyAsync(d, h.data(), 64, cudaMemcpyHostToDevice, s));
       }},
      {"capture-unjoined",
       [] {
         cudaStream_t a = nonBlocking(), b = nonBlocking();
         float *d = nullptr;
         cudaMalloc(&d, 64);
         cudaEvent_t e;
         cudaEventCreate(&e);
         cudaStreamBeginCapture(a, cudaStreamCaptureModeThreadLocal);
         cudaEventRecord(e, a);
         cudaStreamWaitEvent(b, e, 0); // b joins the capture
         cudaMemsetAsync(d, 0, 64, b); // and never rejoins a
         cudaGraph_t graph;
         CALL(cudaStreamEndCapture(a, &graph));
       }},
      {"grid-limit",
       [] {
         float *d = nullptr;
         cudaMalloc(&d, 64);
         launch<scale>(dim3(1, 65536), dim3(32), 0, nullptr, d, 16, 2.0f);
         CALL(cudaGetLastError());
       }},
      {"block-limit",
       [] {
         float *d = nullptr;
         cudaMalloc(&d, 64);
         launch<scale>(dim3(1), dim3(2048), 0, nullptr, d, 16, 2.0f);
         CALL(cudaGetLastError());
       }},
      {"shared-memory-limit",
       [] {
         float *d = nullptr;
         cudaMalloc(&d, 64);
         launch<scale>(dim3(1), dim3(32), 64 * 1024, nullptr, d, 16, 2.0f);
         CALL(cudaGetLastError());
       }},
      {"misaligned-vector",
       [] {
         float *d = nullptr;
         cudaMalloc(&d, 256);
         launch<loadVector>(dim3(1), dim3(1), 0, nullptr, d + 1, d + 32);
         CALL(cudaDeviceSynchronize());
       }},
      {"host-pointer-in-kernel",
       [] {
         std::vector<float> h(16);
         launch<scale>(dim3(1), dim3(32), 0, nullptr, h.data(), 16, 2.0f);
         CALL(cudaDeviceSynchronize());
       }},
      {"device-pointer-as-host",
       [] {
         float *a = nullptr, *b = nullptr;
         cudaMalloc(&a, 64);
         cudaMalloc(&b, 64);
         CALL(cudaMemcpy(a, b, 64, cudaMemcpyHostToDevice));
       }},
      {"host-pointer-as-device",
       [] {
         std::vector<float> h(16), g(16);
         CALL(cudaMemcpy(h.data(), g.data(), 64, cudaMemcpyDeviceToHost));
       }},
      {"use-after-free",
       [] {
         float *d = nullptr;
         cudaMalloc(&d, 64);
         cudaFree(d);
         std::vector<float> h(16);
         CALL(cudaMemcpy(h.data(), d, 64, cudaMemcpyDeviceToHost));
       }},
      {"use-after-free-in-kernel",
       [] {
         float *d = nullptr;
         cudaMalloc(&d, 64);
         cudaFree(d);
         launch<scale>(dim3(1), dim3(32), 0, nullptr, d, 16, 2.0f);
         CALL(cudaDeviceSynchronize());
       }},
      {"past-the-end-in-kernel",
       [] {
         float *d = nullptr;
         cudaMalloc(&d, 1 << 20);
         launch<writePastTheEnd>(dim3(1), dim3(1), 0, nullptr, d, 1 << 18);
         cudaDeviceSynchronize();
       }},
      {"divergent-barrier",
       [] {
         float *d = nullptr;
         cudaMalloc(&d, 256);
         launch<divergentBarrier>(dim3(1), dim3(32), 0, nullptr, d);
         CALL(cudaDeviceSynchronize());
       }},
      {"warp-lane-missing",
       [] {
         int *d = nullptr;
         cudaMalloc(&d, 256);
         launch<shuffleWithoutLanes>(dim3(1), dim3(32), 0, nullptr, d);
         CALL(cudaDeviceSynchronize());
       }},
      {"trap",
       [] {
         launch<trap>(dim3(1), dim3(1), 0, nullptr);
         CALL(cudaDeviceSynchronize());
         void *after = nullptr; // the fault is sticky
         CALL(cudaMalloc(&after, 4));
       }},
      {"collectives-that-differ",
       [] {
         ncclUniqueId id;
         ncclGetUniqueId(&id);
         std::vector<std::thread> ranks;
         for (int r = 0; r < 2; ++r)
           ranks.emplace_back([&, r] {
             cudaSetDevice(r);
             ncclComm_t comm;
             ncclCommInitRank(&comm, 2, id, r);
             float *d = nullptr;
             cudaMalloc(&d, 1024);
             cudaStream_t s = nonBlocking();
             // Rank 1 sums 8 floats where rank 0 sums 16.
             ncclAllReduce(d, d, r == 0 ? 16 : 8, ncclFloat32, ncclSum, comm, s);
             cudaStreamSynchronize(s);
             ncclResult_t failure = ncclSuccess;
             ncclCommGetAsyncError(comm, &failure);
             std::printf("rank %d: ncclCommGetAsyncError: %s\n", r,
                         ncclGetErrorString(failure));
           });
         for (std::thread &rank : ranks)
           rank.join();
       }},
      // Races: ThreadSanitizer reports them (build-tsan); without it the
      // missing barrier still gives a wrong sum.
      {"race-missing-barrier", [] { missingBarrier(true); }},
      {"race-missing-barrier-fixed", [] { missingBarrier(false); }},
      {"race-missing-stream-wait", [] { unorderedStreams(false); }},
      {"race-missing-stream-wait-fixed", [] { unorderedStreams(true); }},
      {"communicator-destroyed-with-graph",
       [] {
         ncclUniqueId id;
         ncclGetUniqueId(&id);
         ncclComm_t comm;
         ncclCommInitRank(&comm, 1, id, 0);
         float *d = nullptr;
         cudaMalloc(&d, 64);
         cudaStream_t s = nonBlocking();
         cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
         ncclAllReduce(d, d, 16, ncclFloat32, ncclSum, comm, s);
         cudaGraph_t graph;
         cudaStreamEndCapture(s, &graph);
         cudaGraphExec_t exec;
         cudaGraphInstantiate(&exec, graph, 0);
         ncclCommDestroy(comm); // while exec holds its collective
         std::printf("ncclCommDestroy returned\n");
       }},
  };
  return all;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s RULE (--list: the rules)\n", argv[0]);
    return 2;
  }
  if (std::strcmp(argv[1], "--list") == 0) {
    for (const auto &[name, program] : rules())
      std::printf("%s\n", name.c_str());
    return 0;
  }
  auto rule = rules().find(argv[1]);
  if (rule == rules().end()) {
    std::fprintf(stderr, "%s: no rule '%s'\n", argv[0], argv[1]);
    return 2;
  }
  rule->second();
  std::fflush(stdout);
  return 0;
}
