//===- Device.h - The device language of the emulated device ----*- C++ -*-===//
//
// What CUDA C++ gives device code, for the host compiler: the function
// qualifiers, a kernel's launch, threadIdx and its peers, __syncthreads,
// __shared__ memory, warp shuffles and votes, atomics, the vector types and
// the intrinsics optgen's kernels call. Included by cuda_runtime.h.
//
// How a kernel runs. Its blocks run one after another on the worker of the
// stream it was launched on; the threads of a block are fibers of that
// worker, each running until it reaches a barrier (__syncthreads, a warp
// operation) or returns, so that a thread races ahead of the others as far
// as the code lets it: a missing barrier reads what another thread has not
// written yet. A barrier reached by some threads of a block while others
// returned, a warp operation whose mask names a lane that does not join it,
// a vector access at an address not aligned to its size, or a __trap() is
// a fault of the kernel: the device's sticky error, as on a GPU.
//
// `__shared__` variables are thread-local statics of the worker, which runs
// one block at a time: one copy per block, as CUDA has. `extern __shared__`
// (dynamic shared memory) is not supported by the emulation.
//
// Device code must be compiled without contraction into fused
// multiply-adds (-ffp-contract=off, which the emulated targets' interface
// carries), so that __fmul_rn and __fadd_rn are never fused, as CUDA
// promises of them.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_EMU_DEVICE_H
#define OPTGEN_EMU_DEVICE_H

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

// --- Qualifiers ------------------------------------------------------------

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __shared__ static thread_local
#define __restrict__ __restrict

struct uint3 {
  unsigned x, y, z;
};

namespace optgen::emu {

/// What threadIdx, blockIdx, blockDim and gridDim read in the running
/// device thread.
struct ThreadPosition {
  uint3 threadIndex, blockIndex;
  dim3 blockSize, gridSize;
  /// The thread's index in its block (x fastest) and its lane.
  unsigned linear, lane;
};

/// The running device thread's position; set at every switch into one of
/// a block's threads, null outside kernels. (Atomic: the threads of a
/// block, which share the variable, are threads of their own to
/// ThreadSanitizer.)
extern thread_local std::atomic<const ThreadPosition *> currentPosition;

inline const ThreadPosition &position() {
  return *currentPosition.load(std::memory_order_relaxed);
}
inline bool inKernel() {
  return currentPosition.load(std::memory_order_relaxed) != nullptr;
}

/// Ends the running kernel with `error` (sticky on its device) and
/// `message`, the emulator's account of the fault. Called in device code.
[[noreturn]] void deviceFault(int error, const char *message);
/// A fault unless `address` is a multiple of `alignment` (device code only).
void checkAlignment(const void *address, size_t alignment, const char *type);

/// Every lane's value at a warp operation, by lane.
struct WarpValues {
  uint64_t lanes[32];
};

/// The block barrier, and a meeting of the lanes of `mask` of the caller's
/// warp, each giving `value`; returns every lane's (those outside `mask`
/// are 0). `operation` names the call: lanes that meet in different
/// operations, or with different masks, are a fault.
void syncthreads();
WarpValues warpMeet(unsigned mask, const char *operation, uint64_t value);
/// The lanes of the caller's warp that have not returned.
unsigned activeLanes();

/// A kernel's launch as the stream receives it: its name (for messages),
/// geometry, the body every thread runs (the kernel on its arguments,
/// which the launch copied), and the arguments that are pointers, which
/// must be device memory of the stream's device (or pinned host memory).
struct KernelLaunch {
  const char *name;
  dim3 grid, block;
  size_t sharedBytes;
  void *stream;
  std::function<void()> body;
  std::vector<const void *> pointers;
};
/// Checks the launch (geometry, stream, pointers) and enqueues it; the
/// result is what cudaGetLastError then returns.
int launch(KernelLaunch launch);

/// The kernel's name from a function signature naming it.
const char *kernelName(const char *prettyFunction);
template <auto Kernel> const char *nameOf() {
  static const char *name = kernelName(__PRETTY_FUNCTION__);
  return name;
}

template <typename T> void collectPointer(std::vector<const void *> &into,
                                          const T &argument) {
  if constexpr (std::is_pointer_v<T>)
    into.push_back(static_cast<const void *>(argument));
}

template <auto Kernel, typename... Params, typename... Args>
void launchKernelOf(void (*)(Params...), dim3 grid, dim3 block,
                    size_t sharedBytes, void *stream, Args &&...args) {
  // The arguments are copied now, converted to the kernel's parameter
  // types, as a launch (and a captured one) copies them.
  auto arguments = std::make_shared<std::tuple<std::decay_t<Params>...>>(
      std::forward<Args>(args)...);
  KernelLaunch kernel{nameOf<Kernel>(), grid, block, sharedBytes, stream,
                      [arguments] { std::apply(Kernel, *arguments); }, {}};
  std::apply(
      [&](const auto &...each) { (collectPointer(kernel.pointers, each), ...); },
      *arguments);
  launch(std::move(kernel));
}

/// `Kernel<<<grid, block, sharedBytes, stream>>>(args...)`.
template <auto Kernel, typename... Args>
void launchKernel(dim3 grid, dim3 block, size_t sharedBytes, void *stream,
                  Args &&...args) {
  launchKernelOf<Kernel>(Kernel, grid, block, sharedBytes, stream,
                         std::forward<Args>(args)...);
}

template <typename T> uint64_t toBits(T value) {
  static_assert(sizeof(T) <= sizeof(uint64_t) &&
                    std::is_trivially_copyable_v<T>,
                "a warp operation moves values of at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof value);
  return bits;
}
template <typename T> T fromBits(uint64_t bits) {
  T value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// The lane a shuffle reads, within the caller's segment of `width` lanes.
int shuffleSource(unsigned mask, int source, int width);

} // namespace optgen::emu

#define threadIdx (::optgen::emu::position().threadIndex)
#define blockIdx (::optgen::emu::position().blockIndex)
#define blockDim (::optgen::emu::position().blockSize)
#define gridDim (::optgen::emu::position().gridSize)
inline constexpr int warpSize = 32;

// --- Barriers and warps -------------------------------------------------------

inline void __syncthreads() { ::optgen::emu::syncthreads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  ::optgen::emu::warpMeet(mask, "__syncwarp", 0);
}
inline unsigned __activemask() { return ::optgen::emu::activeLanes(); }

template <typename T>
T __shfl_sync(unsigned mask, T value, int source, int width = 32) {
  const ::optgen::emu::WarpValues meeting = ::optgen::emu::warpMeet(
      mask, "__shfl_sync", ::optgen::emu::toBits(value));
  unsigned lane = ::optgen::emu::position().lane;
  int base = static_cast<int>(lane) & ~(width - 1);
  return ::optgen::emu::fromBits<T>(meeting.lanes[::optgen::emu::shuffleSource(
      mask, base + (source & (width - 1)), width)]);
}
template <typename T>
T __shfl_up_sync(unsigned mask, T value, unsigned delta, int width = 32) {
  const ::optgen::emu::WarpValues meeting = ::optgen::emu::warpMeet(
      mask, "__shfl_up_sync", ::optgen::emu::toBits(value));
  int lane = static_cast<int>(::optgen::emu::position().lane);
  int base = lane & ~(width - 1);
  int source = lane - static_cast<int>(delta);
  return ::optgen::emu::fromBits<T>(meeting.lanes[::optgen::emu::shuffleSource(
      mask, source < base ? lane : source, width)]);
}
template <typename T>
T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width = 32) {
  const ::optgen::emu::WarpValues meeting = ::optgen::emu::warpMeet(
      mask, "__shfl_down_sync", ::optgen::emu::toBits(value));
  int lane = static_cast<int>(::optgen::emu::position().lane);
  int base = lane & ~(width - 1);
  int source = lane + static_cast<int>(delta);
  return ::optgen::emu::fromBits<T>(meeting.lanes[::optgen::emu::shuffleSource(
      mask, source >= base + width ? lane : source, width)]);
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T value, int laneMask, int width = 32) {
  const ::optgen::emu::WarpValues meeting = ::optgen::emu::warpMeet(
      mask, "__shfl_xor_sync", ::optgen::emu::toBits(value));
  int lane = static_cast<int>(::optgen::emu::position().lane);
  int base = lane & ~(width - 1);
  int source = lane ^ laneMask;
  return ::optgen::emu::fromBits<T>(meeting.lanes[::optgen::emu::shuffleSource(
      mask, source >= base + width ? lane : source, width)]);
}

inline unsigned __ballot_sync(unsigned mask, int predicate) {
  const ::optgen::emu::WarpValues meeting =
      ::optgen::emu::warpMeet(mask, "__ballot_sync", predicate != 0);
  unsigned ballot = 0;
  for (unsigned lane = 0; lane < 32; ++lane)
    if ((mask >> lane & 1u) && meeting.lanes[lane])
      ballot |= 1u << lane;
  return ballot;
}
inline int __all_sync(unsigned mask, int predicate) {
  return (__ballot_sync(mask, predicate) & mask) == mask;
}
inline int __any_sync(unsigned mask, int predicate) {
  return __ballot_sync(mask, predicate) != 0;
}

[[noreturn]] inline void __trap() {
  ::optgen::emu::deviceFault(cudaErrorLaunchFailure, "__trap() was called");
}
// (ThreadSanitizer models no fences, which GCC says of each: under it the
// emulation's sequentially consistent atomics order memory alone.)
#if defined(__SANITIZE_THREAD__)
inline void __threadfence() {}
inline void __threadfence_block() {}
#else
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
#endif
/// A thread that waits for others (another stream's kernel) lets the
/// host's cores run them.
inline void __nanosleep(unsigned nanoseconds) {
  std::this_thread::sleep_for(std::chrono::nanoseconds(nanoseconds));
}

// --- Atomics (naturally aligned) --------------------------------------------------

// CUDA's atomics are relaxed and device code orders memory with fences;
// ThreadSanitizer does not model fences, so the emulation's atomics are
// sequentially consistent: what they order is real synchronisation to it.
// (A missing fence is not found: docs/EMULATION.md.)
#define OPTGEN_EMU_ORDER __ATOMIC_SEQ_CST

namespace optgen::emu {
template <typename T> T *atomicTarget(T *address) {
  if (inKernel())
    checkAlignment(address, sizeof(T), "an atomic");
  return address;
}
/// A read-modify-write of a float or double by compare-and-swap of its bits.
template <typename T, typename Bits, typename Update>
T atomicUpdate(T *address, Update update) {
  Bits *word = reinterpret_cast<Bits *>(atomicTarget(address));
  Bits old = __atomic_load_n(word, OPTGEN_EMU_ORDER);
  for (;;) {
    T value = fromBits<T>(old);
    Bits next = static_cast<Bits>(toBits(update(value)));
    if (__atomic_compare_exchange_n(word, &old, next, false, OPTGEN_EMU_ORDER,
                                    OPTGEN_EMU_ORDER))
      return value;
  }
}
} // namespace optgen::emu

#define OPTGEN_EMU_INTEGER_ATOMICS(T)                                          \
  inline T atomicAdd(T *a, T v) {                                             \
    return __atomic_fetch_add(::optgen::emu::atomicTarget(a), v,               \
                              OPTGEN_EMU_ORDER);                              \
  }                                                                            \
  inline T atomicSub(T *a, T v) {                                             \
    return __atomic_fetch_sub(::optgen::emu::atomicTarget(a), v,               \
                              OPTGEN_EMU_ORDER);                              \
  }                                                                            \
  inline T atomicExch(T *a, T v) {                                            \
    return __atomic_exchange_n(::optgen::emu::atomicTarget(a), v,              \
                               OPTGEN_EMU_ORDER);                             \
  }                                                                            \
  inline T atomicAnd(T *a, T v) {                                             \
    return __atomic_fetch_and(::optgen::emu::atomicTarget(a), v,               \
                              OPTGEN_EMU_ORDER);                              \
  }                                                                            \
  inline T atomicOr(T *a, T v) {                                              \
    return __atomic_fetch_or(::optgen::emu::atomicTarget(a), v,                \
                             OPTGEN_EMU_ORDER);                               \
  }                                                                            \
  inline T atomicXor(T *a, T v) {                                             \
    return __atomic_fetch_xor(::optgen::emu::atomicTarget(a), v,               \
                              OPTGEN_EMU_ORDER);                              \
  }                                                                            \
  inline T atomicCAS(T *a, T compare, T v) {                                  \
    __atomic_compare_exchange_n(::optgen::emu::atomicTarget(a), &compare, v,   \
                                false, OPTGEN_EMU_ORDER, OPTGEN_EMU_ORDER);    \
    return compare;                                                            \
  }                                                                            \
  inline T atomicMax(T *a, T v) {                                             \
    T old = __atomic_load_n(::optgen::emu::atomicTarget(a), OPTGEN_EMU_ORDER); \
    while (old < v && !__atomic_compare_exchange_n(a, &old, v, false,          \
                                                   OPTGEN_EMU_ORDER,           \
                                                   OPTGEN_EMU_ORDER)) {        \
    }                                                                          \
    return old;                                                                \
  }                                                                            \
  inline T atomicMin(T *a, T v) {                                             \
    T old = __atomic_load_n(::optgen::emu::atomicTarget(a), OPTGEN_EMU_ORDER); \
    while (old > v && !__atomic_compare_exchange_n(a, &old, v, false,          \
                                                   OPTGEN_EMU_ORDER,           \
                                                   OPTGEN_EMU_ORDER)) {        \
    }                                                                          \
    return old;                                                                \
  }
OPTGEN_EMU_INTEGER_ATOMICS(int)
OPTGEN_EMU_INTEGER_ATOMICS(unsigned)
OPTGEN_EMU_INTEGER_ATOMICS(unsigned long long)
OPTGEN_EMU_INTEGER_ATOMICS(long long)
#undef OPTGEN_EMU_INTEGER_ATOMICS

inline float atomicAdd(float *a, float v) {
  return ::optgen::emu::atomicUpdate<float, uint32_t>(
      a, [v](float x) { return x + v; });
}
inline double atomicAdd(double *a, double v) {
  return ::optgen::emu::atomicUpdate<double, uint64_t>(
      a, [v](double x) { return x + v; });
}
inline float atomicExch(float *a, float v) {
  return ::optgen::emu::atomicUpdate<float, uint32_t>(a,
                                                      [v](float) { return v; });
}

// --- Vector types (CUDA's alignments; a misaligned access faults) ---------------

// A vector type whose alignment exceeds its element's is checked wherever
// device code reads or writes one through memory: the copy from a
// reference and the assignment to one, which is how
// `reinterpret_cast<float4 *>(p)[i]` reads and writes.
#define OPTGEN_EMU_VECTOR2(name, T, alignment)                                 \
  struct alignas(alignment) name {                                            \
    T x, y;                                                                    \
    name() = default;                                                          \
    constexpr name(T vx, T vy) : x(vx), y(vy) {}                               \
    name(const name &other) : x(checked(other).x), y(other.y) {}               \
    name &operator=(const name &other) {                                       \
      checked(*this);                                                          \
      checked(other);                                                          \
      x = other.x;                                                             \
      y = other.y;                                                             \
      return *this;                                                            \
    }                                                                          \
    static const name &checked(const name &at) {                               \
      if (::optgen::emu::inKernel())                                           \
        ::optgen::emu::checkAlignment(&at, alignment, #name);                  \
      return at;                                                               \
    }                                                                          \
  };                                                                           \
  inline name make_##name(T x, T y) { return name(x, y); }
#define OPTGEN_EMU_VECTOR4(name, T, alignment)                                 \
  struct alignas(alignment) name {                                            \
    T x, y, z, w;                                                              \
    name() = default;                                                          \
    constexpr name(T vx, T vy, T vz, T vw) : x(vx), y(vy), z(vz), w(vw) {}     \
    name(const name &other)                                                    \
        : x(checked(other).x), y(other.y), z(other.z), w(other.w) {}           \
    name &operator=(const name &other) {                                       \
      checked(*this);                                                          \
      checked(other);                                                          \
      x = other.x;                                                             \
      y = other.y;                                                             \
      z = other.z;                                                             \
      w = other.w;                                                             \
      return *this;                                                            \
    }                                                                          \
    static const name &checked(const name &at) {                               \
      if (::optgen::emu::inKernel())                                           \
        ::optgen::emu::checkAlignment(&at, alignment, #name);                  \
      return at;                                                               \
    }                                                                          \
  };                                                                           \
  inline name make_##name(T x, T y, T z, T w) { return name(x, y, z, w); }
OPTGEN_EMU_VECTOR2(float2, float, 8)
OPTGEN_EMU_VECTOR4(float4, float, 16)
OPTGEN_EMU_VECTOR2(double2, double, 16)
OPTGEN_EMU_VECTOR2(int2, int, 8)
OPTGEN_EMU_VECTOR4(int4, int, 16)
OPTGEN_EMU_VECTOR2(uint2, unsigned, 8)
OPTGEN_EMU_VECTOR4(uint4, unsigned, 16)
OPTGEN_EMU_VECTOR2(ushort2, unsigned short, 4)
OPTGEN_EMU_VECTOR4(ushort4, unsigned short, 8)
OPTGEN_EMU_VECTOR2(longlong2, long long, 16)
OPTGEN_EMU_VECTOR2(ulonglong2, unsigned long long, 16)
#undef OPTGEN_EMU_VECTOR2
#undef OPTGEN_EMU_VECTOR4

// --- Intrinsics -----------------------------------------------------------------

// IEEE operations rounded to nearest, never contracted (see the file
// comment).
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __frcp_rn(float a) { return 1.0f / a; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
inline float rsqrtf(float a) { return 1.0f / std::sqrt(a); }

inline int __float_as_int(float x) { return ::optgen::emu::fromBits<int>(::optgen::emu::toBits(x)); }
inline float __int_as_float(int x) { return ::optgen::emu::fromBits<float>(::optgen::emu::toBits(x)); }
inline unsigned __float_as_uint(float x) { return ::optgen::emu::fromBits<unsigned>(::optgen::emu::toBits(x)); }
inline float __uint_as_float(unsigned x) { return ::optgen::emu::fromBits<float>(::optgen::emu::toBits(x)); }
inline long long __double_as_longlong(double x) { return ::optgen::emu::fromBits<long long>(::optgen::emu::toBits(x)); }
inline double __longlong_as_double(long long x) { return ::optgen::emu::fromBits<double>(::optgen::emu::toBits(x)); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __ffs(int x) { return __builtin_ffs(x); }

template <typename T> T __ldg(const T *address) { return *address; }

#endif // OPTGEN_EMU_DEVICE_H
