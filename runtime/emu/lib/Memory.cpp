//===- Memory.cpp - Device and pinned memory of the emulated device -------===//
//
// Device memory comes from mappings of the emulator's own, never the host's
// heap, so that no host allocation ever lands where device memory was. Its
// bytes start as 0xff (a NaN in every float format), as memory cudaMalloc
// returns is not zeroed and a read of what nothing wrote should not pass
// for a zero. An allocation of kSlabbed bytes or more is a mapping of its
// own: it ends at a page boundary followed by an inaccessible page, so
// that a read or write past its end (beyond its 256-byte granule) faults
// at once, and cudaFree makes its pages inaccessible and keeps them
// reserved for a while (the most recent kQuarantined allocations), so that
// a use after free faults rather than reading memory given to someone
// else. A fault there is reported (what the address was) before the
// process ends. Smaller allocations share slabs (a mapping each is two of
// the kernel's map areas, of which a process has about 65530: a unit of
// 65536 parameters would not fit): never reused, refilled with 0xff when
// freed, a slab unmapped once all of its allocations are freed.
//
// Pinned host memory (cudaMallocHost, cudaHostRegister) is the host's
// heap, recorded so that copies know it from pageable memory.
//
//===----------------------------------------------------------------------===//

#include "Emulator.h"

#include <csignal>
#include <cstring>
#include <deque>
#include <sys/mman.h>
#include <unistd.h>

namespace optgen::emu {

namespace {

constexpr size_t kGranule = 256;
constexpr size_t kQuarantined = 4096;
constexpr size_t kSlabbed = 64 * 1024;
constexpr size_t kSlabBytes = 64 * 1024 * 1024;

struct Mapping {
  uintptr_t start = 0; ///< of the mapping, guard page included
  size_t length = 0;
};

struct Registry {
  std::mutex mutex;
  /// By base address: live allocations, and freed device ones still
  /// reserved.
  std::map<uintptr_t, Allocation> allocations;
  std::map<uintptr_t, Mapping> mappings;
  std::deque<uintptr_t> quarantine;
  /// Slabs by start: their mapping's length and live allocations; the one
  /// being filled, and where it is filled to.
  struct Slab {
    size_t length = 0, live = 0;
  };
  std::map<uintptr_t, Slab> slabs;
  uintptr_t filling = 0, filled = 0;
};

/// The slab holding `address`, under the registry's lock (none: end()).
std::map<uintptr_t, Registry::Slab>::iterator slabOf(Registry &r,
                                                     uintptr_t address) {
  auto after = r.slabs.upper_bound(address);
  if (after == r.slabs.begin())
    return r.slabs.end();
  auto slab = std::prev(after);
  return address < slab->first + slab->second.length ? slab : r.slabs.end();
}

Registry &registry() {
  static Registry *all = new Registry;
  return *all;
}

size_t pageSize() {
  static size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

/// The allocation holding `address`, under the registry's lock.
const Allocation *find(Registry &r, uintptr_t address) {
  auto after = r.allocations.upper_bound(address);
  if (after == r.allocations.begin())
    return nullptr;
  const Allocation &candidate = std::prev(after)->second;
  if (address >= candidate.base + std::max<size_t>(candidate.size, 1))
    return nullptr;
  return &candidate;
}

std::string hex(uintptr_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%lx", static_cast<unsigned long>(value));
  return text;
}

std::string kindName(const Allocation &allocation) {
  switch (allocation.kind) {
  case MemoryKind::Device:
    return "device memory of device " + std::to_string(allocation.device);
  case MemoryKind::Pinned:
    return "pinned host memory (cudaMallocHost)";
  case MemoryKind::Registered:
    return "pinned host memory (cudaHostRegister)";
  }
  return "memory";
}

std::string describe(const Allocation &allocation, uintptr_t address) {
  return hex(address) + ", " + std::to_string(address - allocation.base) +
         " bytes into " + (allocation.freed ? "freed " : "") +
         kindName(allocation) + " of " + std::to_string(allocation.size) +
         " bytes at " + hex(allocation.base);
}

// A fault on a guard page or on freed device memory: say what the address
// was, then die of the signal as the process would have.
struct sigaction previousHandler;

void onFault(int signal, siginfo_t *info, void *context) {
  Registry &r = registry();
  uintptr_t address = reinterpret_cast<uintptr_t>(info->si_addr);
  // A fault while the registry is locked is not the emulator's to explain.
  if (r.mutex.try_lock()) {
    for (const auto &[base, mapping] : r.mappings) {
      if (address < mapping.start || address >= mapping.start + mapping.length)
        continue;
      auto found = r.allocations.find(base);
      if (found == r.allocations.end())
        break;
      const Allocation &allocation = found->second;
      std::string message =
          allocation.freed
              ? "an access to device memory after cudaFree: " +
                    describe(allocation, address)
              : "an access past the end of device memory: " +
                    std::to_string(address - allocation.base -
                                   allocation.size) +
                    " bytes past " + std::to_string(allocation.size) +
                    " bytes of device memory of device " +
                    std::to_string(allocation.device) + " at " +
                    hex(allocation.base) +
                    " (a GPU reports cudaErrorIllegalAddress, or reads "
                    "another allocation)";
      report(message);
      break;
    }
    r.mutex.unlock();
  }
  sigaction(signal, &previousHandler, nullptr);
  static_cast<void>(context);
}

void installFaultHandler() {
  static bool installed = [] {
    struct sigaction action;
    std::memset(&action, 0, sizeof action);
    action.sa_sigaction = onFault;
    action.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &previousHandler);
    return true;
  }();
  static_cast<void>(installed);
}

void record(Registry &r, const Allocation &allocation) {
  // A freed allocation whose reserved pages this one reuses is forgotten.
  auto overlap = r.allocations.lower_bound(allocation.base);
  while (overlap != r.allocations.end() &&
         overlap->first < allocation.base + std::max<size_t>(allocation.size, 1))
    overlap = r.allocations.erase(overlap);
  r.allocations[allocation.base] = allocation;
}

} // namespace

std::optional<Allocation> lookup(const void *address) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const Allocation *found = find(r, reinterpret_cast<uintptr_t>(address));
  if (!found)
    return std::nullopt;
  return *found;
}

std::string describeAddress(const void *address) {
  std::optional<Allocation> allocation = lookup(address);
  uintptr_t at = reinterpret_cast<uintptr_t>(address);
  if (!allocation)
    return hex(at) + " (pageable host memory)";
  return describe(*allocation, at);
}

void requireDeviceMemory(const void *address, size_t bytes, int device,
                         const std::string &what) {
  if (bytes == 0)
    return;
  uintptr_t at = reinterpret_cast<uintptr_t>(address);
  std::optional<Allocation> allocation = lookup(address);
  if (!allocation || allocation->kind != MemoryKind::Device)
    fail(cudaErrorInvalidValue,
         what + " is " + describeAddress(address) +
             ", where device memory is required");
  if (allocation->freed)
    fail(cudaErrorInvalidValue, what + " is " + describe(*allocation, at) +
                                    ": a use after cudaFree");
  if (device >= 0 && allocation->device != device)
    fail(cudaErrorInvalidValue,
         what + " is " + describe(*allocation, at) +
             ", where memory of device " + std::to_string(device) +
             " is required (no peer access is enabled)");
  if (at + bytes > allocation->base + allocation->size)
    fail(cudaErrorInvalidValue,
         what + ": " + std::to_string(bytes) + " bytes at " +
             describe(*allocation, at) + " run past the allocation's end");
}

void requireHostMemory(const void *address, size_t bytes,
                       const std::string &what) {
  if (bytes == 0)
    return;
  std::optional<Allocation> allocation = lookup(address);
  if (allocation && allocation->kind == MemoryKind::Device)
    fail(cudaErrorInvalidValue,
         what + " is " + describe(*allocation,
                                  reinterpret_cast<uintptr_t>(address)) +
             ", where host memory is required");
}

bool isPinned(const void *address, size_t bytes) {
  std::optional<Allocation> allocation = lookup(address);
  return allocation && allocation->kind != MemoryKind::Device &&
         reinterpret_cast<uintptr_t>(address) + bytes <=
             allocation->base + allocation->size;
}

} // namespace optgen::emu

using namespace optgen::emu;

cudaError_t cudaMalloc(void **pointer, size_t bytes) {
  return api([&] {
    Device &here = currentDevice();
    checkSticky(here);
    checkCaptureSafe("cudaMalloc");
    if (!pointer)
      fail(cudaErrorInvalidValue, "cudaMalloc: a null pointer to return into");
    *pointer = nullptr;
    if (bytes == 0)
      return;
    {
      std::lock_guard<std::mutex> lock(here.mutex);
      if (bytes > kDeviceMemory - here.allocated)
        fail(cudaErrorMemoryAllocation,
             "cudaMalloc of " + std::to_string(bytes) + " bytes: device " +
                 std::to_string(here.index) + " has " +
                 std::to_string(kDeviceMemory - here.allocated) + " left");
      here.allocated += bytes;
    }
    installFaultHandler();
    size_t granules = (bytes + kGranule - 1) / kGranule * kGranule;
    Registry &r = registry();
    auto out = [&](const char *why) {
      std::lock_guard<std::mutex> lock(here.mutex);
      here.allocated -= bytes;
      fail(cudaErrorMemoryAllocation,
           "cudaMalloc of " + std::to_string(bytes) + " bytes: " + why);
    };
    uintptr_t base = 0;
    if (granules < kSlabbed) {
      std::lock_guard<std::mutex> lock(r.mutex);
      if (!r.filling || r.filled + granules > r.filling + kSlabBytes) {
        void *slab = mmap(nullptr, kSlabBytes, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (slab == MAP_FAILED)
          out("mmap failed");
        r.filling = r.filled = reinterpret_cast<uintptr_t>(slab);
        r.slabs[r.filling].length = kSlabBytes;
      }
      base = r.filled;
      r.filled += granules;
      ++r.slabs[r.filling].live;
      std::memset(reinterpret_cast<void *>(base), 0xff, granules);
      record(r, Allocation{base, bytes, MemoryKind::Device, here.index, false});
    } else {
      size_t page = pageSize();
      size_t data = (granules + page - 1) / page * page;
      size_t length = data + page;
      void *start = mmap(nullptr, length, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (start == MAP_FAILED)
        out("mmap failed");
      uintptr_t begin = reinterpret_cast<uintptr_t>(start);
      mprotect(reinterpret_cast<void *>(begin + data), page, PROT_NONE);
      // The allocation ends where the guard page begins.
      base = begin + data - granules;
      std::memset(reinterpret_cast<void *>(base), 0xff, granules);
      std::lock_guard<std::mutex> lock(r.mutex);
      record(r, Allocation{base, bytes, MemoryKind::Device, here.index, false});
      r.mappings[base] = Mapping{begin, length};
    }
    *pointer = reinterpret_cast<void *>(base);
  });
}

cudaError_t cudaFree(void *pointer) {
  return api([&] {
    if (!pointer)
      return;
    checkCaptureSafe("cudaFree");
    std::optional<Allocation> allocation = lookup(pointer);
    uintptr_t at = reinterpret_cast<uintptr_t>(pointer);
    if (!allocation || allocation->kind != MemoryKind::Device ||
        allocation->base != at)
      fail(cudaErrorInvalidValue,
           "cudaFree of " + describeAddress(pointer) +
               ", which is not the start of device memory from cudaMalloc");
    if (allocation->freed)
      fail(cudaErrorInvalidValue,
           "cudaFree of " + describe(*allocation, at) + ": freed twice");
    Device &owner = device(allocation->device);
    // cudaFree synchronises the device: nothing may still use the memory.
    cudaError_t synced = api([&] {
      int previous = 0;
      cudaGetDevice(&previous);
      cudaSetDevice(owner.index);
      cudaDeviceSynchronize();
      cudaSetDevice(previous);
    });
    static_cast<void>(synced); // a sticky error is reported below
    Registry &r = registry();
    {
      std::lock_guard<std::mutex> lock(r.mutex);
      Allocation &entry = r.allocations[at];
      entry.freed = true;
      auto slab = slabOf(r, at);
      if (slab != r.slabs.end()) {
        std::memset(pointer, 0xff, (entry.size + kGranule - 1) / kGranule * kGranule);
        if (--slab->second.live == 0 && slab->first != r.filling) {
          uintptr_t start = slab->first;
          size_t length = slab->second.length;
          munmap(reinterpret_cast<void *>(start), length);
          r.allocations.erase(r.allocations.lower_bound(start),
                              r.allocations.lower_bound(start + length));
          r.slabs.erase(slab);
        }
      } else {
        const Mapping &mapping = r.mappings[at];
        mprotect(reinterpret_cast<void *>(mapping.start), mapping.length,
                 PROT_NONE);
        r.quarantine.push_back(at);
        if (r.quarantine.size() > kQuarantined) {
          uintptr_t oldest = r.quarantine.front();
          r.quarantine.pop_front();
          const Mapping &old = r.mappings[oldest];
          munmap(reinterpret_cast<void *>(old.start), old.length);
          r.mappings.erase(oldest);
          r.allocations.erase(oldest);
        }
      }
    }
    {
      std::lock_guard<std::mutex> lock(owner.mutex);
      owner.allocated -= allocation->size;
    }
    checkSticky(owner);
  });
}

cudaError_t cudaMallocHost(void **pointer, size_t bytes) {
  return cudaHostAlloc(pointer, bytes, cudaHostAllocDefault);
}

cudaError_t cudaHostAlloc(void **pointer, size_t bytes, unsigned flags) {
  return api([&] {
    checkCaptureSafe("cudaHostAlloc");
    if (!pointer)
      fail(cudaErrorInvalidValue, "cudaHostAlloc: a null pointer to return into");
    if (flags != cudaHostAllocDefault)
      fail(cudaErrorInvalidValue,
           "cudaHostAlloc: the emulator knows only cudaHostAllocDefault");
    *pointer = nullptr;
    if (bytes == 0)
      return;
    void *memory = std::aligned_alloc(kGranule,
                                      (bytes + kGranule - 1) / kGranule * kGranule);
    if (!memory)
      fail(cudaErrorMemoryAllocation,
           "cudaHostAlloc of " + std::to_string(bytes) + " bytes");
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    record(r, Allocation{reinterpret_cast<uintptr_t>(memory), bytes,
                         MemoryKind::Pinned, -1, false});
    *pointer = memory;
  });
}

cudaError_t cudaFreeHost(void *pointer) {
  return api([&] {
    if (!pointer)
      return;
    checkCaptureSafe("cudaFreeHost");
    std::optional<Allocation> allocation = lookup(pointer);
    if (!allocation || allocation->kind != MemoryKind::Pinned ||
        allocation->base != reinterpret_cast<uintptr_t>(pointer))
      fail(cudaErrorInvalidValue,
           "cudaFreeHost of " + describeAddress(pointer) +
               ", which is not memory from cudaMallocHost");
    // Pending copies may still read it: the device finishes first.
    cudaDeviceSynchronize();
    Registry &r = registry();
    {
      std::lock_guard<std::mutex> lock(r.mutex);
      r.allocations.erase(allocation->base);
    }
    std::free(pointer);
  });
}

cudaError_t cudaHostRegister(void *pointer, size_t bytes, unsigned flags) {
  return api([&] {
    checkCaptureSafe("cudaHostRegister");
    if (!pointer || bytes == 0 || flags != cudaHostRegisterDefault)
      fail(cudaErrorInvalidValue,
           "cudaHostRegister: a null pointer, no bytes, or flags other than "
           "cudaHostRegisterDefault");
    if (lookup(pointer))
      fail(cudaErrorInvalidValue,
           "cudaHostRegister of " + describeAddress(pointer) +
               ", which is registered or device memory already");
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    record(r, Allocation{reinterpret_cast<uintptr_t>(pointer), bytes,
                         MemoryKind::Registered, -1, false});
  });
}

cudaError_t cudaHostUnregister(void *pointer) {
  return api([&] {
    std::optional<Allocation> allocation = lookup(pointer);
    if (!allocation || allocation->kind != MemoryKind::Registered ||
        allocation->base != reinterpret_cast<uintptr_t>(pointer))
      fail(cudaErrorInvalidValue, "cudaHostUnregister of " +
                                      describeAddress(pointer) +
                                      ", which cudaHostRegister did not register");
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.allocations.erase(allocation->base);
  });
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *attributes,
                                     const void *pointer) {
  return api([&] {
    if (!attributes)
      fail(cudaErrorInvalidValue, "cudaPointerGetAttributes: null attributes");
    std::optional<Allocation> allocation = lookup(pointer);
    attributes->type = cudaMemoryTypeUnregistered;
    attributes->device = -2;
    attributes->devicePointer = nullptr;
    attributes->hostPointer = const_cast<void *>(pointer);
    if (!allocation)
      return;
    if (allocation->freed)
      fail(cudaErrorInvalidValue,
           "cudaPointerGetAttributes of " + describeAddress(pointer) +
               ": a use after cudaFree");
    if (allocation->kind == MemoryKind::Device) {
      attributes->type = cudaMemoryTypeDevice;
      attributes->device = allocation->device;
      attributes->devicePointer = const_cast<void *>(pointer);
      attributes->hostPointer = nullptr;
    } else {
      attributes->type = cudaMemoryTypeHost;
      attributes->device = currentDevice().index;
      attributes->devicePointer = const_cast<void *>(pointer);
    }
  });
}

cudaError_t cudaMemGetInfo(size_t *free, size_t *total) {
  return api([&] {
    Device &here = currentDevice();
    if (!free || !total)
      fail(cudaErrorInvalidValue, "cudaMemGetInfo: null results");
    std::lock_guard<std::mutex> lock(here.mutex);
    *total = kDeviceMemory;
    *free = kDeviceMemory - here.allocated;
  });
}
