//===- Kernels.cpp - Kernels on the emulated device -----------------------===//
//
// A launch is checked as a GPU checks it (sm_90's grid, block and shared
// memory limits, the stream and its device, the pointers it is given) and
// enqueued as one operation that runs the grid's blocks one after another.
// A block's threads are fibers with stacks of their own, scheduled by the
// worker: each runs until it returns or meets a barrier; a barrier opens
// when every thread it waits for has arrived. What cannot open (a barrier
// some threads returned from, a warp operation whose lanes never all
// arrive) is a fault of the kernel.
//
// Under ThreadSanitizer each thread is a fiber of ThreadSanitizer's too,
// switched without synchronisation: the only order between the threads of
// a kernel is its barriers' (released and acquired by each thread), and
// none between its blocks, so a missing __syncthreads or two blocks
// writing one address are reported. Each block then runs on a new system
// thread and new stacks, whose memory ThreadSanitizer knows to be fresh
// (`__shared__` memory is thread-local): a block never seems to race with
// the one before it.
//
//===----------------------------------------------------------------------===//

#include "Emulator.h"

#include <cstdio>
#include <cstring>
#include <cxxabi.h>
#include <sys/mman.h>

#if OPTGEN_EMU_TSAN
#include <sanitizer/tsan_interface.h>
#endif
#if OPTGEN_EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if !defined(__x86_64__)
#error "the emulated device's fibers switch x86-64 stacks"
#endif

// Saves the callee-saved registers, the x87 control word and MXCSR on the
// current stack, stores the stack pointer in *save and continues on the
// stack `load` (which switchStacks saved, or makeStack prepared).
extern "C" void optgen_emu_switch(void **save, void *load);
// Where a new stack starts: calls r13 (the entry) with r12 (its argument).
extern "C" void optgen_emu_fiber_start();
asm(R"(
  .text
  .globl optgen_emu_switch
  .type optgen_emu_switch, @function
optgen_emu_switch:
  .cfi_startproc
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $16, %rsp
  fnstcw (%rsp)
  stmxcsr 8(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  fldcw (%rsp)
  ldmxcsr 8(%rsp)
  addq $16, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .cfi_endproc
  .size optgen_emu_switch, .-optgen_emu_switch

  .globl optgen_emu_fiber_start
  .type optgen_emu_fiber_start, @function
optgen_emu_fiber_start:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size optgen_emu_fiber_start, .-optgen_emu_fiber_start
  .section .note.GNU-stack,"",@progbits
  .text
)");

namespace optgen::emu {

thread_local std::atomic<const ThreadPosition *> currentPosition{nullptr};

namespace {

/// A fault of device code: ends the kernel, sticky on its device.
struct DeviceFault {
  int error;
  std::string message;
};

#if OPTGEN_EMU_ASAN
constexpr size_t kStackBytes = size_t(1) << 20;
#elif OPTGEN_EMU_TSAN
// Each block's stacks are mapped anew, and ThreadSanitizer clears the
// shadow of every mapping: small ones keep that cheap.
constexpr size_t kStackBytes = size_t(64) << 10;
#else
constexpr size_t kStackBytes = size_t(256) << 10;
#endif

enum class State : int { Ready, AtBarrier, AtWarp, Done };

struct Block;

struct Fiber {
  Block *block = nullptr;
  void *sp = nullptr;
  char *stack = nullptr;
  ThreadPosition position{};
  std::atomic<State> state{State::Ready};
  // A warp meeting: the mask and operation the thread arrived with, its
  // value, and (once the meeting opens) every lane's.
  std::atomic<unsigned> mask{0};
  std::atomic<const char *> operation{nullptr};
  std::atomic<uint64_t> value{0};
  std::atomic<uint64_t> lanes[32];
#if OPTGEN_EMU_TSAN
  void *tsan = nullptr;
#endif
#if OPTGEN_EMU_ASAN
  void *fakeStack = nullptr;
  /// The stack pointer of its last switch back to the scheduler from
  /// fiberMain: the frames it left poisoned lie above it.
  char *finalSp = nullptr;
#endif
};

/// One block of a launch as it runs.
struct Block {
  const char *kernel = nullptr;
  const std::function<void()> *body = nullptr;
  std::vector<Fiber> fibers;
  void *schedulerSp = nullptr;
  std::atomic<unsigned> generation{0};
  /// The first fault of a thread of the block (its mutex orders the
  /// thread's write before the scheduler's read).
  std::mutex faultMutex;
  bool faulted = false;
  DeviceFault fault;
  std::unique_ptr<char[]> barrierSyncs, warpSyncs;
  /// ThreadSanitizer's sync objects: the barrier's (one per parity of its
  /// generation, so that a thread already past it cannot release into the
  /// one others still acquire), each warp's, and the kernel's end.
  char *barrierSync = nullptr;
  char *warpSync = nullptr;
  void *kernelDone = nullptr;
#if OPTGEN_EMU_TSAN
  void *schedulerFiber = nullptr;
#endif
#if OPTGEN_EMU_ASAN
  const void *schedulerBottom = nullptr;
  size_t schedulerSize = 0;
#endif
};

/// The running thread of a block (atomic for the reason currentPosition
/// is).
thread_local std::atomic<Fiber *> running{nullptr};

Fiber &self() {
  Fiber *fiber = running.load(std::memory_order_relaxed);
  if (!fiber)
    throw DeviceFault{cudaErrorIllegalInstruction,
                      "a device function was called outside a kernel"};
  return *fiber;
}

void recordFault(Block &block, DeviceFault fault) {
  std::lock_guard<std::mutex> lock(block.faultMutex);
  if (!block.faulted) {
    block.faulted = true;
    block.fault = std::move(fault);
  }
}

bool faulted(Block &block) {
  std::lock_guard<std::mutex> lock(block.faultMutex);
  return block.faulted;
}

/// Stacks for one block's threads, each with an inaccessible page below
/// it (an overflow faults). Kept by the worker between blocks, except
/// under ThreadSanitizer, where each block gets new ones.
struct Stacks {
  char *memory = nullptr;
  size_t count = 0, length = 0;
#if OPTGEN_EMU_ASAN
  /// Per stack, the lowest address that its last thread may have left
  /// poisoned (the redzones of frames that never returned): the next
  /// thread unpoisons from there, not the whole stack. Unpoisoning the
  /// whole megabyte per thread and block made a launch of 10^5 blocks of
  /// 256 threads take a quarter of an hour under ASan.
  std::vector<char *> poisonedFrom;
#endif

  ~Stacks() { release(); }
  void release() {
    if (memory)
      munmap(memory, length);
    memory = nullptr;
    count = 0;
  }
  char *operator[](size_t i) const { return memory + i * (kStackBytes + 4096) + 4096; }
  void reserve(size_t threads) {
    if (threads <= count)
      return;
    release();
    length = threads * (kStackBytes + 4096);
    void *made = mmap(nullptr, length, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (made == MAP_FAILED)
      throw DeviceFault{cudaErrorLaunchOutOfResources,
                        "no memory for the stacks of " +
                            std::to_string(threads) + " threads"};
    memory = static_cast<char *>(made);
    count = threads;
    for (size_t i = 0; i < threads; ++i)
      mprotect((*this)[i] - 4096, 4096, PROT_NONE);
#if OPTGEN_EMU_ASAN
    // A new mapping may lie where an earlier one left its poison.
    poisonedFrom.resize(threads);
    for (size_t i = 0; i < threads; ++i)
      poisonedFrom[i] = (*this)[i];
#endif
  }
};

void fiberMain(Fiber *fiber);

/// The stack pointer a new fiber starts from (see optgen_emu_switch).
void *makeStack(char *stack, Fiber *fiber) {
  uintptr_t top = (reinterpret_cast<uintptr_t>(stack) + kStackBytes) & ~uintptr_t(15);
  uint64_t *frame = reinterpret_cast<uint64_t *>(top - 16);
  frame[-1] = reinterpret_cast<uint64_t>(&optgen_emu_fiber_start);
  frame[-2] = 0; // rbp
  frame[-3] = 0; // rbx
  frame[-4] = reinterpret_cast<uint64_t>(fiber);     // r12: the argument
  frame[-5] = reinterpret_cast<uint64_t>(&fiberMain); // r13: the entry
  frame[-6] = 0; // r14
  frame[-7] = 0; // r15
  uint16_t control;
  asm volatile("fnstcw %0" : "=m"(control));
  uint32_t mxcsr = __builtin_ia32_stmxcsr();
  std::memset(&frame[-9], 0, 16);
  std::memcpy(&frame[-9], &control, sizeof control);
  std::memcpy(&frame[-8], &mxcsr, sizeof mxcsr);
  return &frame[-9];
}

/// From the scheduler into `fiber`, until it yields back.
void resume(Block &block, Fiber &fiber) {
  running.store(&fiber, std::memory_order_relaxed);
  currentPosition.store(&fiber.position, std::memory_order_relaxed);
#if OPTGEN_EMU_ASAN
  void *fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, fiber.stack, kStackBytes);
#endif
  // Read before the switch, as the scheduler: after it, ThreadSanitizer
  // takes accesses for the fiber's.
  void *to = fiber.sp;
#if OPTGEN_EMU_TSAN
  __tsan_switch_to_fiber(fiber.tsan, 1 /* no synchronisation */);
#endif
  optgen_emu_switch(&block.schedulerSp, to);
#if OPTGEN_EMU_ASAN
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
  running.store(nullptr, std::memory_order_relaxed);
  currentPosition.store(nullptr, std::memory_order_relaxed);
}

/// From `fiber` back to its block's scheduler; returns when resumed.
void yield(Fiber &fiber) {
  Block &block = *fiber.block;
#if OPTGEN_EMU_ASAN
  __sanitizer_start_switch_fiber(&fiber.fakeStack, block.schedulerBottom,
                                 block.schedulerSize);
#endif
  void *to = block.schedulerSp;
#if OPTGEN_EMU_TSAN
  __tsan_switch_to_fiber(block.schedulerFiber, 1);
#endif
  optgen_emu_switch(&fiber.sp, to);
#if OPTGEN_EMU_ASAN
  __sanitizer_finish_switch_fiber(fiber.fakeStack, nullptr, nullptr);
#endif
}

void fiberMain(Fiber *fiber) {
#if OPTGEN_EMU_TSAN
  // A fiber reused from an earlier block: what the block's thread set up
  // (and the work before the kernel) comes first.
  __tsan_acquire(fiber);
#endif
  Block &block = *fiber->block;
#if OPTGEN_EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &block.schedulerBottom,
                                  &block.schedulerSize);
#endif
  try {
    (*block.body)();
  } catch (const DeviceFault &fault) {
    recordFault(block, fault);
  } catch (const std::exception &error) {
    recordFault(block, DeviceFault{cudaErrorLaunchFailure,
                                   std::string("device code threw: ") +
                                       error.what()});
  }
  // The thread's last accesses to its block come before its release of
  // the kernel's end, after which the block may be freed.
  void **save = &fiber->sp;
  void *scheduler = block.schedulerSp;
#if OPTGEN_EMU_ASAN
  __sanitizer_start_switch_fiber(nullptr, block.schedulerBottom,
                                 block.schedulerSize);
  char *sp;
  asm volatile("mov %%rsp, %0" : "=r"(sp));
  fiber->finalSp = sp;
#endif
#if OPTGEN_EMU_TSAN
  void *schedulerFiber = block.schedulerFiber;
  void *kernelDone = block.kernelDone;
  fiber->state.store(State::Done, std::memory_order_relaxed);
  __tsan_release(kernelDone);
  __tsan_switch_to_fiber(schedulerFiber, 1);
#else
  fiber->state.store(State::Done, std::memory_order_relaxed);
#endif
  optgen_emu_switch(save, scheduler);
  __builtin_unreachable();
}

std::string dimsOf(dim3 d) {
  return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," +
         std::to_string(d.z) + ")";
}
std::string dimsOf(uint3 d) { return dimsOf(dim3(d.x, d.y, d.z)); }

std::string where(const Block &block, const Fiber &fiber) {
  return "kernel '" + std::string(block.kernel) + "', block " +
         dimsOf(fiber.position.blockIndex) + ", thread " +
         dimsOf(fiber.position.threadIndex);
}

[[noreturn]] void blockFault(Block &block, const Fiber &fiber,
                             const std::string &message) {
  throw DeviceFault{cudaErrorLaunchFailure, where(block, fiber) + ": " + message};
}

/// Opens the meetings that every lane they wait for has reached; returns
/// whether one opened.
bool openWarpMeetings(Block &block) {
  bool opened = false;
  size_t threads = block.fibers.size();
  for (size_t first = 0; first < threads; first += kWarpSize) {
    size_t end = std::min(threads, first + kWarpSize);
    for (size_t i = first; i < end; ++i) {
      Fiber &fiber = block.fibers[i];
      if (fiber.state.load(std::memory_order_relaxed) != State::AtWarp)
        continue;
      unsigned mask = fiber.mask.load(std::memory_order_relaxed);
      const char *operation = fiber.operation.load(std::memory_order_relaxed);
      bool complete = true;
      for (unsigned lane = 0; lane < 32; ++lane) {
        if (!(mask >> lane & 1u))
          continue;
        size_t other = first + lane;
        if (other >= end)
          blockFault(block, fiber,
                     std::string(operation) + " with mask " +
                         std::to_string(mask) + " names lane " +
                         std::to_string(lane) + ", which the block does not have");
        State state = block.fibers[other].state.load(std::memory_order_relaxed);
        if (state == State::Done)
          blockFault(block, fiber,
                     std::string(operation) + " waits for lane " +
                         std::to_string(lane) +
                         " of its mask, which has returned (CUDA Programming "
                         "Guide, Warp Shuffle Functions: every lane of the "
                         "mask must execute it)");
        if (state != State::AtWarp) {
          complete = false;
          continue;
        }
        const Fiber &peer = block.fibers[other];
        if (peer.mask.load(std::memory_order_relaxed) != mask ||
            std::strcmp(peer.operation.load(std::memory_order_relaxed),
                        operation) != 0)
          blockFault(block, fiber,
                     std::string(operation) + " with mask " +
                         std::to_string(mask) + " meets lane " +
                         std::to_string(lane) + " in " +
                         peer.operation.load(std::memory_order_relaxed) +
                         " with mask " +
                         std::to_string(peer.mask.load(std::memory_order_relaxed)) +
                         ": the lanes of a mask meet in one operation");
      }
      if (!complete)
        continue;
      uint64_t values[32] = {};
      for (unsigned lane = 0; lane < 32; ++lane)
        if (mask >> lane & 1u)
          values[lane] =
              block.fibers[first + lane].value.load(std::memory_order_relaxed);
      for (unsigned lane = 0; lane < 32; ++lane) {
        if (!(mask >> lane & 1u))
          continue;
        Fiber &member = block.fibers[first + lane];
        for (unsigned l = 0; l < 32; ++l)
          member.lanes[l].store(values[l], std::memory_order_relaxed);
        member.state.store(State::Ready, std::memory_order_relaxed);
      }
      opened = true;
    }
  }
  return opened;
}

#if OPTGEN_EMU_TSAN
/// ThreadSanitizer's fibers for the threads of blocks, each with a stack of
/// its own, made once per worker and reused: making and destroying them
/// per block (and clearing the shadow of its stacks) made a block cost
/// tens of milliseconds. Block b's thread i is fiber i of set b % kSets. A
/// fiber reused is one thread to ThreadSanitizer, so the threads of blocks
/// kSets apart with one index (and, in a replayed graph, of kernels the
/// worker runs one after another) seem ordered: what they race on is
/// found between the nearer blocks, and in graphs as captured from the
/// streams (the same tests without graphs). Its stack staying its own,
/// no fiber seems to race with another on stack memory.
struct TsanFibers {
  static constexpr unsigned kSets = 4;
  struct Set {
    std::vector<void *> fibers;
    Stacks stacks;
  };
  Set sets[kSets];
  Set &forBlock(unsigned block, size_t threads) {
    Set &set = sets[block % kSets];
    while (set.fibers.size() < threads)
      set.fibers.push_back(__tsan_create_fiber(0));
    set.stacks.reserve(set.fibers.size());
    return set;
  }
};
#endif

/// Runs one block to its end on this thread; throws DeviceFault.
void runBlock(Block &block, Stacks &stacks, uint3 index, dim3 blockSize,
              dim3 gridSize, void *const *tsanFibers) {
  static_cast<void>(tsanFibers);
  size_t threads = static_cast<size_t>(blockSize.x) * blockSize.y * blockSize.z;
  stacks.reserve(threads);
  std::vector<Fiber> fibers(threads);
  block.fibers.swap(fibers);
  block.barrierSyncs.reset(new char[2]);
  block.warpSyncs.reset(new char[2 * (threads / kWarpSize + 1)]);
  block.barrierSync = block.barrierSyncs.get();
  block.warpSync = block.warpSyncs.get();
#if OPTGEN_EMU_TSAN
  block.schedulerFiber = __tsan_get_current_fiber();
#endif
#if OPTGEN_EMU_ASAN
  // What each thread leaves poisoned, for the next block's thread on its
  // stack: the frames above its last switch if it returned (less a margin
  // for the switch's own), the whole stack if the block ended in a fault
  // (threads left inside the kernel).
  struct RecordPoison {
    Block &block;
    Stacks &stacks;
    ~RecordPoison() {
      bool whole = faulted(block);
      for (size_t i = 0; i < block.fibers.size(); ++i) {
        const Fiber &fiber = block.fibers[i];
        bool done = fiber.state.load(std::memory_order_relaxed) == State::Done;
        stacks.poisonedFrom[i] = whole || !done || !fiber.finalSp
                                     ? stacks[i]
                                     : std::max(stacks[i], fiber.finalSp - 256);
      }
    }
  } recordPoison{block, stacks};
#endif
  for (size_t i = 0; i < threads; ++i) {
    Fiber &fiber = block.fibers[i];
    fiber.block = &block;
    fiber.stack = stacks[i];
#if OPTGEN_EMU_ASAN
    __asan_unpoison_memory_region(stacks.poisonedFrom[i],
                                  static_cast<size_t>(fiber.stack + kStackBytes -
                                                      stacks.poisonedFrom[i]));
#endif
    fiber.sp = makeStack(fiber.stack, &fiber);
    unsigned linear = static_cast<unsigned>(i);
    fiber.position.threadIndex = uint3{linear % blockSize.x,
                                       linear / blockSize.x % blockSize.y,
                                       linear / (blockSize.x * blockSize.y)};
    fiber.position.blockIndex = index;
    fiber.position.blockSize = blockSize;
    fiber.position.gridSize = gridSize;
    fiber.position.linear = linear;
    fiber.position.lane = linear % kWarpSize;
#if OPTGEN_EMU_TSAN
    fiber.tsan = tsanFibers[i];
    __tsan_release(&fiber);
#endif
  }

  for (;;) {
    bool ran = false;
    for (Fiber &fiber : block.fibers) {
      if (fiber.state.load(std::memory_order_relaxed) != State::Ready)
        continue;
      resume(block, fiber);
      ran = true;
      if (faulted(block)) {
        std::lock_guard<std::mutex> lock(block.faultMutex);
        throw block.fault;
      }
    }
    if (ran)
      continue;
    size_t done = 0, atBarrier = 0;
    for (const Fiber &fiber : block.fibers) {
      State state = fiber.state.load(std::memory_order_relaxed);
      done += state == State::Done;
      atBarrier += state == State::AtBarrier;
    }
    if (done == threads)
      return;
    if (openWarpMeetings(block))
      continue;
    if (atBarrier + done == threads) {
      const Fiber *waiting = nullptr;
      for (const Fiber &fiber : block.fibers)
        if (fiber.state.load(std::memory_order_relaxed) == State::AtBarrier)
          waiting = &fiber;
      if (done)
        blockFault(block, *waiting,
                   "__syncthreads() reached by " + std::to_string(atBarrier) +
                       " threads of the block while " + std::to_string(done) +
                       " returned: a barrier in code that not every thread "
                       "of the block reaches (CUDA Programming Guide, "
                       "__syncthreads: undefined, it may hang)");
      block.generation.fetch_add(1, std::memory_order_relaxed);
      for (Fiber &fiber : block.fibers)
        fiber.state.store(State::Ready, std::memory_order_relaxed);
      continue;
    }
    // Some threads wait at the block's barrier and others in a warp
    // meeting that cannot open: a GPU hangs.
    for (const Fiber &fiber : block.fibers)
      if (fiber.state.load(std::memory_order_relaxed) == State::AtWarp)
        blockFault(block, fiber,
                   std::string(fiber.operation.load(std::memory_order_relaxed)) +
                       " waits for lanes that wait at __syncthreads(): the "
                       "block cannot go on (a GPU hangs)");
  }
}

/// Runs every block of a launch; throws ApiError with the fault.
void runGrid(const char *kernel, dim3 grid, dim3 blockSize,
             const std::function<void()> &body) {
#if OPTGEN_EMU_TSAN
  static thread_local TsanFibers tsanFibers;
#else
  static thread_local Stacks reused;
#endif
  std::unique_ptr<char> kernelDone(new char(0));
#if OPTGEN_EMU_TSAN
  // Every block's memory, kept until the kernel's end orders it after all
  // of its threads: freed earlier, it would seem to race with them.
  std::vector<std::unique_ptr<Block>> finished;
#endif
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        auto block = std::make_unique<Block>();
        Block &current = *block;
        current.kernel = kernel;
        current.body = &body;
        current.kernelDone = kernelDone.get();
        try {
#if OPTGEN_EMU_TSAN
          // A new thread: its thread-local `__shared__` memory is fresh to
          // ThreadSanitizer, where the block before this one left its
          // accesses.
          std::exception_ptr failure;
          size_t threads =
              static_cast<size_t>(blockSize.x) * blockSize.y * blockSize.z;
          TsanFibers::Set &set =
              tsanFibers.forBlock(x + grid.x * (y + grid.y * z), threads);
          std::thread([&] {
            try {
              runBlock(current, set.stacks, uint3{x, y, z}, blockSize, grid,
                       set.fibers.data());
            } catch (...) {
              failure = std::current_exception();
            }
          }).join();
          if (failure)
            std::rethrow_exception(failure);
#else
          runBlock(current, reused, uint3{x, y, z}, blockSize, grid, nullptr);
#endif
        } catch (const DeviceFault &fault) {
#if OPTGEN_EMU_TSAN
          __tsan_acquire(kernelDone.get());
#endif
          throw ApiError{static_cast<cudaError_t>(fault.error), fault.message};
        }
#if OPTGEN_EMU_TSAN
        finished.push_back(std::move(block));
#endif
      }
#if OPTGEN_EMU_TSAN
  __tsan_acquire(kernelDone.get()); // what follows the kernel sees its writes
#endif
}

std::string hex(const void *pointer) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", pointer);
  return text;
}

} // namespace

// --- Device functions ----------------------------------------------------------

void deviceFault(int error, const char *message) {
  Fiber &fiber = self();
  throw DeviceFault{error, where(*fiber.block, fiber) + ": " + message};
}

void checkAlignment(const void *address, size_t alignment, const char *type) {
  if (reinterpret_cast<uintptr_t>(address) % alignment == 0)
    return;
  Fiber &fiber = self();
  throw DeviceFault{cudaErrorMisalignedAddress,
                    where(*fiber.block, fiber) + ": " + type + " access at " +
                        hex(address) + ", which is not aligned to " +
                        std::to_string(alignment) +
                        " bytes (CUDA Programming Guide, Device Memory "
                        "Accesses: an access of N bytes needs an address "
                        "that is a multiple of N)"};
}

void syncthreads() {
  Fiber &fiber = self();
#if OPTGEN_EMU_TSAN
  Block &block = *fiber.block;
  unsigned generation = block.generation.load(std::memory_order_relaxed);
  __tsan_release(&block.barrierSync[generation % 2]);
#endif
  fiber.state.store(State::AtBarrier, std::memory_order_relaxed);
  yield(fiber);
#if OPTGEN_EMU_TSAN
  __tsan_acquire(&block.barrierSync[generation % 2]);
#endif
}

WarpValues warpMeet(unsigned mask, const char *operation, uint64_t value) {
  Fiber &fiber = self();
  Block &block = *fiber.block;
  unsigned lane = fiber.position.lane;
  if (!(mask >> lane & 1u))
    deviceFault(cudaErrorLaunchFailure,
                (std::string(operation) + " with a mask that leaves out the "
                                          "calling lane (CUDA Programming "
                                          "Guide, Warp Shuffle Functions)")
                    .c_str());
#if OPTGEN_EMU_TSAN
  char *sync = &block.warpSync[2 * (fiber.position.linear / kWarpSize)];
  __tsan_release(sync);
#endif
  fiber.mask.store(mask, std::memory_order_relaxed);
  fiber.operation.store(operation, std::memory_order_relaxed);
  fiber.value.store(value, std::memory_order_relaxed);
  fiber.state.store(State::AtWarp, std::memory_order_relaxed);
  yield(fiber);
#if OPTGEN_EMU_TSAN
  __tsan_acquire(sync);
#endif
  WarpValues values;
  for (unsigned l = 0; l < 32; ++l)
    values.lanes[l] = fiber.lanes[l].load(std::memory_order_relaxed);
  static_cast<void>(block);
  return values;
}

unsigned activeLanes() {
  Fiber &fiber = self();
  Block &block = *fiber.block;
  size_t first = fiber.position.linear / kWarpSize * kWarpSize;
  unsigned mask = 0;
  for (unsigned lane = 0; lane < 32 && first + lane < block.fibers.size(); ++lane)
    if (block.fibers[first + lane].state.load(std::memory_order_relaxed) !=
        State::Done)
      mask |= 1u << lane;
  return mask;
}

int shuffleSource(unsigned mask, int source, int width) {
  if (width <= 0 || width > kWarpSize || (width & (width - 1)))
    deviceFault(cudaErrorLaunchFailure,
                "a shuffle's width must be a power of two up to 32");
  if (!(mask >> source & 1u))
    deviceFault(cudaErrorLaunchFailure,
                ("a shuffle reads lane " + std::to_string(source) +
                 ", which its mask leaves out: the value is undefined (CUDA "
                 "Programming Guide, Warp Shuffle Functions)")
                    .c_str());
  return source;
}

const char *kernelName(const char *prettyFunction) {
  // "const char* optgen::emu::nameOf() [with auto Kernel = NAME]" (GCC) or
  // "const char *optgen::emu::nameOf() [Kernel = &NAME]" (clang).
  std::string text = prettyFunction;
  size_t at = text.find("Kernel = ");
  std::string name = at == std::string::npos ? text : text.substr(at + 9);
  if (!name.empty() && name.back() == ']')
    name.pop_back();
  if (!name.empty() && name.front() == '&')
    name.erase(0, 1);
  size_t paren = name.find('(');
  if (paren != std::string::npos && name.compare(0, 1, "(") != 0)
    name.erase(paren);
  return strdup(name.c_str()); // once per kernel, for the process's life
}

int launch(KernelLaunch kernel) {
  return api([&] {
    std::shared_ptr<Stream> stream =
        streamOf(static_cast<cudaStream_t>(kernel.stream));
    Device &device = stream->device;
    checkSticky(device);
    std::string what = "kernel '" + std::string(kernel.name) + "' <<<" +
                       dimsOf(kernel.grid) + ", " + dimsOf(kernel.block) + ">>>";
    if (&device != &currentDevice())
      fail(cudaErrorInvalidResourceHandle,
           what + " launched on " + stream->name() + " while device " +
               std::to_string(currentDevice().index) + " is current");
    const dim3 &b = kernel.block, &g = kernel.grid;
    uint64_t threads = uint64_t(b.x) * b.y * b.z;
    if (b.x == 0 || b.y == 0 || b.z == 0 || threads > kMaxThreadsPerBlock ||
        b.x > kMaxThreadsPerBlock || b.y > kMaxThreadsPerBlock ||
        b.z > kMaxBlockZ)
      fail(cudaErrorInvalidConfiguration,
           what + ": a block of " + std::to_string(threads) +
               " threads; sm_90 allows 1 to 1024 threads, at most 1024 in x "
               "and y and 64 in z (CUDA Programming Guide, Compute "
               "Capabilities)");
    if (g.x == 0 || g.y == 0 || g.z == 0 || g.x > kMaxGridX ||
        g.y > kMaxGridYZ || g.z > kMaxGridYZ)
      fail(cudaErrorInvalidConfiguration,
           what + ": sm_90 allows grids of 1 to 2^31 - 1 blocks in x and 1 "
                  "to 65535 in y and z (CUDA Programming Guide, Compute "
                  "Capabilities)");
    if (kernel.sharedBytes > kMaxSharedPerBlock)
      fail(cudaErrorInvalidValue,
           what + ": " + std::to_string(kernel.sharedBytes) +
               " bytes of dynamic shared memory, beyond the 48 KiB a launch "
               "has without opting in");
    // A pointer the kernel cannot use faults when the kernel runs.
    std::string bad;
    for (size_t i = 0; i < kernel.pointers.size() && bad.empty(); ++i) {
      const void *pointer = kernel.pointers[i];
      if (!pointer)
        continue;
      std::optional<Allocation> allocation = lookup(pointer);
      std::string argument = what + "'s pointer argument " + std::to_string(i + 1);
      if (!allocation)
        bad = argument + " is " + describeAddress(pointer) +
              ", which a kernel cannot read (a GPU faults with "
              "cudaErrorIllegalAddress)";
      else if (allocation->freed)
        bad = argument + " is " + describeAddress(pointer) +
              ": a use after cudaFree";
      else if (allocation->kind == MemoryKind::Device &&
               allocation->device != device.index)
        bad = argument + " is " + describeAddress(pointer) +
              ", memory of another device (no peer access is enabled)";
    }
    auto body = std::make_shared<std::function<void()>>(std::move(kernel.body));
    const char *name = kernel.name;
    dim3 grid = kernel.grid, block = kernel.block;
    enqueue(*stream, Operation{what,
                               [name, grid, block, body, bad] {
                                 if (!bad.empty())
                                   fail(cudaErrorIllegalAddress, bad);
                                 runGrid(name, grid, block, *body);
                               },
                               nullptr,
                               {}});
  });
}

} // namespace optgen::emu
