//===- Nccl.cpp - NCCL of the emulated device -----------------------------===//

#include "Emulator.h"

#include <nccl.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <unistd.h>

namespace optgen::emu {
namespace {

struct NcclError {
  ncclResult_t result;
  std::string message;
};
[[noreturn]] void ncclFail(ncclResult_t result, std::string message) {
  throw NcclError{result, std::move(message)};
}

thread_local std::string lastNcclError;
thread_local int groupDepth = 0;

std::chrono::milliseconds patience() {
  if (const char *text = std::getenv("OPTGEN_EMU_NCCL_TIMEOUT")) {
    char *end = nullptr;
    double seconds = std::strtod(text, &end);
    if (end != text && *end == '\0' && seconds > 0)
      return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  }
  return std::chrono::milliseconds(60000);
}

enum class Kind { AllReduce, ReduceScatter, AllGather, Reduce, Broadcast };

const char *kindName(Kind kind) {
  switch (kind) {
  case Kind::AllReduce:
    return "ncclAllReduce";
  case Kind::ReduceScatter:
    return "ncclReduceScatter";
  case Kind::AllGather:
    return "ncclAllGather";
  case Kind::Reduce:
    return "ncclReduce";
  case Kind::Broadcast:
    return "ncclBroadcast";
  }
  return "a collective";
}

size_t sizeOf(ncclDataType_t type) {
  switch (type) {
  case ncclInt8:
  case ncclUint8:
    return 1;
  case ncclFloat16:
  case ncclBfloat16:
    return 2;
  case ncclInt32:
  case ncclUint32:
  case ncclFloat32:
    return 4;
  case ncclInt64:
  case ncclUint64:
  case ncclFloat64:
    return 8;
  }
  return 0;
}

const char *typeName(ncclDataType_t type) {
  switch (type) {
  case ncclInt8:
    return "ncclInt8";
  case ncclUint8:
    return "ncclUint8";
  case ncclInt32:
    return "ncclInt32";
  case ncclUint32:
    return "ncclUint32";
  case ncclInt64:
    return "ncclInt64";
  case ncclUint64:
    return "ncclUint64";
  case ncclFloat16:
    return "ncclFloat16";
  case ncclFloat32:
    return "ncclFloat32";
  case ncclFloat64:
    return "ncclFloat64";
  case ncclBfloat16:
    return "ncclBfloat16";
  }
  return "an unknown type";
}

const char *opName(ncclRedOp_t op) {
  switch (op) {
  case ncclSum:
    return "ncclSum";
  case ncclProd:
    return "ncclProd";
  case ncclMax:
    return "ncclMax";
  case ncclMin:
    return "ncclMin";
  case ncclAvg:
    return "ncclAvg";
  }
  return "an unknown reduction";
}

/// One rank's call of a collective.
struct Call {
  Kind kind;
  size_t count;
  ncclDataType_t type;
  ncclRedOp_t op;
  int root;
  const void *send;
  void *recv;

  std::string describe() const {
    std::string text = std::string(kindName(kind)) + " of " +
                       std::to_string(count) + " " + typeName(type);
    if (kind != Kind::AllGather && kind != Kind::Broadcast)
      text += std::string(" (") + opName(op) + ")";
    if (kind == Kind::Reduce || kind == Kind::Broadcast)
      text += " rooted at rank " + std::to_string(root);
    return text;
  }
  bool agrees(const Call &other) const {
    bool rooted = kind == Kind::Reduce || kind == Kind::Broadcast;
    bool reduces = kind != Kind::AllGather && kind != Kind::Broadcast;
    return kind == other.kind && count == other.count && type == other.type &&
           (!reduces || op == other.op) && (!rooted || root == other.root);
  }
};

/// Every rank's call of one collective (the k-th of each).
struct Meeting {
  std::vector<std::optional<Call>> calls;
  int arrived = 0, departed = 0;
  bool done = false;
  ncclResult_t failure = ncclSuccess;
  std::string why;
};

struct Clique;

} // namespace
} // namespace optgen::emu

using namespace optgen::emu;

struct ncclComm {
  std::shared_ptr<Clique> clique;
  int rank = 0, size = 1, device = 0;
  std::atomic<int> asyncError{ncclSuccess};
  std::mutex mutex; ///< lastError, pending
  std::condition_variable changed;
  std::string lastError;
  /// Collectives enqueued and not yet run (ncclCommDestroy waits for them).
  int pending = 0;
  /// Collectives run so far: which meeting the next one joins.
  std::atomic<uint64_t> executed{0};
  std::atomic<bool> aborted{false}, destroyed{false};
};

namespace optgen::emu {
namespace {

struct Clique {
  std::mutex mutex;
  std::condition_variable changed;
  int size = 0;
  std::vector<ncclComm *> ranks;
  int joined = 0;
  std::map<uint64_t, Meeting> meetings;
};

struct Registry {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<Clique>> cliques;
  std::set<const ncclComm *> comms;
};
Registry &registry() {
  static Registry *all = new Registry;
  return *all;
}

ncclResult_t ncclApi(ncclComm_t comm, const std::function<void()> &body) {
  try {
    body();
    return ncclSuccess;
  } catch (const NcclError &error) {
    lastNcclError = error.message;
    if (comm) {
      std::lock_guard<std::mutex> lock(comm->mutex);
      comm->lastError = error.message;
    }
    return error.result;
  } catch (const ApiError &error) {
    lastNcclError = error.message;
    return ncclUnhandledCudaError;
  }
}

ncclComm &commOf(ncclComm_t comm, const char *call) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (!comm || !r.comms.count(comm))
    ncclFail(ncclInvalidArgument,
             std::string(call) + " of a communicator that is not live");
  if (comm->destroyed.load())
    ncclFail(ncclInvalidArgument,
             std::string(call) + " of a destroyed communicator");
  return *comm;
}

/// The collective failed on this rank: its async error says so from now.
void failCollective(ncclComm &comm, ncclResult_t result,
                    const std::string &why) {
  int expected = ncclSuccess;
  comm.asyncError.compare_exchange_strong(expected, result);
  {
    std::lock_guard<std::mutex> lock(comm.mutex);
    comm.lastError = why;
  }
  report("NCCL, rank " + std::to_string(comm.rank) + ": " + why);
}

float loadFloat(const void *base, ncclDataType_t type, size_t i) {
  switch (type) {
  case ncclBfloat16:
    return __bfloat162float(static_cast<const __nv_bfloat16 *>(base)[i]);
  case ncclFloat16:
    return __half2float(static_cast<const __half *>(base)[i]);
  default:
    return static_cast<const float *>(base)[i];
  }
}
void storeFloat(void *base, ncclDataType_t type, size_t i, float value) {
  switch (type) {
  case ncclBfloat16:
    static_cast<__nv_bfloat16 *>(base)[i] = __float2bfloat16_rn(value);
    break;
  case ncclFloat16:
    static_cast<__half *>(base)[i] = __float2half_rn(value);
    break;
  default:
    static_cast<float *>(base)[i] = value;
  }
}

template <typename T> T combine(T a, T b, ncclRedOp_t op) {
  switch (op) {
  case ncclSum:
  case ncclAvg:
    return a + b;
  case ncclProd:
    return a * b;
  case ncclMax:
    return a < b ? b : a;
  case ncclMin:
    return b < a ? b : a;
  }
  return a;
}

/// `count` elements reduced over every rank's `inputs`, each at `offset`
/// elements, into `out`: in rank order, rounding to the type after each
/// step (a 16-bit float sum rounds at every addition).
void reduce(const std::vector<const void *> &inputs, size_t offset,
            size_t count, ncclDataType_t type, ncclRedOp_t op, void *out) {
  size_t n = inputs.size();
  auto each = [&](auto zero) {
    using T = decltype(zero);
    T *result = static_cast<T *>(out);
    for (size_t i = 0; i < count; ++i) {
      T acc = static_cast<const T *>(inputs[0])[offset + i];
      for (size_t r = 1; r < n; ++r)
        acc = combine(acc, static_cast<const T *>(inputs[r])[offset + i], op);
      if (op == ncclAvg)
        acc = static_cast<T>(acc / static_cast<T>(n));
      result[i] = acc;
    }
  };
  switch (type) {
  case ncclInt8:
    return each(int8_t{});
  case ncclUint8:
    return each(uint8_t{});
  case ncclInt32:
    return each(int32_t{});
  case ncclUint32:
    return each(uint32_t{});
  case ncclInt64:
    return each(int64_t{});
  case ncclUint64:
    return each(uint64_t{});
  case ncclFloat64:
    return each(double{});
  case ncclFloat32:
    return each(float{});
  case ncclFloat16:
  case ncclBfloat16:
    for (size_t i = 0; i < count; ++i) {
      float acc = loadFloat(inputs[0], type, offset + i);
      for (size_t r = 1; r < n; ++r) {
        acc = combine(acc, loadFloat(inputs[r], type, offset + i), op);
        storeFloat(out, type, i, acc); // rounded at each step
        acc = loadFloat(out, type, i);
      }
      if (op == ncclAvg)
        acc /= static_cast<float>(n);
      storeFloat(out, type, i, acc);
    }
  }
}

/// Every rank's results, computed from every rank's inputs before any is
/// written (a collective may be in place).
void compute(Meeting &meeting) {
  size_t n = meeting.calls.size();
  const Call &first = *meeting.calls[0];
  size_t element = sizeOf(first.type);
  size_t count = first.count;
  std::vector<const void *> inputs;
  for (const std::optional<Call> &call : meeting.calls)
    inputs.push_back(call->send);
  std::vector<std::pair<void *, std::vector<unsigned char>>> writes;
  switch (first.kind) {
  case Kind::AllReduce: {
    std::vector<unsigned char> result(count * element);
    reduce(inputs, 0, count, first.type, first.op, result.data());
    for (const std::optional<Call> &call : meeting.calls)
      writes.push_back({call->recv, result});
    break;
  }
  case Kind::ReduceScatter:
    for (size_t r = 0; r < n; ++r) {
      std::vector<unsigned char> part(count * element);
      reduce(inputs, r * count, count, first.type, first.op, part.data());
      writes.push_back({meeting.calls[r]->recv, std::move(part)});
    }
    break;
  case Kind::AllGather: {
    std::vector<unsigned char> whole(n * count * element);
    for (size_t r = 0; r < n; ++r)
      std::memcpy(whole.data() + r * count * element, inputs[r], count * element);
    for (const std::optional<Call> &call : meeting.calls)
      writes.push_back({call->recv, whole});
    break;
  }
  case Kind::Reduce: {
    std::vector<unsigned char> result(count * element);
    reduce(inputs, 0, count, first.type, first.op, result.data());
    writes.push_back({meeting.calls[static_cast<size_t>(first.root)]->recv,
                      std::move(result)});
    break;
  }
  case Kind::Broadcast: {
    const unsigned char *from = static_cast<const unsigned char *>(
        inputs[static_cast<size_t>(first.root)]);
    for (const std::optional<Call> &call : meeting.calls)
      writes.push_back({call->recv, std::vector<unsigned char>(
                                        from, from + count * element)});
    break;
  }
  }
  for (auto &[to, bytes] : writes)
    if (!bytes.empty())
      std::memcpy(to, bytes.data(), bytes.size());
}

/// Runs this rank's part of the collective (on the device's side); a
/// collective enqueued outside capture was `pending` until now.
void runCollective(ncclComm &comm, const Call &call, std::atomic<bool> &pending) {
  if (pending.exchange(false)) {
    std::lock_guard<std::mutex> lock(comm.mutex);
    --comm.pending;
    comm.changed.notify_all();
  }
  if (comm.aborted.load())
    return;
  Clique &clique = *comm.clique;
  uint64_t sequence = comm.executed.fetch_add(1);
  std::string what = call.describe() + " (collective " +
                     std::to_string(sequence + 1) + " of the communicator)";
  std::unique_lock<std::mutex> lock(clique.mutex);
  Meeting &meeting = clique.meetings[sequence];
  if (meeting.calls.empty())
    meeting.calls.resize(static_cast<size_t>(clique.size));
  meeting.calls[static_cast<size_t>(comm.rank)] = call;
  ++meeting.arrived;
  // A rank that will not come: aborted, or its communicator destroyed.
  auto gone = [&]() -> int {
    for (int r = 0; r < clique.size; ++r)
      if (!meeting.calls[static_cast<size_t>(r)] &&
          (clique.ranks[static_cast<size_t>(r)]->aborted.load() ||
           clique.ranks[static_cast<size_t>(r)]->destroyed.load()))
        return r;
    return -1;
  };
  if (meeting.arrived == clique.size) {
    for (int r = 1; r < clique.size && meeting.failure == ncclSuccess; ++r)
      if (!meeting.calls[static_cast<size_t>(r)]->agrees(*meeting.calls[0])) {
        meeting.failure = ncclInvalidUsage;
        meeting.why = "the ranks disagree on collective " +
                      std::to_string(sequence + 1) +
                      " of the communicator: rank 0 calls " +
                      meeting.calls[0]->describe() + ", rank " +
                      std::to_string(r) + " " +
                      meeting.calls[static_cast<size_t>(r)]->describe() +
                      " (NCCL needs every rank to call the same collectives "
                      "in the same order; a GPU hangs or computes garbage)";
      }
    if (meeting.failure == ncclSuccess)
      compute(meeting);
    meeting.done = true;
    clique.changed.notify_all();
  } else {
    auto deadline = std::chrono::steady_clock::now() + patience();
    while (!meeting.done) {
      int absent = gone();
      if (absent >= 0) {
        meeting.failure = ncclRemoteError;
        meeting.why = what + ": rank " + std::to_string(absent) +
                      " aborted or destroyed its communicator before joining "
                      "it";
        meeting.done = true;
        clique.changed.notify_all();
        break;
      }
      if (clique.changed.wait_until(lock, deadline) == std::cv_status::timeout &&
          !meeting.done) {
        std::string missing;
        for (int r = 0; r < clique.size; ++r)
          if (!meeting.calls[static_cast<size_t>(r)])
            missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        meeting.failure = ncclSystemError;
        meeting.why = what + ": ranks " + missing + " did not join it within " +
                      std::to_string(patience().count() / 1000) +
                      " s (OPTGEN_EMU_NCCL_TIMEOUT); a GPU waits forever";
        meeting.done = true;
        clique.changed.notify_all();
      }
    }
  }
  ncclResult_t failure = meeting.failure;
  std::string why = meeting.why;
  if (++meeting.departed == meeting.arrived && meeting.arrived == clique.size)
    clique.meetings.erase(sequence);
  lock.unlock();
  if (failure != ncclSuccess)
    failCollective(comm, failure, why);
}

/// Checks and enqueues one rank's collective on `stream`.
ncclResult_t collective(Call call, ncclComm_t handle, cudaStream_t stream) {
  return ncclApi(handle, [&] {
    ncclComm &comm = commOf(handle, kindName(call.kind));
    if (comm.aborted.load())
      ncclFail(ncclInvalidUsage, std::string(kindName(call.kind)) +
                                     " on an aborted communicator");
    if (sizeOf(call.type) == 0)
      ncclFail(ncclInvalidArgument, std::string(kindName(call.kind)) +
                                        ": an unknown data type");
    if (call.op < ncclSum || call.op > ncclAvg)
      ncclFail(ncclInvalidArgument, std::string(kindName(call.kind)) +
                                        ": an unknown reduction");
    bool rooted = call.kind == Kind::Reduce || call.kind == Kind::Broadcast;
    if (rooted && (call.root < 0 || call.root >= comm.size))
      ncclFail(ncclInvalidArgument,
               call.describe() + ": no such root among " +
                   std::to_string(comm.size) + " ranks");
    std::shared_ptr<Stream> target = streamOf(stream);
    if (target->device.index != comm.device)
      ncclFail(ncclInvalidUsage,
               call.describe() + " on " + target->name() +
                   " for a communicator of device " + std::to_string(comm.device));
    size_t element = sizeOf(call.type);
    size_t in = call.count * element, out = call.count * element;
    if (call.kind == Kind::ReduceScatter)
      in *= static_cast<size_t>(comm.size);
    if (call.kind == Kind::AllGather)
      out *= static_cast<size_t>(comm.size);
    bool reads = call.kind != Kind::Broadcast || comm.rank == call.root;
    bool writes = call.kind != Kind::Reduce || comm.rank == call.root;
    std::string what = "rank " + std::to_string(comm.rank) + "'s " + call.describe();
    try {
      if (reads)
        requireDeviceMemory(call.send, in, comm.device, what + "'s send buffer");
      if (writes)
        requireDeviceMemory(call.recv, out, comm.device,
                            what + "'s receive buffer");
    } catch (const ApiError &error) {
      ncclFail(ncclInvalidArgument, error.message);
    }
    {
      std::lock_guard<std::mutex> lock(comm.mutex);
      ++comm.pending;
    }
    ncclComm *at = &comm;
    auto pending = std::make_shared<std::atomic<bool>>(true);
    try {
      CompletionPtr done = enqueue(
          *target, Operation{what,
                             [at, call, pending] {
                               runCollective(*at, call, *pending);
                             },
                             at,
                             {}});
      if (!done) { // captured: it runs with a graph's launches
        pending->store(false);
        std::lock_guard<std::mutex> lock(comm.mutex);
        --comm.pending;
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(comm.mutex);
      --comm.pending;
      throw;
    }
  });
}

/// Waits, as NCCL (2.26 and later) does, until no live graph executable
/// holds a collective of `comm` (another thread may destroy them); after
/// the patience, ends the process with the message: a program that
/// destroys those graphs only afterwards hangs there on a GPU.
void waitForNoGraphs(ncclComm &comm, const char *call) {
  auto deadline = std::chrono::steady_clock::now() + patience();
  int graphs = 0;
  while ((graphs = execsReferencing(device(comm.device), &comm)) > 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      report(std::string(call) + " of rank " + std::to_string(comm.rank) +
             "'s communicator while " + std::to_string(graphs) +
             " CUDA graph executable(s) hold collectives of it: NCCL (2.26 "
             "and later) waits there until those graphs are destroyed, a "
             "hang when they are destroyed afterwards (destroy the graphs "
             "first); ending the process after " +
             std::to_string(patience().count() / 1000) +
             " s (OPTGEN_EMU_NCCL_TIMEOUT)");
      std::abort();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

} // namespace
} // namespace optgen::emu

const char *ncclGetErrorString(ncclResult_t result) {
  switch (result) {
  case ncclSuccess:
    return "no error";
  case ncclUnhandledCudaError:
    return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
  case ncclSystemError:
    return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
  case ncclInternalError:
    return "internal error - please report this issue to the NCCL developers";
  case ncclInvalidArgument:
    return "invalid argument (run with NCCL_DEBUG=WARN for details)";
  case ncclInvalidUsage:
    return "invalid usage (run with NCCL_DEBUG=WARN for details)";
  case ncclRemoteError:
    return "remote process exited or there was a network error";
  case ncclInProgress:
    return "NCCL operation in progress";
  }
  return "unknown result code";
}

const char *ncclGetLastError(ncclComm_t comm) {
  static thread_local std::string text;
  text = lastNcclError;
  bool live;
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    live = comm && registry().comms.count(comm);
  }
  if (live) {
    std::lock_guard<std::mutex> lock(comm->mutex);
    if (!comm->lastError.empty())
      text = comm->lastError;
  }
  if (!text.empty())
    text = "[emulated device] " + text;
  return text.c_str();
}

ncclResult_t ncclGetVersion(int *version) {
  if (!version)
    return ncclInvalidArgument;
  *version = NCCL_MAJOR * 10000 + NCCL_MINOR * 100 + NCCL_PATCH;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  return ncclApi(nullptr, [&] {
    if (!id)
      ncclFail(ncclInvalidArgument, "ncclGetUniqueId: a null id");
    std::memset(id->internal, 0, sizeof id->internal);
    static std::atomic<uint64_t> counter{0};
    std::random_device random;
    uint64_t words[3] = {static_cast<uint64_t>(getpid()), ++counter,
                         (uint64_t(random()) << 32) | random()};
    std::memcpy(id->internal, words, sizeof words);
  });
}

ncclResult_t ncclCommInitRank(ncclComm_t *result, int nranks, ncclUniqueId id,
                              int rank) {
  return ncclApi(nullptr, [&] {
    if (!result)
      ncclFail(ncclInvalidArgument, "ncclCommInitRank: a null communicator");
    *result = nullptr;
    if (nranks < 1 || rank < 0 || rank >= nranks)
      ncclFail(ncclInvalidArgument,
               "ncclCommInitRank: rank " + std::to_string(rank) + " of " +
                   std::to_string(nranks) + " ranks");
    Device &here = currentDevice();
    checkSticky(here);
    std::string key(id.internal, sizeof id.internal);
    Registry &r = registry();
    std::shared_ptr<Clique> clique;
    {
      std::lock_guard<std::mutex> lock(r.mutex);
      std::shared_ptr<Clique> &found = r.cliques[key];
      if (!found) {
        found = std::make_shared<Clique>();
        found->size = nranks;
        found->ranks.assign(static_cast<size_t>(nranks), nullptr);
      }
      clique = found;
    }
    auto *comm = new ncclComm;
    comm->clique = clique;
    comm->rank = rank;
    comm->size = nranks;
    comm->device = here.index;
    std::unique_lock<std::mutex> lock(clique->mutex);
    if (clique->size != nranks)
      ncclFail(ncclInvalidArgument,
               "ncclCommInitRank: rank " + std::to_string(rank) + " joins " +
                   std::to_string(nranks) + " ranks where the others joined " +
                   std::to_string(clique->size));
    if (clique->ranks[static_cast<size_t>(rank)])
      ncclFail(ncclInvalidUsage, "ncclCommInitRank: rank " +
                                     std::to_string(rank) + " joined twice");
    for (const ncclComm *other : clique->ranks)
      if (other && other->device == here.index)
        ncclFail(ncclInvalidUsage,
                 "ncclCommInitRank: ranks " + std::to_string(other->rank) +
                     " and " + std::to_string(rank) + " are both on device " +
                     std::to_string(here.index) +
                     " (NCCL: 'Duplicate GPU detected'; a rank per GPU)");
    clique->ranks[static_cast<size_t>(rank)] = comm;
    ++clique->joined;
    clique->changed.notify_all();
    if (!clique->changed.wait_for(lock, patience(), [&] {
          return clique->joined == clique->size;
        })) {
      clique->ranks[static_cast<size_t>(rank)] = nullptr;
      --clique->joined;
      delete comm;
      ncclFail(ncclSystemError,
               "ncclCommInitRank: rank " + std::to_string(rank) + " waited " +
                   std::to_string(patience().count() / 1000) + " s for " +
                   std::to_string(nranks - clique->joined - 1) +
                   " more ranks (OPTGEN_EMU_NCCL_TIMEOUT)");
    }
    lock.unlock();
    {
      std::lock_guard<std::mutex> registered(r.mutex);
      r.comms.insert(comm);
    }
    *result = comm;
  });
}

ncclResult_t ncclCommDestroy(ncclComm_t handle) {
  return ncclApi(handle, [&] {
    ncclComm &comm = commOf(handle, "ncclCommDestroy");
    waitForNoGraphs(comm, "ncclCommDestroy");
    // Finalizing flushes what was issued: the collectives already enqueued
    // run first (each meets the other ranks', or fails).
    std::unique_lock<std::mutex> lock(comm.mutex);
    comm.changed.wait(lock, [&] { return comm.pending == 0; });
    lock.unlock();
    comm.destroyed.store(true);
    std::lock_guard<std::mutex> notify(comm.clique->mutex);
    comm.clique->changed.notify_all();
    // The object stays: a graph's collective or a peer may still name it.
  });
}

ncclResult_t ncclCommAbort(ncclComm_t handle) {
  return ncclApi(handle, [&] {
    ncclComm &comm = commOf(handle, "ncclCommAbort");
    waitForNoGraphs(comm, "ncclCommAbort");
    comm.aborted.store(true);
    comm.destroyed.store(true);
    std::lock_guard<std::mutex> notify(comm.clique->mutex);
    comm.clique->changed.notify_all();
  });
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t handle, ncclResult_t *asyncError) {
  return ncclApi(handle, [&] {
    Registry &r = registry();
    {
      std::lock_guard<std::mutex> lock(r.mutex);
      if (!handle || !r.comms.count(handle))
        ncclFail(ncclInvalidArgument,
                 "ncclCommGetAsyncError of a communicator that is not live");
    }
    if (!asyncError)
      ncclFail(ncclInvalidArgument, "ncclCommGetAsyncError: a null result");
    *asyncError = static_cast<ncclResult_t>(handle->asyncError.load());
  });
}

ncclResult_t ncclCommCount(const ncclComm_t handle, int *count) {
  return ncclApi(handle, [&] {
    ncclComm &comm = commOf(handle, "ncclCommCount");
    if (!count)
      ncclFail(ncclInvalidArgument, "ncclCommCount: a null count");
    *count = comm.size;
  });
}

ncclResult_t ncclCommUserRank(const ncclComm_t handle, int *rank) {
  return ncclApi(handle, [&] {
    ncclComm &comm = commOf(handle, "ncclCommUserRank");
    if (!rank)
      ncclFail(ncclInvalidArgument, "ncclCommUserRank: a null rank");
    *rank = comm.rank;
  });
}

ncclResult_t ncclCommCuDevice(const ncclComm_t handle, int *device) {
  return ncclApi(handle, [&] {
    ncclComm &comm = commOf(handle, "ncclCommCuDevice");
    if (!device)
      ncclFail(ncclInvalidArgument, "ncclCommCuDevice: a null device");
    *device = comm.device;
  });
}

ncclResult_t ncclGroupStart() {
  ++groupDepth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  return ncclApi(nullptr, [&] {
    if (groupDepth == 0)
      ncclFail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
    // The group's collectives were enqueued in their order as they were
    // called, which is how every rank meets them.
    --groupDepth;
  });
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  return collective({Kind::AllReduce, count, datatype, op, 0, sendbuff, recvbuff},
                    comm, stream);
}

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff,
                               size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  return collective(
      {Kind::ReduceScatter, recvcount, datatype, op, 0, sendbuff, recvbuff},
      comm, stream);
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff,
                           size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream) {
  return collective(
      {Kind::AllGather, sendcount, datatype, ncclSum, 0, sendbuff, recvbuff},
      comm, stream);
}

ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
                        ncclDataType_t datatype, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t stream) {
  return collective({Kind::Reduce, count, datatype, op, root, sendbuff, recvbuff},
                    comm, stream);
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  return collective(
      {Kind::Broadcast, count, datatype, ncclSum, root, sendbuff, recvbuff},
      comm, stream);
}
