//===- Streams.cpp - Streams, events and copies of the emulated device ----===//

#include "Emulator.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#if OPTGEN_EMU_TSAN
#include <sanitizer/tsan_interface.h>
#endif

// The public handles: what cudaStream_t and cudaEvent_t point to.
struct CUstream_st {
  std::shared_ptr<optgen::emu::Stream> stream;
};

namespace optgen::emu {

namespace {

std::string hex(const void *pointer) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", pointer);
  return text;
}

/// Live stream handles, so that a destroyed or made-up one is an error.
struct Handles {
  std::mutex mutex;
  std::set<const void *> streams, events, graphs, execs;
};
Handles &handles() {
  static Handles *all = new Handles;
  return *all;
}

bool live(std::set<const void *> Handles::*set, const void *handle) {
  Handles &h = handles();
  std::lock_guard<std::mutex> lock(h.mutex);
  return (h.*set).count(handle) != 0;
}
void add(std::set<const void *> Handles::*set, const void *handle) {
  Handles &h = handles();
  std::lock_guard<std::mutex> lock(h.mutex);
  (h.*set).insert(handle);
}
void remove(std::set<const void *> Handles::*set, const void *handle) {
  Handles &h = handles();
  std::lock_guard<std::mutex> lock(h.mutex);
  (h.*set).erase(handle);
}

std::shared_ptr<Stream> legacyOf(Device &device) {
  std::lock_guard<std::mutex> lock(device.mutex);
  if (!device.legacy)
    device.legacy = std::make_shared<Stream>(device, 0u, true);
  return device.legacy;
}

std::vector<std::shared_ptr<Stream>> liveStreams(Device &device,
                                                 bool blockingOnly) {
  std::lock_guard<std::mutex> lock(device.mutex);
  std::vector<std::shared_ptr<Stream>> result;
  for (const std::weak_ptr<Stream> &weak : blockingOnly ? device.blocking
                                                        : device.streams)
    if (std::shared_ptr<Stream> stream = weak.lock())
      result.push_back(std::move(stream));
  return result;
}

/// Every capture in progress, for the rules that involve other threads';
/// its mutex guards every stream's and event's capture state (a capture's
/// streams may be used from several threads).
struct Captures {
  std::recursive_mutex mutex;
  std::vector<std::weak_ptr<Capture>> active;
};
Captures &captures() {
  static Captures *all = new Captures;
  return *all;
}
using CaptureLock = std::lock_guard<std::recursive_mutex>;

thread_local cudaStreamCaptureMode threadMode = cudaStreamCaptureModeGlobal;

/// A blocking stream of `device` that captures, which makes any use of the
/// legacy stream invalid.
std::shared_ptr<Stream> capturingBlocking(Device &device) {
  CaptureLock lock(captures().mutex);
  for (std::shared_ptr<Stream> &stream : liveStreams(device, true))
    if (stream->capture && stream->capture->active)
      return stream;
  return nullptr;
}

/// Fails (cudaErrorStreamCaptureImplicit), invalidating the capture, when
/// the legacy stream of `device` is used by `call` while a blocking stream
/// captures.
void checkLegacyUse(Device &device, const std::string &call) {
  CaptureLock lock(captures().mutex);
  if (std::shared_ptr<Stream> capturing = capturingBlocking(device)) {
    std::string message =
        call + " uses the legacy default stream of device " +
        std::to_string(device.index) + " while " + capturing->name() +
        ", a blocking stream, is capturing: the legacy stream would depend "
        "on the capture (CUDA Programming Guide, Stream Capture: "
        "'Prohibited and Unhandled Operations')";
    invalidate(*capturing->capture, message);
    fail(cudaErrorStreamCaptureImplicit, message);
  }
}

} // namespace

// --- Completions ---------------------------------------------------------------

void Completion::wait() {
  if (std::shared_ptr<Stream> stream = stream_.lock())
    stream->demand(sequence_);
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return done_; });
}

bool Completion::done() {
  if (std::shared_ptr<Stream> stream = stream_.lock())
    stream->demand(sequence_);
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

void Completion::complete() {
  std::lock_guard<std::mutex> lock(mutex_);
  done_ = true;
  changed_.notify_all();
}

// --- Streams ---------------------------------------------------------------------

Stream::Stream(Device &owner, unsigned streamFlags, bool isLegacy)
    : device(owner), flags(streamFlags), legacy(isLegacy),
      worker_([this] { work(); }) {}

Stream::~Stream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    demanded_ = submitted_;
    changed_.notify_all();
  }
  worker_.join();
}

CompletionPtr Stream::submit(Operation operation,
                             std::vector<CompletionPtr> waits) {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t sequence = ++submitted_;
  CompletionPtr done = std::make_shared<Completion>(shared_from_this(), sequence);
  queue_.push_back(Queued{std::move(operation), std::move(waits), done, sequence});
  last_ = done;
  changed_.notify_all();
  return done;
}

CompletionPtr Stream::last() {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_;
}

void Stream::demand(uint64_t sequence) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (sequence > demanded_) {
    demanded_ = sequence;
    changed_.notify_all();
  }
}

void Stream::drain() {
  if (CompletionPtr done = last())
    done->wait();
}

std::string Stream::name() const {
  if (legacy)
    return "the legacy default stream of device " + std::to_string(device.index);
  return "stream " + hex(this) + " of device " + std::to_string(device.index);
}

void Stream::work() {
  for (;;) {
    Queued item;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      // The legacy stream runs what is waited for, not sooner: a legal
      // schedule under which work that never waits for it reads memory it
      // has not written yet.
      changed_.wait(lock, [&] {
        return (stopping_ && queue_.empty()) ||
               (!queue_.empty() &&
                (!legacy || queue_.front().sequence <= demanded_));
      });
      if (queue_.empty())
        return;
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    for (const CompletionPtr &wait : item.waits)
      wait->wait();
    execute(device, item.operation);
    item.done->complete();
  }
}

std::shared_ptr<Stream> streamOf(cudaStream_t handle) {
  if (handle == nullptr || handle == cudaStreamLegacy)
    return legacyOf(currentDevice());
  if (handle == cudaStreamPerThread)
    fail(cudaErrorNotSupported,
         "cudaStreamPerThread is not emulated: use a stream of your own");
  if (!live(&Handles::streams, handle))
    fail(cudaErrorInvalidResourceHandle,
         "stream " + hex(handle) + " is not a live stream (destroyed, or "
                                   "never made by cudaStreamCreate)");
  return handle->stream;
}

CompletionPtr enqueue(Stream &stream, Operation operation,
                      std::vector<CompletionPtr> waits) {
  {
    CaptureLock lock(captures().mutex);
    if (stream.capture) {
      Capture &capture = *stream.capture;
      capture.nodes.push_back(Node{std::move(operation), stream.frontier});
      stream.frontier = {static_cast<int>(capture.nodes.size()) - 1};
      return nullptr;
    }
  }
  if (stream.legacy) {
    checkLegacyUse(stream.device, operation.what);
    for (std::shared_ptr<Stream> &blocking : liveStreams(stream.device, true))
      if (CompletionPtr last = blocking->last())
        waits.push_back(std::move(last));
  } else if (stream.blocking()) {
    if (CompletionPtr last = legacyOf(stream.device)->last())
      waits.push_back(std::move(last));
  }
  return stream.submit(std::move(operation), std::move(waits));
}

namespace {
/// OPTGEN_EMU_TRACE=1: every operation printed as it runs.
bool tracing() {
  static bool on = [] {
    const char *text = std::getenv("OPTGEN_EMU_TRACE");
    return text && std::string(text) == "1";
  }();
  return on;
}
} // namespace

void execute(Device &device, const Operation &operation) {
  if (device.sticky.load() != cudaSuccess)
    return; // a faulted device runs nothing more
  if (tracing())
    std::fprintf(stderr, "optgen emulated device %d: %s\n", device.index,
                 operation.what.c_str());
  try {
    operation.run();
  } catch (const ApiError &error) {
    setSticky(device, error.error,
              operation.what + " on device " + std::to_string(device.index) +
                  ": " + error.message);
  } catch (const std::exception &error) {
    setSticky(device, cudaErrorUnknown,
              operation.what + " on device " + std::to_string(device.index) +
                  " threw: " + error.what());
  }
}

// --- Capture -----------------------------------------------------------------------

void invalidate(Capture &capture, const std::string &why) {
  if (capture.invalidated.empty()) {
    capture.invalidated = why;
    report("a stream capture is invalidated: " + why);
  }
}

void checkCaptureSafe(const char *call) {
  if (threadMode == cudaStreamCaptureModeRelaxed)
    return;
  Captures &all = captures();
  CaptureLock lock(all.mutex);
  for (const std::weak_ptr<Capture> &weak : all.active) {
    std::shared_ptr<Capture> capture = weak.lock();
    if (!capture || !capture->active ||
        capture->mode == cudaStreamCaptureModeRelaxed)
      continue;
    bool mine = capture->thread == std::this_thread::get_id();
    bool prohibits =
        mine || (threadMode == cudaStreamCaptureModeGlobal &&
                 capture->mode == cudaStreamCaptureModeGlobal);
    if (!prohibits)
      continue;
    std::string message =
        std::string(call) + " during a stream capture " +
        (mine ? "begun on this thread" : "begun on another thread in global "
                                         "mode") +
        ": a potentially unsafe call, which capture prohibits unless the "
        "thread's mode is relaxed (cudaThreadExchangeStreamCaptureMode; CUDA "
        "Runtime API, cudaStreamBeginCapture)";
    invalidate(*capture, message);
    fail(cudaErrorStreamCaptureUnsupported, message);
  }
}

namespace {

/// Fails (cudaErrorStreamCaptureUnsupported), invalidating the capture,
/// when `stream` captures: `call` synchronises or queries it.
void checkNotCapturing(Stream &stream, const std::string &call) {
  CaptureLock lock(captures().mutex);
  if (stream.capture && stream.capture->active) {
    std::string message =
        call + " on " + stream.name() +
        ", which is capturing: a capturing stream holds no work to wait for "
        "(CUDA Programming Guide, Stream Capture: 'Prohibited and Unhandled "
        "Operations')";
    invalidate(*stream.capture, message);
    fail(cudaErrorStreamCaptureUnsupported, message);
  }
}

/// The nodes `frontier` depends on, itself included.
std::set<int> ancestors(const std::vector<Node> &nodes,
                        const std::vector<int> &frontier) {
  std::set<int> seen;
  std::vector<int> work(frontier.begin(), frontier.end());
  while (!work.empty()) {
    int node = work.back();
    work.pop_back();
    if (!seen.insert(node).second)
      continue;
    for (int dependency : nodes[static_cast<size_t>(node)].dependencies)
      work.push_back(dependency);
  }
  return seen;
}

} // namespace

int execsReferencing(Device &device, const void *communicator) {
  std::lock_guard<std::mutex> lock(device.mutex);
  int count = 0;
  for (GraphExec *exec : device.execs)
    for (const Node &node : exec->nodes)
      if (node.operation.communicator == communicator) {
        ++count;
        break;
      }
  return count;
}

} // namespace optgen::emu

using namespace optgen::emu;

// --- Events --------------------------------------------------------------------

struct CUevent_st {
  Device *device = nullptr;
  unsigned flags = 0;
  /// The last record outside capture: its completion and when it ran.
  struct Record {
    CompletionPtr done;
    std::chrono::steady_clock::time_point time;
  };
  std::shared_ptr<Record> record;
  /// The last record inside a capture: the capture and the nodes it
  /// stands for.
  std::shared_ptr<Capture> capture;
  std::vector<int> nodes;
};

namespace {

CUevent_st &eventOf(cudaEvent_t event) {
  if (!event || !live(&Handles::events, event))
    fail(cudaErrorInvalidResourceHandle,
         "event " + hex(event) + " is not a live event (destroyed, or never "
                                 "made by cudaEventCreate)");
  return *event;
}

/// Fails (cudaErrorCapturedEvent) when `event` was last recorded in a
/// capture still in progress: `call` waits for or queries it.
void checkNotCaptured(CUevent_st &event, const std::string &call) {
  CaptureLock lock(captures().mutex);
  if (event.capture && event.capture->active)
    fail(cudaErrorCapturedEvent,
         call + " of event " + hex(&event) +
             ", last recorded in a capturing stream: it stands for nodes of "
             "a graph, not work to wait for (CUDA Programming Guide, Stream "
             "Capture)");
}

} // namespace

cudaError_t cudaEventCreate(cudaEvent_t *event) {
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned flags) {
  return api([&] {
    Device &here = currentDevice();
    checkSticky(here);
    if (!event)
      fail(cudaErrorInvalidValue, "cudaEventCreate: a null event to return into");
    if (flags & ~(cudaEventBlockingSync | cudaEventDisableTiming))
      fail(cudaErrorInvalidValue, "cudaEventCreateWithFlags: unknown flags");
    auto *made = new CUevent_st;
    made->device = &here;
    made->flags = flags;
    add(&Handles::events, made);
    *event = made;
  });
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  return api([&] {
    eventOf(event);
    remove(&Handles::events, event);
    delete event; // pending records hold their own state
  });
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t handle) {
  return api([&] {
    CUevent_st &e = eventOf(event);
    std::shared_ptr<Stream> stream = streamOf(handle);
    checkSticky(stream->device);
    if (&stream->device != e.device)
      fail(cudaErrorInvalidResourceHandle,
           "cudaEventRecord of an event of device " +
               std::to_string(e.device->index) + " on " + stream->name());
    {
      CaptureLock lock(captures().mutex);
      if (stream->capture) {
        e.capture = stream->capture;
        e.nodes = stream->frontier;
        return;
      }
    }
    auto record = std::make_shared<CUevent_st::Record>();
    record->done = enqueue(*stream, Operation{"cudaEventRecord",
                                              [record] {
                                                record->time = std::chrono::
                                                    steady_clock::now();
                                              },
                                              nullptr,
                                              {}});
    e.record = record;
    e.capture = nullptr;
    e.nodes.clear();
  });
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  return api([&] {
    CUevent_st &e = eventOf(event);
    checkNotCaptured(e, "cudaEventSynchronize");
    if (e.record)
      e.record->done->wait();
    checkSticky(*e.device);
  });
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  return api([&] {
    CUevent_st &e = eventOf(event);
    checkNotCaptured(e, "cudaEventQuery");
    checkSticky(*e.device);
    if (e.record && !e.record->done->done())
      fail(cudaErrorNotReady, "the event's work has not completed");
  });
}

cudaError_t cudaEventElapsedTime(float *milliseconds, cudaEvent_t start,
                                 cudaEvent_t end) {
  return api([&] {
    CUevent_st &a = eventOf(start), &b = eventOf(end);
    if (!milliseconds)
      fail(cudaErrorInvalidValue, "cudaEventElapsedTime: a null result");
    checkNotCaptured(a, "cudaEventElapsedTime");
    checkNotCaptured(b, "cudaEventElapsedTime");
    if ((a.flags | b.flags) & cudaEventDisableTiming)
      fail(cudaErrorInvalidResourceHandle,
           "cudaEventElapsedTime of an event made with cudaEventDisableTiming");
    if (!a.record || !b.record)
      fail(cudaErrorInvalidResourceHandle,
           "cudaEventElapsedTime of an event never recorded");
    if (!a.record->done->done() || !b.record->done->done())
      fail(cudaErrorNotReady, "cudaEventElapsedTime: an event is not complete");
    *milliseconds = std::chrono::duration<float, std::milli>(b.record->time -
                                                             a.record->time)
                        .count();
  });
}

// --- Streams ---------------------------------------------------------------------

cudaError_t cudaStreamCreate(cudaStream_t *stream) {
  return cudaStreamCreateWithFlags(stream, cudaStreamDefault);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags) {
  return api([&] {
    Device &here = currentDevice();
    checkSticky(here);
    if (!stream)
      fail(cudaErrorInvalidValue, "cudaStreamCreate: a null stream to return into");
    if (flags & ~cudaStreamNonBlocking)
      fail(cudaErrorInvalidValue, "cudaStreamCreateWithFlags: unknown flags");
    auto made = std::make_shared<Stream>(here, flags, false);
    {
      std::lock_guard<std::mutex> lock(here.mutex);
      here.streams.push_back(made);
      if (made->blocking())
        here.blocking.push_back(made);
    }
    auto *handle = new CUstream_st{made};
    add(&Handles::streams, handle);
    *stream = handle;
  });
}

cudaError_t cudaStreamDestroy(cudaStream_t handle) {
  return api([&] {
    if (handle == nullptr || handle == cudaStreamLegacy ||
        handle == cudaStreamPerThread)
      fail(cudaErrorInvalidResourceHandle,
           "cudaStreamDestroy of a default stream");
    std::shared_ptr<Stream> stream = streamOf(handle);
    {
      CaptureLock lock(captures().mutex);
      if (stream->capture && stream->capture->active)
        invalidate(*stream->capture, "cudaStreamDestroy of " +
                                         stream->name() + " while it captures");
    }
    remove(&Handles::streams, handle);
    delete handle;
    {
      Device &owner = stream->device;
      std::lock_guard<std::mutex> lock(owner.mutex);
      auto dead = [&](const std::weak_ptr<Stream> &weak) {
        std::shared_ptr<Stream> s = weak.lock();
        return !s || s == stream;
      };
      owner.streams.erase(
          std::remove_if(owner.streams.begin(), owner.streams.end(), dead),
          owner.streams.end());
      owner.blocking.erase(
          std::remove_if(owner.blocking.begin(), owner.blocking.end(), dead),
          owner.blocking.end());
    }
    // CUDA releases the stream once its work is done; the emulator waits
    // for that work here, then ends the stream's worker.
    stream->drain();
  });
}

cudaError_t cudaStreamSynchronize(cudaStream_t handle) {
  return api([&] {
    std::shared_ptr<Stream> stream = streamOf(handle);
    checkNotCapturing(*stream, "cudaStreamSynchronize");
    if (stream->legacy)
      checkLegacyUse(stream->device, "cudaStreamSynchronize");
    stream->drain();
    checkSticky(stream->device);
  });
}

cudaError_t cudaStreamQuery(cudaStream_t handle) {
  return api([&] {
    std::shared_ptr<Stream> stream = streamOf(handle);
    checkNotCapturing(*stream, "cudaStreamQuery");
    if (stream->legacy)
      checkLegacyUse(stream->device, "cudaStreamQuery");
    checkSticky(stream->device);
    CompletionPtr last = stream->last();
    if (last && !last->done())
      fail(cudaErrorNotReady, "the stream's work has not completed");
  });
}

cudaError_t cudaDeviceSynchronize() {
  return api([&] {
    Device &here = currentDevice();
    for (std::shared_ptr<Stream> &stream : liveStreams(here, false))
      checkNotCapturing(*stream, "cudaDeviceSynchronize");
    legacyOf(here)->drain();
    for (std::shared_ptr<Stream> &stream : liveStreams(here, false))
      stream->drain();
    checkSticky(here);
  });
}

cudaError_t cudaStreamWaitEvent(cudaStream_t handle, cudaEvent_t event,
                                unsigned flags) {
  return api([&] {
    CUevent_st &e = eventOf(event);
    std::shared_ptr<Stream> stream = streamOf(handle);
    checkSticky(stream->device);
    if (flags != 0)
      fail(cudaErrorInvalidValue, "cudaStreamWaitEvent: flags other than 0");
    std::unique_lock<std::recursive_mutex> lock(captures().mutex);
    if (e.capture && e.capture->active) {
      std::shared_ptr<Capture> capture = e.capture;
      if (stream->capture && stream->capture != capture) {
        std::string message =
            "cudaStreamWaitEvent: " + stream->name() +
            " waits for an event of another stream capture: two captures "
            "cannot be merged (CUDA Programming Guide, Stream Capture: "
            "'Cross-stream Dependencies and Events')";
        invalidate(*stream->capture, message);
        invalidate(*capture, message);
        fail(cudaErrorStreamCaptureMerge, message);
      }
      if (stream->legacy) {
        std::string message =
            "cudaStreamWaitEvent: the legacy default stream waits for an "
            "event of a capture; the legacy stream cannot take part in one";
        invalidate(*capture, message);
        fail(cudaErrorStreamCaptureImplicit, message);
      }
      if (!stream->capture) { // the stream joins the capture (a fork)
        stream->capture = capture;
        stream->frontier = e.nodes;
        capture->streams.push_back(stream);
        return;
      }
      for (int node : e.nodes)
        if (std::find(stream->frontier.begin(), stream->frontier.end(), node) ==
            stream->frontier.end())
          stream->frontier.push_back(node);
      return;
    }
    if (stream->capture) {
      std::string message =
          "cudaStreamWaitEvent: " + stream->name() +
          ", which is capturing, waits for an event recorded outside the "
          "capture: a capture depends only on work it captured (CUDA "
          "Programming Guide, Stream Capture: 'Cross-stream Dependencies and "
          "Events')";
      invalidate(*stream->capture, message);
      fail(cudaErrorStreamCaptureIsolation, message);
    }
    if (!e.record)
      return; // never recorded: nothing to wait for
    lock.unlock();
    enqueue(*stream, Operation{"cudaStreamWaitEvent", [] {}, nullptr, {}},
            {e.record->done});
  });
}

cudaError_t cudaStreamBeginCapture(cudaStream_t handle,
                                   cudaStreamCaptureMode mode) {
  return api([&] {
    std::shared_ptr<Stream> stream = streamOf(handle);
    checkSticky(stream->device);
    if (stream->legacy)
      fail(cudaErrorStreamCaptureUnsupported,
           "cudaStreamBeginCapture on the legacy default stream, which "
           "cannot be captured");
    Captures &all = captures();
    CaptureLock lock(all.mutex);
    if (stream->capture)
      fail(cudaErrorStreamCaptureUnsupported,
           "cudaStreamBeginCapture on " + stream->name() +
               ", which is capturing already");
    auto capture = std::make_shared<Capture>();
    capture->device = &stream->device;
    capture->origin = stream;
    capture->thread = std::this_thread::get_id();
    capture->mode = mode;
    capture->streams.push_back(stream);
    stream->capture = capture;
    stream->frontier.clear();
    all.active.erase(std::remove_if(all.active.begin(), all.active.end(),
                                    [](const std::weak_ptr<Capture> &weak) {
                                      std::shared_ptr<Capture> c = weak.lock();
                                      return !c || !c->active;
                                    }),
                     all.active.end());
    all.active.push_back(capture);
  });
}

struct CUgraph_st {
  std::vector<Node> nodes;
};

cudaError_t cudaStreamEndCapture(cudaStream_t handle, cudaGraph_t *graph) {
  return api([&] {
    std::shared_ptr<Stream> stream = streamOf(handle);
    if (!graph)
      fail(cudaErrorInvalidValue, "cudaStreamEndCapture: a null graph to return into");
    *graph = nullptr;
    CaptureLock lock(captures().mutex);
    std::shared_ptr<Capture> capture = stream->capture;
    if (!capture || capture->origin.lock() != stream)
      fail(cudaErrorStreamCaptureUnmatched,
           "cudaStreamEndCapture on " + stream->name() +
               ", where no capture began");
    if (capture->mode != cudaStreamCaptureModeRelaxed &&
        capture->thread != std::this_thread::get_id())
      fail(cudaErrorStreamCaptureWrongThread,
           "cudaStreamEndCapture of a capture begun on another thread (not "
           "in relaxed mode)");
    // Every stream that joined must have been joined back: its last nodes
    // are among what the origin's frontier depends on.
    std::set<int> joined = ancestors(capture->nodes, stream->frontier);
    std::string unjoined;
    for (const std::weak_ptr<Stream> &weak : capture->streams) {
      std::shared_ptr<Stream> other = weak.lock();
      if (!other || other == stream)
        continue;
      for (int node : other->frontier)
        if (!joined.count(node))
          unjoined = other->name();
    }
    capture->active = false;
    for (const std::weak_ptr<Stream> &weak : capture->streams)
      if (std::shared_ptr<Stream> other = weak.lock()) {
        other->capture = nullptr;
        other->frontier.clear();
      }
    if (!capture->invalidated.empty())
      fail(cudaErrorStreamCaptureInvalidated,
           "the capture was invalidated: " + capture->invalidated);
    if (!unjoined.empty()) {
      std::string message =
          "cudaStreamEndCapture: " + unjoined +
          " joined the capture and has work the capturing stream never "
          "waited for (CUDA Programming Guide, Stream Capture: "
          "'Cross-stream Dependencies and Events')";
      report(message);
      fail(cudaErrorStreamCaptureUnjoined, message);
    }
    auto *made = new CUgraph_st{std::move(capture->nodes)};
    add(&Handles::graphs, made);
    *graph = made;
  });
}

cudaError_t cudaStreamIsCapturing(cudaStream_t handle,
                                  cudaStreamCaptureStatus *status) {
  return api([&] {
    std::shared_ptr<Stream> stream = streamOf(handle);
    if (!status)
      fail(cudaErrorInvalidValue, "cudaStreamIsCapturing: a null status");
    CaptureLock lock(captures().mutex);
    if (stream->legacy && capturingBlocking(stream->device))
      fail(cudaErrorStreamCaptureImplicit,
           "cudaStreamIsCapturing on the legacy default stream while a "
           "blocking stream captures");
    if (!stream->capture)
      *status = cudaStreamCaptureStatusNone;
    else if (!stream->capture->invalidated.empty())
      *status = cudaStreamCaptureStatusInvalidated;
    else
      *status = cudaStreamCaptureStatusActive;
  });
}

cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode *mode) {
  return api([&] {
    if (!mode)
      fail(cudaErrorInvalidValue,
           "cudaThreadExchangeStreamCaptureMode: a null mode");
    std::swap(*mode, threadMode);
  });
}

// --- Graphs ----------------------------------------------------------------------

struct CUgraphExec_st {
  std::shared_ptr<GraphExec> exec;
};

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long flags) {
  return api([&] {
    if (!exec)
      fail(cudaErrorInvalidValue, "cudaGraphInstantiate: a null exec");
    if (!graph || !live(&Handles::graphs, graph))
      fail(cudaErrorInvalidResourceHandle,
           "cudaGraphInstantiate of a graph that is not live");
    if (flags != 0)
      fail(cudaErrorInvalidValue, "cudaGraphInstantiate: flags other than 0");
    Device &here = currentDevice();
    checkSticky(here);
    auto made = std::make_shared<GraphExec>();
    made->device = &here;
    made->nodes = graph->nodes;
    // Nodes are made in program order: each depends on earlier ones only.
    for (size_t i = 0; i < made->nodes.size(); ++i)
      made->order.push_back(static_cast<int>(i));
    {
      std::lock_guard<std::mutex> lock(here.mutex);
      here.execs.insert(made.get());
    }
    auto *handle = new CUgraphExec_st{made};
    add(&Handles::execs, handle);
    *exec = handle;
  });
}

namespace {

#if OPTGEN_EMU_TSAN
/// Runs `body` as a ThreadSanitizer fiber of its own that acquires
/// `after` (its dependencies' sync objects) and releases `done`: a node of
/// a replayed graph is ordered after its dependencies and nothing else,
/// though one worker runs them all.
void runOrdered(const std::vector<void *> &after, void *done,
                const std::function<void()> &body) {
  void *worker = __tsan_get_current_fiber();
  void *fiber = __tsan_create_fiber(0);
  __tsan_switch_to_fiber(fiber, 1 /* no sync */);
  for (void *sync : after)
    __tsan_acquire(sync);
  body();
  __tsan_release(done);
  __tsan_switch_to_fiber(worker, 1);
  __tsan_destroy_fiber(fiber);
  __tsan_acquire(done); // the launch as a whole is ordered after every node
}
#endif

void replay(const GraphExec &exec) {
#if OPTGEN_EMU_TSAN
  std::vector<char> done(exec.nodes.size());
  for (int index : exec.order) {
    const Node &node = exec.nodes[static_cast<size_t>(index)];
    std::vector<void *> after;
    for (int dependency : node.dependencies)
      after.push_back(&done[static_cast<size_t>(dependency)]);
    runOrdered(after, &done[static_cast<size_t>(index)],
               [&] { execute(*exec.device, node.operation); });
  }
#else
  for (int index : exec.order)
    execute(*exec.device, exec.nodes[static_cast<size_t>(index)].operation);
#endif
}

} // namespace

cudaError_t cudaGraphLaunch(cudaGraphExec_t handle, cudaStream_t streamHandle) {
  return api([&] {
    if (!handle || !live(&Handles::execs, handle))
      fail(cudaErrorInvalidResourceHandle,
           "cudaGraphLaunch of a graph executable that is not live");
    std::shared_ptr<GraphExec> exec = handle->exec;
    std::shared_ptr<Stream> stream = streamOf(streamHandle);
    checkSticky(stream->device);
    if (&stream->device != exec->device)
      fail(cudaErrorInvalidValue,
           "cudaGraphLaunch of a graph of device " +
               std::to_string(exec->device->index) + " on " + stream->name());
    if (stream->capture)
      fail(cudaErrorNotSupported,
           "cudaGraphLaunch into a capturing stream (a child graph) is not "
           "emulated");
    std::vector<CompletionPtr> waits;
    if (exec->lastLaunch) // launches of one graph never overlap
      waits.push_back(exec->lastLaunch);
    exec->lastLaunch = enqueue(
        *stream,
        Operation{"cudaGraphLaunch", [exec] { replay(*exec); }, nullptr, exec},
        std::move(waits));
  });
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  return api([&] {
    if (!graph || !live(&Handles::graphs, graph))
      fail(cudaErrorInvalidResourceHandle,
           "cudaGraphDestroy of a graph that is not live");
    remove(&Handles::graphs, graph);
    delete graph;
  });
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t handle) {
  return api([&] {
    if (!handle || !live(&Handles::execs, handle))
      fail(cudaErrorInvalidResourceHandle,
           "cudaGraphExecDestroy of a graph executable that is not live");
    remove(&Handles::execs, handle);
    GraphExec *exec = handle->exec.get();
    {
      std::lock_guard<std::mutex> lock(exec->device->mutex);
      exec->device->execs.erase(exec);
    }
    delete handle; // a launch in flight holds the executable until it ends
  });
}

// --- Copies ------------------------------------------------------------------------

namespace {

enum class Side { Device, Pinned, Pageable };

Side sideOf(const void *pointer, size_t bytes) {
  std::optional<Allocation> allocation = lookup(pointer);
  if (allocation && allocation->kind == MemoryKind::Device)
    return Side::Device;
  return isPinned(pointer, bytes) ? Side::Pinned : Side::Pageable;
}

const char *kindName(cudaMemcpyKind kind) {
  switch (kind) {
  case cudaMemcpyHostToHost:
    return "cudaMemcpyHostToHost";
  case cudaMemcpyHostToDevice:
    return "cudaMemcpyHostToDevice";
  case cudaMemcpyDeviceToHost:
    return "cudaMemcpyDeviceToHost";
  case cudaMemcpyDeviceToDevice:
    return "cudaMemcpyDeviceToDevice";
  case cudaMemcpyDefault:
    return "cudaMemcpyDefault";
  }
  return "an unknown kind";
}

/// A copy's two sides, checked against its kind: what a GPU would fault
/// on (or copy from the wrong memory) is an error naming the pointer.
std::pair<Side, Side> checkCopy(const char *call, void *dst, const void *src,
                                size_t bytes, cudaMemcpyKind kind, int device) {
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault)
    fail(cudaErrorInvalidMemcpyDirection,
         std::string(call) + ": an unknown cudaMemcpyKind");
  std::string what = std::string(call) + " (" + kindName(kind) + ") ";
  bool dstDevice = kind == cudaMemcpyHostToDevice ||
                   kind == cudaMemcpyDeviceToDevice ||
                   (kind == cudaMemcpyDefault &&
                    sideOf(dst, bytes) == Side::Device);
  bool srcDevice = kind == cudaMemcpyDeviceToHost ||
                   kind == cudaMemcpyDeviceToDevice ||
                   (kind == cudaMemcpyDefault &&
                    sideOf(src, bytes) == Side::Device);
  if (dstDevice)
    requireDeviceMemory(dst, bytes, device, what + "destination");
  else
    requireHostMemory(dst, bytes, what + "destination");
  if (srcDevice)
    requireDeviceMemory(src, bytes, device, what + "source");
  else
    requireHostMemory(src, bytes, what + "source");
  return {dstDevice ? Side::Device : sideOf(dst, bytes),
          srcDevice ? Side::Device : sideOf(src, bytes)};
}

std::string copyName(const char *call, size_t bytes, cudaMemcpyKind kind) {
  return std::string(call) + " of " + std::to_string(bytes) + " bytes (" +
         kindName(kind) + ")";
}

/// cudaMemcpyAsync and the asynchronous part of cudaMemcpy: the copy on
/// `stream`, as the API's synchronisation rules have it for each kind of
/// memory. Returns the copy's completion (null when captured).
CompletionPtr copyOn(Stream &stream, const char *call, void *dst,
                     const void *src, size_t bytes, cudaMemcpyKind kind,
                     bool wait) {
  auto [to, from] = checkCopy(call, dst, src, bytes, kind, stream.device.index);
  std::string what = copyName(call, bytes, kind);
  bool pageable = to == Side::Pageable || from == Side::Pageable;
  std::unique_lock<std::recursive_mutex> lock(captures().mutex);
  if (stream.capture && pageable) {
    std::string message =
        what + " on " + stream.name() +
        ", which is capturing, with pageable host memory: a graph copies "
        "only device and pinned memory (CUDA Runtime API, 'API "
        "synchronization behavior'; stream capture)";
    invalidate(*stream.capture, message);
    fail(cudaErrorStreamCaptureUnsupported, message);
  }
  lock.unlock();
  Operation operation{what, nullptr, nullptr, {}};
  if (from == Side::Pageable) {
    // A pageable source is staged at the call: the caller may reuse it at
    // once, and the transfer from the staging happens in stream order.
    auto staged = std::make_shared<std::vector<unsigned char>>(
        static_cast<const unsigned char *>(src),
        static_cast<const unsigned char *>(src) + bytes);
    operation.run = [dst, staged] {
      std::memcpy(dst, staged->data(), staged->size());
    };
  } else {
    operation.run = [dst, src, bytes] { std::memcpy(dst, src, bytes); };
  }
  CompletionPtr done = enqueue(stream, std::move(operation));
  // A pageable destination is written before the call returns.
  if (done && (wait || to == Side::Pageable))
    done->wait();
  return done;
}

} // namespace

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes,
                            cudaMemcpyKind kind, cudaStream_t handle) {
  return api([&] {
    std::shared_ptr<Stream> stream = streamOf(handle);
    checkSticky(stream->device);
    if (bytes == 0)
      return;
    copyOn(*stream, "cudaMemcpyAsync", dst, src, bytes, kind, false);
    checkSticky(stream->device);
  });
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes,
                       cudaMemcpyKind kind) {
  return api([&] {
    Device &here = currentDevice();
    checkSticky(here);
    checkCaptureSafe("cudaMemcpy");
    if (bytes == 0)
      return;
    std::shared_ptr<Stream> legacy = legacyOf(here);
    auto [to, from] = checkCopy("cudaMemcpy", dst, src, bytes, kind, here.index);
    // On the legacy stream. From pageable memory to the device: "a stream
    // sync is performed before the copy is initiated", and the call returns
    // once the bytes are staged, the transfer possibly still to come. From
    // pinned memory to the device, and from the device to the host: the
    // call returns when the copy is done. Between device memory: no host
    // synchronisation at all.
    bool hostWaits = to != Side::Device || from == Side::Pinned;
    if (to == Side::Device && from == Side::Pageable)
      legacy->drain();
    copyOn(*legacy, "cudaMemcpy", dst, src, bytes, kind, hostWaits);
    checkSticky(here);
  });
}

cudaError_t cudaMemsetAsync(void *pointer, int value, size_t bytes,
                            cudaStream_t handle) {
  return api([&] {
    std::shared_ptr<Stream> stream = streamOf(handle);
    checkSticky(stream->device);
    if (bytes == 0)
      return;
    requireDeviceMemory(pointer, bytes, stream->device.index,
                        "cudaMemsetAsync's memory");
    enqueue(*stream,
            Operation{"cudaMemsetAsync of " + std::to_string(bytes) + " bytes",
                      [pointer, value, bytes] {
                        std::memset(pointer, value, bytes);
                      },
                      nullptr,
                      {}});
  });
}

cudaError_t cudaMemset(void *pointer, int value, size_t bytes) {
  return api([&] {
    Device &here = currentDevice();
    checkSticky(here);
    checkCaptureSafe("cudaMemset");
    if (bytes == 0)
      return;
    requireDeviceMemory(pointer, bytes, here.index, "cudaMemset's memory");
    // Asynchronous with respect to the host for device memory (CUDA Runtime
    // API, 'API synchronization behavior'), on the legacy stream.
    enqueue(*legacyOf(here),
            Operation{"cudaMemset of " + std::to_string(bytes) + " bytes",
                      [pointer, value, bytes] {
                        std::memset(pointer, value, bytes);
                      },
                      nullptr,
                      {}});
  });
}
