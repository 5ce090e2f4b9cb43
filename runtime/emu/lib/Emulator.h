//===- Emulator.h - The emulated device's machinery -------------*- C++ -*-===//
//
// What the emulated CUDA runtime, cuBLASLt and NCCL share (not installed):
// devices and their sticky errors, the registry of device and pinned
// memory, streams with their workers, operations and their completions,
// stream capture and graphs, and how a call reports an error.
//
// Operations. Everything a stream executes is an Operation: a closure run
// on the stream's worker (or, replayed from a graph, on the worker of the
// stream the graph was launched on). An operation enqueued on a capturing
// stream becomes a node of the capture's graph instead, with the nodes the
// stream's frontier held as its dependencies.
//
// Happens-before, for ThreadSanitizer. Ordering the emulator establishes
// between operations (a stream's order, events, graph edges) is real
// synchronisation between the threads that run them; what CUDA does not
// order, the emulator does not either: each block's threads are fibers of
// their own (so are a replayed graph's nodes), switched without
// synchronisation, so that ThreadSanitizer reports what a GPU could race.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_EMU_EMULATOR_H
#define OPTGEN_EMU_EMULATOR_H

#include <cuda_runtime.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#if defined(__SANITIZE_THREAD__)
#define OPTGEN_EMU_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define OPTGEN_EMU_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define OPTGEN_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OPTGEN_EMU_ASAN 1
#endif
#endif

namespace optgen::emu {

// --- Errors ------------------------------------------------------------------

/// An API call's failure: CUDA's error and the emulator's account of it.
struct ApiError {
  cudaError_t error;
  std::string message;
};
[[noreturn]] void fail(cudaError_t error, std::string message);

/// Runs an API call's body: its ApiError becomes the call's result, the
/// thread's last error (cudaGetLastError) and the message
/// cudaGetErrorString appends to CUDA's text.
cudaError_t api(const std::function<void()> &body);

/// The message cudaGetErrorString appends for `error` on this thread.
void noteMessage(cudaError_t error, const std::string &message);

/// Prints "optgen emulated device: MESSAGE" to stderr.
void report(const std::string &message);

// --- Devices -------------------------------------------------------------------

class Stream;
class Capture;
struct GraphExec;

constexpr int kDefaultDevices = 8;
constexpr size_t kDeviceMemory = size_t(80) << 30;
/// sm_90's limits.
constexpr unsigned kMaxThreadsPerBlock = 1024;
constexpr unsigned kMaxBlockZ = 64;
constexpr unsigned kMaxGridX = 0x7fffffffu;
constexpr unsigned kMaxGridYZ = 65535;
constexpr size_t kMaxSharedPerBlock = 48 * 1024;
constexpr int kWarpSize = 32;

struct Device {
  int index = 0;
  /// The first fault of a kernel (or collective) on this device, which
  /// every later call returns, and its message.
  std::atomic<int> sticky{cudaSuccess};
  std::string stickyMessage;
  std::mutex mutex; ///< the fields below
  std::shared_ptr<Stream> legacy;
  /// Blocking streams (not created non-blocking), which the legacy stream
  /// synchronises with.
  std::vector<std::weak_ptr<Stream>> blocking;
  std::vector<std::weak_ptr<Stream>> streams;
  /// Live graph executables (for NCCL's check that none references a
  /// communicator being destroyed).
  std::set<GraphExec *> execs;
  size_t allocated = 0;
};

int deviceCount();
Device &device(int index);
/// The calling thread's current device (cudaSetDevice).
Device &currentDevice();
/// Fails with the device's sticky error, if it has one.
void checkSticky(const Device &device);
/// Makes `error` the device's sticky error (the first one stays).
void setSticky(Device &device, cudaError_t error, const std::string &message);

// --- Memory --------------------------------------------------------------------

enum class MemoryKind { Device, Pinned, Registered };

struct Allocation {
  uintptr_t base = 0;
  size_t size = 0;
  MemoryKind kind = MemoryKind::Device;
  int device = 0;
  bool freed = false;
};

/// The allocation (live or freed) that holds `address`; none for pageable
/// host memory.
std::optional<Allocation> lookup(const void *address);
/// "0x... (N bytes into device memory of device D, allocated N bytes)".
std::string describeAddress(const void *address);
/// Fails (cudaErrorInvalidValue) unless [address, address + bytes) lies in
/// live device memory of `device` (any device when -1); `what` names the
/// argument.
void requireDeviceMemory(const void *address, size_t bytes, int device,
                         const std::string &what);
/// Fails unless [address, address + bytes) is host memory (pageable or
/// pinned, not freed).
void requireHostMemory(const void *address, size_t bytes,
                       const std::string &what);
/// Pinned (cudaMallocHost, cudaHostRegister) rather than pageable.
bool isPinned(const void *address, size_t bytes);

// --- Operations and their completions ------------------------------------------

/// The end of one operation of one stream, which others wait for.
class Completion {
public:
  Completion(std::shared_ptr<Stream> stream, uint64_t sequence)
      : stream_(std::move(stream)), sequence_(sequence) {}
  /// Blocks until done. Asks a stream that runs only what is waited for
  /// (the legacy one) to run up to it first.
  void wait();
  bool done();
  void complete();
  /// The ThreadSanitizer sync object: the operation released it when done.
  void *sync() { return &sync_; }

private:
  std::weak_ptr<Stream> stream_;
  uint64_t sequence_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool done_ = false;
  char sync_ = 0;
};
using CompletionPtr = std::shared_ptr<Completion>;

struct Operation {
  /// "kernel 'adamw_kernel0' <<<(8,2,1), (256,1,1)>>>", for messages.
  std::string what;
  std::function<void()> run;
  /// A NCCL communicator the operation runs a collective of (graphs that
  /// hold one keep it from being destroyed).
  const void *communicator = nullptr;
  /// Held while the operation may run (a graph executable being replayed).
  std::shared_ptr<void> keep;
};

/// Runs `operation` as the device does: a fault inside it (an ApiError or
/// a DeviceFault thrown by device code) becomes the device's sticky error;
/// nothing runs on a device that has one.
void execute(Device &device, const Operation &operation);

// --- Streams -----------------------------------------------------------------

class Stream : public std::enable_shared_from_this<Stream> {
public:
  Stream(Device &device, unsigned flags, bool legacy);
  ~Stream();
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;

  Device &device;
  const unsigned flags;
  const bool legacy;
  bool blocking() const { return !legacy && !(flags & cudaStreamNonBlocking); }

  /// Queues `operation` after `waits` and the stream's earlier work;
  /// returns its completion.
  CompletionPtr submit(Operation operation, std::vector<CompletionPtr> waits);
  /// The completion of the last operation submitted (null before any).
  CompletionPtr last();
  /// The legacy stream runs an operation only once something waits for it
  /// (or for a later one).
  void demand(uint64_t sequence);
  /// Every operation submitted so far done.
  void drain();
  /// "stream 0x... of device D" or "the legacy default stream of device D".
  std::string name() const;

  /// Capture: the capture the stream takes part in (null when none), and
  /// the nodes its next operation depends on.
  std::shared_ptr<Capture> capture;
  std::vector<int> frontier;

private:
  struct Queued {
    Operation operation;
    std::vector<CompletionPtr> waits;
    CompletionPtr done;
    uint64_t sequence;
  };
  void work();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Queued> queue_;
  uint64_t submitted_ = 0, demanded_ = 0;
  CompletionPtr last_;
  bool stopping_ = false;
  std::thread worker_;
};

/// The stream a handle names (the legacy one for null and cudaStreamLegacy);
/// fails for a destroyed or unknown handle.
std::shared_ptr<Stream> streamOf(cudaStream_t handle);

/// Enqueues `operation` on `stream` as CUDA orders it: a node of its
/// capture when it captures; else after the legacy stream's earlier work
/// (a blocking stream) or every blocking stream's (the legacy one).
/// Fails when the legacy stream is used while a blocking stream of its
/// device captures. Returns the completion (null when captured).
CompletionPtr enqueue(Stream &stream, Operation operation,
                      std::vector<CompletionPtr> waits = {});

// --- Capture and graphs ------------------------------------------------------

struct Node {
  Operation operation;
  std::vector<int> dependencies;
};

class Capture {
public:
  Device *device = nullptr;
  std::weak_ptr<Stream> origin;
  std::thread::id thread;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  std::vector<Node> nodes;
  std::vector<std::weak_ptr<Stream>> streams;
  bool active = true;
  /// Why the capture was invalidated (empty while it is valid).
  std::string invalidated;
};

/// Invalidates `capture` with `why` (the first reason stays).
void invalidate(Capture &capture, const std::string &why);

/// Fails with cudaErrorStreamCaptureUnsupported, invalidating the captures
/// concerned, when the calling thread may not make a potentially unsafe
/// call (`call`) because of a capture in progress (its own capture unless
/// relaxed, or another thread's global one while this thread's mode is
/// global).
void checkCaptureSafe(const char *call);

struct GraphExec {
  Device *device = nullptr;
  std::vector<Node> nodes;
  /// A topological order of the nodes (dependencies first).
  std::vector<int> order;
  CompletionPtr lastLaunch;
};

/// The graph executables of `device` that hold an operation on
/// `communicator`.
int execsReferencing(Device &device, const void *communicator);

} // namespace optgen::emu

#endif // OPTGEN_EMU_EMULATOR_H
