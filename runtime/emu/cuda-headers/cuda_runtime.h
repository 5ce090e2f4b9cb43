//===- cuda_runtime.h - The CUDA runtime of the emulated device -*- C++ -*-===//
//
// optgen's emulated CUDA device: the subset of the CUDA runtime API that
// optgen's runtime and generated code call, implemented on the CPU, so that
// the same .cu text and the same runtime sources that run on a GPU compile
// with the host C++ compiler (this folder first on the include path, no
// CUDA toolkit anywhere) and execute where there is no GPU: in CI, on a
// laptop. docs/EMULATION.md says what that proves and what it does not.
//
// Semantics are CUDA's as its documentation states them, enforced where a
// GPU would fail or leave the behaviour undefined:
// - device memory is tracked (allocation, device, freed); an API call that
//   gets host memory where device memory is required, the reverse, or
//   memory already freed fails with a message naming the rule;
// - each stream executes asynchronously and in order on a worker of its
//   own; events order streams; the legacy default stream synchronises with
//   the blocking streams of its device, and runs its work only when
//   something waits for it (a legal and unkind schedule: work that reads
//   what it wrote without waiting sees stale memory);
// - pageable and pinned host memory behave as the API's synchronisation
//   rules say (a pageable upload is staged at the call, a pageable
//   download waits for the stream);
// - stream capture records each operation with its kernel's arguments by
//   value; what capture prohibits (allocation, synchronous copies,
//   synchronisation, the legacy stream beside a capturing blocking stream,
//   dependencies on another capture or on an event recorded outside it)
//   fails and invalidates the capture, as it does on a GPU;
// - kernels run with every thread of a block concurrent (fibers, a real
//   __syncthreads, shared memory, warp shuffles and votes), within sm_90's
//   grid, block and shared-memory limits (optgen/emu/Device.h).
// A fault inside a kernel (a misaligned vector access, a trap, a divergent
// barrier) is sticky, as on a GPU: every later call of that device returns
// it. cudaGetErrorString returns CUDA's text followed by the emulator's own
// account of the failure ("[emulated device] ..."), so that the runtime's
// error messages carry it.
//
// OPTGEN_EMU_DEVICES sets the number of emulated devices (default 8), each
// an sm_90 with 80 GiB of memory that the emulator does not reserve.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_EMU_CUDA_RUNTIME_H
#define OPTGEN_EMU_CUDA_RUNTIME_H

/// Code that runs on both a GPU and the emulated device may ask.
#ifndef OPTGEN_CUDA_EMULATED
#define OPTGEN_CUDA_EMULATED 1
#endif

#include <cstddef>
#include <cstdint>

// --- Errors (CUDA's names and numbers) ---------------------------------------

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchOutOfResources = 701,
  cudaErrorPeerAccessNotEnabled = 705,
  cudaErrorAssert = 710,
  cudaErrorIllegalInstruction = 715,
  cudaErrorMisalignedAddress = 716,
  cudaErrorLaunchFailure = 719,
  cudaErrorNotPermitted = 800,
  cudaErrorNotSupported = 801,
  cudaErrorStreamCaptureUnsupported = 900,
  cudaErrorStreamCaptureInvalidated = 901,
  cudaErrorStreamCaptureMerge = 902,
  cudaErrorStreamCaptureUnmatched = 903,
  cudaErrorStreamCaptureUnjoined = 904,
  cudaErrorStreamCaptureIsolation = 905,
  cudaErrorStreamCaptureImplicit = 906,
  cudaErrorCapturedEvent = 907,
  cudaErrorStreamCaptureWrongThread = 908,
  cudaErrorUnknown = 999,
};

// --- Handles and flags ---------------------------------------------------------

struct CUstream_st;
struct CUevent_st;
struct CUgraph_st;
struct CUgraphExec_st;
typedef CUstream_st *cudaStream_t;
typedef CUevent_st *cudaEvent_t;
typedef CUgraph_st *cudaGraph_t;
typedef CUgraphExec_st *cudaGraphExec_t;

/// The legacy default stream, also what a null stream means.
#define cudaStreamLegacy (reinterpret_cast<cudaStream_t>(0x1))
#define cudaStreamPerThread (reinterpret_cast<cudaStream_t>(0x2))

#define cudaStreamDefault 0x00u
#define cudaStreamNonBlocking 0x01u
#define cudaEventDefault 0x00u
#define cudaEventBlockingSync 0x01u
#define cudaEventDisableTiming 0x02u
#define cudaHostAllocDefault 0x00u
#define cudaHostRegisterDefault 0x00u

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

enum cudaMemoryType {
  cudaMemoryTypeUnregistered = 0,
  cudaMemoryTypeHost = 1,
  cudaMemoryTypeDevice = 2,
  cudaMemoryTypeManaged = 3,
};

struct cudaPointerAttributes {
  cudaMemoryType type;
  int device;
  void *devicePointer;
  void *hostPointer;
};

enum cudaStreamCaptureStatus {
  cudaStreamCaptureStatusNone = 0,
  cudaStreamCaptureStatusActive = 1,
  cudaStreamCaptureStatusInvalidated = 2,
};

enum cudaStreamCaptureMode {
  cudaStreamCaptureModeGlobal = 0,
  cudaStreamCaptureModeThreadLocal = 1,
  cudaStreamCaptureModeRelaxed = 2,
};

/// What cudaGetDeviceProperties reports (the fields optgen reads).
struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  size_t sharedMemPerBlockOptin;
  int warpSize;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int multiProcessorCount;
  int major, minor;
};

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1)
      : x(vx), y(vy), z(vz) {}
};

// --- The API -------------------------------------------------------------------

const char *cudaGetErrorName(cudaError_t error);
const char *cudaGetErrorString(cudaError_t error);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();

cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaMemGetInfo(size_t *free, size_t *total);

cudaError_t cudaMalloc(void **pointer, size_t bytes);
cudaError_t cudaFree(void *pointer);
cudaError_t cudaMallocHost(void **pointer, size_t bytes);
cudaError_t cudaHostAlloc(void **pointer, size_t bytes, unsigned flags);
cudaError_t cudaFreeHost(void *pointer);
cudaError_t cudaHostRegister(void *pointer, size_t bytes, unsigned flags);
cudaError_t cudaHostUnregister(void *pointer);
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *attributes,
                                     const void *pointer);

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes,
                       cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes,
                            cudaMemcpyKind kind, cudaStream_t stream = nullptr);
cudaError_t cudaMemset(void *pointer, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void *pointer, int value, size_t bytes,
                            cudaStream_t stream = nullptr);

cudaError_t cudaStreamCreate(cudaStream_t *stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamQuery(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
                                unsigned flags = 0);
cudaError_t cudaStreamBeginCapture(cudaStream_t stream,
                                   cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph);
cudaError_t cudaStreamIsCapturing(cudaStream_t stream,
                                  cudaStreamCaptureStatus *status);
cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode *mode);

cudaError_t cudaEventCreate(cudaEvent_t *event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float *milliseconds, cudaEvent_t start,
                                 cudaEvent_t end);

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long flags = 0);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);

/// The templates the real header has for typed pointers.
template <typename T> cudaError_t cudaMalloc(T **pointer, size_t bytes) {
  return cudaMalloc(reinterpret_cast<void **>(pointer), bytes);
}
template <typename T> cudaError_t cudaMallocHost(T **pointer, size_t bytes) {
  return cudaMallocHost(reinterpret_cast<void **>(pointer), bytes);
}

// The device language: kernels, their launch, threads, barriers, warps,
// atomics, vector types and intrinsics.
#include "optgen/emu/Device.h"

#endif // OPTGEN_EMU_CUDA_RUNTIME_H
