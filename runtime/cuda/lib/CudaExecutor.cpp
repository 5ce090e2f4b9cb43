//===- CudaExecutor.cpp - Steps on one CUDA GPU ---------------------------===//

#include "optgen/runtime/CudaExecutor.h"

#include "PartialsKernel.h"
#include "Staging.h"

#include "optgen/runtime/CudaCheck.h"
#include "optgen/runtime/DeviceCall.h"
#include "optgen/runtime/DeviceGemm.h"
#include "optgen/runtime/Error.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace optgen::runtime {

namespace {

/// Each unit's array of a state and each member's slice of staging and
/// workspace start at a multiple of this many bytes (cudaMalloc's own
/// alignment), so that kernels may load them as vectors.
constexpr size_t kAlignment = 256;

size_t alignUp(size_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

/// Device memory from cudaMalloc, freed when dropped.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer() { release(); }

  /// `bytes` bytes of the current device (none for 0); `what` says what
  /// for, should there not be enough.
  void allocate(size_t bytes, const std::string &what) {
    release();
    void *data = nullptr;
    if (bytes)
      OPTGEN_CUDA_CHECK(cudaMalloc(&data, bytes), "allocating " +
                                                      std::to_string(bytes) +
                                                      " bytes of " + what);
    data_ = data;
  }
  void release() {
    if (data_)
      cudaFree(data_); // in a destructor: a failure here cannot be reported
    data_ = nullptr;
  }
  unsigned char *data() const { return static_cast<unsigned char *>(data_); }

private:
  void *data_ = nullptr;
};

/// Makes `device` current for a scope, the caller's thread's current device
/// restored after it: the thread may have moved on to another GPU since
/// finalize().
class DeviceGuard {
public:
  explicit DeviceGuard(int device) : device_(device) {
    OPTGEN_CUDA_CHECK(cudaGetDevice(&previous_), "finding the current device");
    if (previous_ != device_)
      OPTGEN_CUDA_CHECK(cudaSetDevice(device_),
                        "selecting CUDA device " + std::to_string(device_));
  }
  ~DeviceGuard() {
    if (previous_ != device_)
      cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard &) = delete;
  DeviceGuard &operator=(const DeviceGuard &) = delete;

private:
  int device_, previous_ = -1;
};


/// Copies of one pair of dtypes, listed in the tables (device memory).
struct CopyList {
  DType from = DType::F32, to = DType::F32;
  const StagingCopy *copies = nullptr;
  int count = 0;
  int64_t maxCount = 0;
};

/// One launch of one rule over some of a unit's members (those this rank
/// steps of one rule and group, and of one shape unless the rule is
/// elementwise): a Local or Owned unit has one, a Small or Flat unit one
/// per rule and group it packs.
struct Launch {
  const RuleSpec *rule = nullptr;
  /// What goes wrong in it names these: "unit 3 (rule 'adamw' on
  /// parameters 'a', 'b')".
  std::string about;
  /// Indices into the unit's members (StepUnit::params).
  std::vector<size_t> members;
  /// The members' one shape; empty when they differ (`common` false: an
  /// elementwise rule's members, or parts of members).
  std::vector<int64_t> shape;
  bool common = true;
  DeviceCall call;
};

struct Unit {
  const StepUnit *spec = nullptr;
  /// "unit 3 (local)", for the order of the primitives.
  std::string name;
  std::vector<Launch> launches;
  /// Around the launches: bf16 widened to f32 staging before, narrowed
  /// back after; then (Flat, Owned) this rank's updated parts into `part`.
  std::vector<CopyList> widen, narrow, gatherIn;
  /// The distributed step: every member's gradient into `packed` before a
  /// reduction, and (Flat, Owned) every member's update out of it after
  /// the all-gather.
  std::vector<CopyList> pack, unpack;
  /// Per member, where it starts in the packed order (elements).
  std::vector<int64_t> offsets;
  /// In the collectives' arena (bytes): `packed`, the reduction's input
  /// (Small: in place) and the all-gather's output, of which the first
  /// packedUsed bytes are members' and the rest padding; `part`, this
  /// rank's part (Flat, Owned).
  size_t packedAt = 0, packedBytes = 0, packedUsed = 0, partAt = 0,
         partBytes = 0;
  UnitPhase phase = UnitPhase::Idle;
  /// Its partials are in the step's (a step with globals).
  bool partials = false;
  RequestPtr reduction, gather;
};

/// Where a launch's tables start in the tables' block, in bytes.
struct TableOffsets {
  size_t params, grads, states, numels;
};

/// A primitive of a step, as the captured step saw them: the kinds of the
/// schedule's ops, which each primitive carries out.
using Primitive = ScheduleOp::Kind;

/// Where a step with globals is in their phase.
enum class GlobalsPhase { Accumulating, Gathering, Gathered, Finished };

class CudaExecutorImpl final : public CudaExecutor {
public:
  CudaExecutorImpl();
  ~CudaExecutorImpl() override;
  void prepare(const ExecutorSetup &setup) override;
  void beginStep() override;
  void endStep() override;
  Token launchAllReduce(int unit) override;
  Token launchReduceScatter(int unit) override;
  Token launchAllGather(int unit) override;
  void wait(Token token) override;
  void compute(int unit) override;
  void accumulatePartials(int unit) override;
  Token launchPartialsGather() override;
  void finishGlobals() override;
  bool runsGlobals() const override { return true; }
  std::vector<float> globalValues() const override;
  void readState(size_t param, size_t state, float *values) const override;
  void writeState(size_t param, size_t state, const float *values) override;
  int64_t stateBytes() const override { return stateBytes_; }
  int64_t bytesSent() const override { return sent_; }
  int64_t bytesReceived() const override { return received_; }
  void setStream(cudaStream_t stream) override;
  void setGraphs(bool enabled) override;
  int64_t captures() const override { return captures_; }

private:
  const std::string &paramName(size_t param) const {
    return setup_.schedule->params[param].name;
  }
  /// Throws Error for a parameter the executor cannot step, before
  /// touching a device: memory tagged for another device, a dtype, memory
  /// misaligned for its dtype, a rule compiled for the host.
  void checkParams() const;
  /// Names the unit and splits the members this rank steps into launches.
  void planUnit(size_t index);
  /// Throws Error unless `view` is memory of the executor's device.
  void checkResidence(size_t param, const TensorView &view,
                      const char *what) const;
  void allocate();
  /// The distributed step's collectives are on the stream's timeline: the
  /// communicator orders them after what the stream queued before and
  /// before what it queues after their wait().
  void bindCommunicator();
  /// The unit `index`, after checking that it exists.
  Unit &unit(int index, const char *what);
  /// Throws Error (through fail()) unless `unit` is in `phase`.
  void expectPhase(const Unit &unit, UnitPhase phase, const char *what);
  /// Ends the step's capture (if one is open) and throws Error: a failed
  /// step must not leave the stream capturing.
  [[noreturn]] void fail(const std::string &message);
  /// Ends an open capture, dropping what it captured.
  void abandonCapture() noexcept;
  /// Whether the primitive's device work is to be enqueued now: not when
  /// the step replays its graph, where it checks that the primitive comes
  /// where it came in the captured step. Records it while capturing.
  bool enqueues(Primitive primitive, int index);
  /// The unit's device work, on the stream (captured or not).
  void enqueue(const Unit &unit);
  void enqueueCopies(const std::vector<CopyList> &lists, const Unit &unit,
                     const char *what);
  /// Every member's gradient into the unit's packed buffer, padding zeroed.
  void pack(const Unit &unit);
  void count(const Unit &unit, ScheduleOp::Kind collective);
  /// The globals' device memory and every launch's DeviceCall::globals.
  void allocateGlobals();
  /// Throws Error (through fail()) unless the spec has globals.
  void expectGlobals(const char *what);
  /// The token the partials' all-gather gives.
  int partialsToken() const { return 2 * static_cast<int>(units_.size()); }
  bool replaying() const { return graph_ && !capturing_; }
  /// Drops the captured graph (freed once a launch in flight completes).
  void dropGraph() noexcept;
  /// The integer hyperparameters' values now, in intHypers_'s order.
  std::vector<double> intHyperValues() const;
  /// The stream a step runs on when the caller gave `stream`.
  cudaStream_t streamFor(cudaStream_t stream) const {
    return stream == nullptr || stream == cudaStreamLegacy ? own_ : stream;
  }
  /// The communicator whose collectives a wait on the step's stream may
  /// wait for (null on one rank).
  Communicator *waitsOn() const {
    return distributed() ? setup_.communicator : nullptr;
  }
  bool distributed() const {
    return std::any_of(units_.begin(), units_.end(), [](const Unit &unit) {
      return unit.spec->kind != UnitKind::Local;
    });
  }

  ExecutorSetup setup_;
  std::vector<Unit> units_;
  int device_ = -1; ///< the device, from prepare() on
  /// Per parameter, per state, its slice of the state arena (none for a
  /// parameter this rank steps nothing of).
  std::vector<std::vector<float *>> stateOf_;
  int64_t stateBytes_ = 0;
  DeviceBuffer states_, staging_, workspace_, tables_, values_, collectives_;

  /// Hyperparameters then step counts, as values_ holds them: each group's
  /// array (where it is copied from, and its doubles) and, per parameter,
  /// where its step count goes (a launch's members are consecutive).
  struct HyperArray {
    const double *from;
    size_t at, length;
  };
  std::vector<HyperArray> hyperArrays_;
  size_t hyperWords_ = 0;
  std::vector<size_t> stepSlot_;
  std::vector<uint64_t> hostValues_;
  /// Every integer hyperparameter value (each group's, in host memory), and
  /// their values when the graph was captured: launches may have decided
  /// on the host from them (DeviceCall::hostHypers).
  std::vector<const double *> intHypers_;
  std::vector<double> capturedInts_;
  /// cuBLASLt for the rules' matrix products; empty when every rule is
  /// elementwise.
  DeviceBlas blas_;

  cudaStream_t requested_ = nullptr; ///< what setStream() gave
  cudaStream_t stream_ = nullptr;    ///< what steps run on
  cudaStream_t own_ = nullptr;
  /// Orders one stream after another (recorded, then waited on at once).
  cudaEvent_t order_ = nullptr;

  bool graphs_ = true;
  bool capturing_ = false;
  cudaGraphExec_t graph_ = nullptr;
  /// The primitives in the order the captured step called them, and how
  /// many of them this step has called.
  std::vector<std::pair<Primitive, int>> captured_;
  size_t replayed_ = 0;
  /// Graphs captured (and instantiated) so far.
  int64_t captures_ = 0;
  int64_t sent_ = 0, received_ = 0;

  /// The globals (null without), where the step is in their phase, and
  /// their device memory: each partial's kind, the step's partials (every
  /// unit's folded in, in program order), one launch's members' partials,
  /// every rank's gathered, the combination of those, the launches'
  /// scratch and the globals the rules read.
  const GlobalsSpec *globals_ = nullptr;
  GlobalsPhase globalsPhase_ = GlobalsPhase::Accumulating;
  /// A step has finished the globals since prepare(): globalValues() has
  /// values to read.
  bool finishedGlobals_ = false;
  DeviceBuffer globalsMemory_;
  int32_t *partialKinds_ = nullptr;
  double *stepPartials_ = nullptr, *memberPartials_ = nullptr,
         *gathered_ = nullptr, *combined_ = nullptr;
  float *globalsScratch_ = nullptr, *globalValues_ = nullptr;
  RequestPtr partialsRequest_;
};

CudaExecutorImpl::CudaExecutorImpl() {
  const char *graphs = std::getenv("OPTGEN_CUDA_GRAPHS");
  graphs_ = !(graphs && std::string(graphs) == "0");
}

CudaExecutorImpl::~CudaExecutorImpl() {
  if (device_ < 0)
    return; // never prepared: nothing of it on a device
  // Errors are ignored: a destructor does not throw, and a fault of the
  // device was reported by the call that met it.
  int previous = -1;
  cudaGetDevice(&previous);
  cudaSetDevice(device_);
  abandonCapture();
  for (Unit &unit : units_) { // their events, before the streams go
    unit.reduction.reset();
    unit.gather.reset();
  }
  partialsRequest_.reset();
  // Nothing may run on what is freed; a collective that failed (a dead
  // peer) ends the wait, as it never completes on a GPU.
  if (stream_) {
    try {
      waitForStream(stream_, waitsOn(), "destroying the CUDA executor");
    } catch (const Error &) {
    }
  }
  dropGraph();
  if (order_)
    cudaEventDestroy(order_);
  if (own_)
    cudaStreamDestroy(own_);
  for (DeviceBuffer *buffer : {&states_, &staging_, &workspace_, &tables_,
                               &values_, &collectives_, &globalsMemory_})
    buffer->release();
  blas_ = DeviceBlas(); // while its device is current
  if (previous >= 0)
    cudaSetDevice(previous);
}

void CudaExecutorImpl::checkParams() const {
  for (size_t p = 0; p < setup_.params.size(); ++p) {
    const ExecutorParam &param = setup_.params[p];
    for (const TensorView *view : {&param.param, &param.grad}) {
      const char *what = view == &param.param ? "" : "the gradient of ";
      if (view->device != Device::Cuda)
        throw Error(std::string(what) + "parameter '" + paramName(p) +
                    "' is in " + std::string(deviceName(view->device)) +
                    " memory; the CUDA executor steps CUDA memory");
      if (view->dtype != DType::F32 && view->dtype != DType::BF16)
        throw Error(std::string(what) + "parameter '" + paramName(p) + "' is " +
                    std::string(dtypeName(view->dtype)) +
                    "; the CUDA executor steps F32 and BF16");
      if (reinterpret_cast<uintptr_t>(view->data) % dtypeSize(view->dtype))
        throw Error(std::string(what) + "parameter '" + paramName(p) +
                    "' is not aligned to its " +
                    std::string(dtypeName(view->dtype)) + " elements");
    }
    if (!param.rule->launch)
      throw Error("parameter '" + paramName(p) + "' runs rule '" +
                  param.rule->name +
                  "', which was compiled for the host, not a CUDA device");
  }
}

void CudaExecutorImpl::planUnit(size_t index) {
  Unit &unit = units_[index];
  const StepUnit &spec = setup_.schedule->units[index];
  unit.spec = &spec;
  unit.name = "unit " + std::to_string(index) + " (" +
              unitKindName(spec.kind) + ")";
  if (spec.params.empty())
    throw Error(unit.name + " has no parameters");
  int rank = setup_.rank;
  // The members this rank steps, each with the first of its launch's: one
  // rule, one group's hyperparameters, and, unless the rule is
  // elementwise, one shape.
  for (size_t k = 0; k < spec.params.size(); ++k) {
    size_t p = spec.params[k];
    bool here = spec.kind == UnitKind::Local ||
                spec.kind == UnitKind::Small ||
                (spec.kind == UnitKind::Flat &&
                 spec.ranges[rank][k].length > 0) ||
                (spec.kind == UnitKind::Owned && spec.owners[k] == rank);
    if (!here)
      continue;
    const ExecutorParam &param = setup_.params[p];
    const std::vector<int64_t> &shape = setup_.schedule->params[p].shape;
    auto fits = [&](const Launch &launch) {
      const ExecutorParam &first =
          setup_.params[spec.params[launch.members[0]]];
      return first.rule == param.rule && first.hypers == param.hypers &&
             (param.rule->elementwise ||
              setup_.schedule->params[spec.params[launch.members[0]]].shape ==
                  shape);
    };
    auto launch = std::find_if(unit.launches.begin(), unit.launches.end(),
                               fits);
    if (launch == unit.launches.end() && !unit.launches.empty() &&
        (spec.kind == UnitKind::Local || spec.kind == UnitKind::Owned)) {
      // A Local or Owned unit is a bucket: one launch.
      const Launch &bucket = unit.launches[0];
      size_t first = spec.params[bucket.members[0]];
      if (param.rule != bucket.rule)
        throw Error("parameter '" + paramName(p) + "' runs rule '" +
                    param.rule->name + "', but parameter '" +
                    paramName(first) + "' of the same " + unit.name +
                    " runs rule '" + bucket.rule->name +
                    "'; the CUDA executor launches one rule per unit");
      if (param.hypers != setup_.params[first].hypers)
        throw Error("parameters '" + paramName(first) + "' and '" +
                    paramName(p) + "' of " + unit.name +
                    " are in different groups; the CUDA executor launches a "
                    "unit with one group's hyperparameters");
      throw Error("parameter '" + paramName(p) + "' has shape " +
                  formatShape(shape) + ", but parameter '" + paramName(first) +
                  "' of the same " + unit.name + " has shape " +
                  formatShape(bucket.shape) + "; rule '" + bucket.rule->name +
                  "' is not elementwise, so it steps members of one shape");
    }
    if (launch == unit.launches.end()) {
      unit.launches.push_back(Launch{});
      launch = unit.launches.end() - 1;
      launch->rule = param.rule;
      launch->shape = shape;
    }
    launch->members.push_back(k);
    // Flat parts are rows of elements of their own lengths.
    if (shape != launch->shape || spec.kind == UnitKind::Flat)
      launch->common = false;
  }
  for (Launch &launch : unit.launches) {
    if (!launch.common)
      launch.shape.clear();
    std::string names;
    for (size_t i = 0; i < launch.members.size() && i < 3; ++i)
      names += (i ? ", '" : "'") + paramName(spec.params[launch.members[i]]) +
               "'";
    if (launch.members.size() > 3)
      names += " and " + std::to_string(launch.members.size() - 3) + " more";
    launch.about = "unit " + std::to_string(index) + " (rule '" +
                   launch.rule->name + "' on parameter" +
                   (launch.members.size() > 1 ? "s " : " ") + names + ")";
  }
}

void CudaExecutorImpl::checkResidence(size_t param, const TensorView &view,
                                      const char *what) const {
  if (view.numel() == 0)
    return; // nothing of it is read or written
  std::string context =
      std::string(what) + "parameter '" + paramName(param) + "'";
  cudaPointerAttributes attributes;
  OPTGEN_CUDA_CHECK(cudaPointerGetAttributes(&attributes, view.data), context);
  if (attributes.type == cudaMemoryTypeManaged ||
      (attributes.type == cudaMemoryTypeDevice && attributes.device == device_))
    return;
  std::string is =
      attributes.type == cudaMemoryTypeDevice
          ? "memory of CUDA device " + std::to_string(attributes.device)
          : "host memory";
  throw Error(context + " is tagged cuda but is " + is +
              "; the CUDA executor steps memory of device " +
              std::to_string(device_) + ", current at finalize()");
}

void CudaExecutorImpl::prepare(const ExecutorSetup &setup) {
  if (device_ >= 0)
    throw Error("the CUDA executor is prepared once");
  setup_ = setup;
  globals_ = setup.globals && !setup.globals->empty() ? setup.globals : nullptr;
  if (globals_ && (!globals_->launchContribution || !globals_->launchFinish))
    throw Error("the spec's globals were compiled for the host, not a CUDA "
                "device");
  checkParams();
  units_.clear();
  units_.resize(setup_.schedule->units.size());
  for (size_t u = 0; u < units_.size(); ++u)
    planUnit(u);
  int device = -1;
  OPTGEN_CUDA_CHECK(cudaGetDevice(&device),
                    "finding the CUDA device to step on");
  device_ = device;
  for (size_t p = 0; p < setup_.params.size(); ++p) {
    checkResidence(p, setup_.params[p].param, "");
    checkResidence(p, setup_.params[p].grad, "the gradient of ");
  }
  allocate();
  if (globals_)
    allocateGlobals();
  if (distributed())
    bindCommunicator();
}

void CudaExecutorImpl::allocateGlobals() {
  size_t count = globals_->partials.size();
  size_t members = 0;
  for (const Unit &unit : units_)
    for (const Launch &launch : unit.launches)
      members = std::max(members, launch.members.size());
  size_t ranks = static_cast<size_t>(setup_.schedule->worldSize);
  // One block: the doubles first, then the floats, then the kinds.
  size_t doubles = count * (1 + members + ranks + 1);
  size_t floats = members * static_cast<size_t>(globals_->deviceScratch) +
                  globals_->names.size();
  size_t floatsAt = alignUp(doubles * sizeof(double));
  size_t kindsAt = floatsAt + alignUp(floats * sizeof(float));
  globalsMemory_.allocate(kindsAt + count * sizeof(int32_t),
                          "the globals' partials");
  unsigned char *base = globalsMemory_.data();
  double *at = reinterpret_cast<double *>(base);
  stepPartials_ = at;
  memberPartials_ = at + count;
  gathered_ = memberPartials_ + members * count;
  combined_ = gathered_ + ranks * count;
  globalsScratch_ = reinterpret_cast<float *>(base + floatsAt);
  globalValues_ =
      globalsScratch_ + members * static_cast<size_t>(globals_->deviceScratch);
  partialKinds_ = reinterpret_cast<int32_t *>(base + kindsAt);
  std::vector<int32_t> kinds;
  for (PartialKind kind : globals_->partials)
    kinds.push_back(kind == PartialKind::Max ? 1 : 0);
  OPTGEN_CUDA_CHECK(cudaMemcpyAsync(partialKinds_, kinds.data(),
                                    kinds.size() * sizeof(int32_t),
                                    cudaMemcpyHostToDevice, stream_),
                    "copying the globals' partial kinds");
  for (Unit &unit : units_)
    for (Launch &launch : unit.launches)
      launch.call.globals = globalValues_;
}

void CudaExecutorImpl::bindCommunicator() {
  if (!setup_.communicator)
    throw Error("the distributed CUDA step has no communicator");
  try {
    setup_.communicator->bindStream(stream_);
  } catch (const Error &error) {
    throw Error(std::string("the distributed CUDA step needs a communicator "
                            "of device memory on streams (NCCL, or the "
                            "in-process CUDA one), and this one is not: ") +
                error.what());
  }
}

void CudaExecutorImpl::allocate() {
  const std::vector<ExecutorParam> &params = setup_.params;
  const std::vector<ScheduleParam> &scheduled = setup_.schedule->params;
  int rank = setup_.rank;
  // Byte offsets first: the states in one arena (per launch, each state
  // one [K, rows, cols] array), each unit's collective buffers in another
  // (a reduction may be in flight while other units compute), the staging
  // and the workspace one unit's worth (units compute one at a time on one
  // stream).
  struct LaunchLayout {
    std::vector<size_t> stateAt;
    /// Per member, its parameter's and its gradient's f32 staging (bytes).
    std::vector<std::pair<size_t, size_t>> stageAt;
  };
  std::vector<std::vector<LaunchLayout>> layouts(units_.size());
  size_t stateArena = 0, stagingBytes = 0, workspaceBytes = 0,
         collectiveArena = 0;
  for (size_t u = 0; u < units_.size(); ++u) {
    Unit &unit = units_[u];
    const StepUnit &spec = *unit.spec;
    size_t payloadSize = dtypeSize(spec.payload);
    int64_t total = 0;
    for (size_t p : spec.params) {
      unit.offsets.push_back(total);
      total += params[p].param.numel();
    }
    unit.packedUsed = static_cast<size_t>(total) * payloadSize;
    if (spec.kind == UnitKind::Small) {
      unit.packedBytes = unit.packedUsed;
    } else if (spec.kind == UnitKind::Flat || spec.kind == UnitKind::Owned) {
      int64_t counted = 0;
      for (int64_t count : spec.counts)
        counted += count;
      unit.packedBytes = static_cast<size_t>(counted) * payloadSize;
      unit.partBytes = static_cast<size_t>(spec.counts[rank]) * payloadSize;
    }
    unit.packedAt = collectiveArena;
    collectiveArena += alignUp(unit.packedBytes);
    unit.partAt = collectiveArena;
    collectiveArena += alignUp(unit.partBytes);

    size_t staged = 0, unitWorkspace = 0;
    for (Launch &launch : unit.launches) {
      LaunchLayout layout;
      for (size_t s = 0; s < launch.rule->states.size(); ++s) {
        size_t elements = 0;
        for (size_t k : launch.members) {
          const ExecutorParam &param = params[spec.params[k]];
          elements += static_cast<size_t>(param.stateRows[s] *
                                          param.stateCols[s]);
        }
        layout.stateAt.push_back(stateArena);
        stateArena += alignUp(elements * sizeof(float));
        stateBytes_ += static_cast<int64_t>(elements * sizeof(float));
      }
      for (size_t k : launch.members) {
        size_t p = spec.params[k];
        size_t bytes = alignUp(
            static_cast<size_t>(spec.kind == UnitKind::Local
                                    ? params[p].param.numel()
                                    : spec.ranges[rank][k].length) *
            sizeof(float));
        std::pair<size_t, size_t> at; // the parameter's, the gradient's
        if (params[p].param.dtype == DType::BF16) {
          at.first = staged;
          staged += bytes;
        }
        DType gradFrom = spec.kind == UnitKind::Local ? params[p].grad.dtype
                                                      : spec.payload;
        if (gradFrom == DType::BF16) {
          at.second = staged;
          staged += bytes;
        }
        layout.stageAt.push_back(at);
      }
      int64_t perMember = 0;
      if (launch.rule->workspaceElements)
        for (size_t k : launch.members) {
          const std::vector<int64_t> &shape = scheduled[spec.params[k]].shape;
          perMember = std::max(perMember, launch.rule->workspaceElements(
                                              shape.data(),
                                              static_cast<int>(shape.size())));
        }
      launch.call.workspacePerMember = static_cast<int64_t>(
          alignUp(static_cast<size_t>(perMember) * sizeof(float)) /
          sizeof(float));
      // A unit's launches run one after another on the same workspace;
      // each has staging of its own (a unit's bf16 is widened at once).
      unitWorkspace = std::max(
          unitWorkspace, static_cast<size_t>(launch.call.workspacePerMember) *
                             sizeof(float) * launch.members.size());
      layouts[u].push_back(std::move(layout));
    }
    stagingBytes = std::max(stagingBytes, staged);
    workspaceBytes = std::max(workspaceBytes, unitWorkspace);
  }

  // The stream steps run on first: what the device memory starts as is
  // written on it, ordered before every step. (On the legacy default
  // stream, a step on a non-blocking stream of the caller's would not wait
  // for it: a pageable cudaMemcpy returns before its transfer, cudaMemset
  // before it runs.)
  OPTGEN_CUDA_CHECK(cudaStreamCreateWithFlags(&own_, cudaStreamNonBlocking),
                    "creating the CUDA executor's stream");
  OPTGEN_CUDA_CHECK(cudaEventCreateWithFlags(&order_, cudaEventDisableTiming),
                    "creating the CUDA executor's event");
  stream_ = streamFor(requested_);

  states_.allocate(stateArena, "optimizer state");
  if (stateArena)
    OPTGEN_CUDA_CHECK(cudaMemsetAsync(states_.data(), 0, stateArena, stream_),
                      "zeroing the optimizer state");
  staging_.allocate(stagingBytes, "f32 staging of bf16 parameters");
  workspace_.allocate(workspaceBytes, "the rules' workspace");
  collectives_.allocate(collectiveArena,
                        "the distributed step's collective buffers");
  if (collectiveArena)
    OPTGEN_CUDA_CHECK(
        cudaMemsetAsync(collectives_.data(), 0, collectiveArena, stream_),
        "zeroing the collective buffers");

  // The hyperparameters: one array per group (parameters of a group share
  // theirs), as long as its rule's layout. The step counts after them.
  std::map<const double *, size_t> arrayOf;
  std::set<const double *> ints;
  for (const ExecutorParam &param : params) {
    int length = 0;
    for (const HyperSpec &hyper : param.rule->hypers) {
      length = std::max(length, hyper.offset + hyper.size);
      if (hyper.isInt)
        for (int i = 0; i < hyper.size; ++i)
          ints.insert(param.hypers + hyper.offset + i);
    }
    auto [found, isNew] = arrayOf.emplace(param.hypers, hyperArrays_.size());
    if (isNew)
      hyperArrays_.push_back({param.hypers, 0, 0});
    HyperArray &array = hyperArrays_[found->second];
    array.length = std::max(array.length, static_cast<size_t>(length));
  }
  for (HyperArray &array : hyperArrays_) {
    array.at = hyperWords_;
    hyperWords_ += array.length;
  }
  intHypers_.assign(ints.begin(), ints.end());
  // A launch's members' step counts are consecutive; a parameter this rank
  // steps nothing of has none.
  stepSlot_.assign(params.size(), SIZE_MAX);
  size_t slot = hyperWords_;
  for (const Unit &unit : units_)
    for (const Launch &launch : unit.launches)
      for (size_t k : launch.members)
        stepSlot_[unit.spec->params[k]] = slot++;
  hostValues_.assign(slot, 0);
  values_.allocate(slot * sizeof(uint64_t), "hyperparameters and step counts");

  // The tables, built on the host with their final pointers and copied
  // once.
  std::vector<unsigned char> image;
  auto append = [&image](const auto &values) {
    size_t at = image.size();
    size_t bytes = values.size() * sizeof(values[0]);
    image.resize(at + (bytes + 7) / 8 * 8);
    if (bytes)
      std::memcpy(image.data() + at, values.data(), bytes);
    return at;
  };
  // Copy lists, grouped by their pair of dtypes: their tables' offsets,
  // resolved to pointers once the image has its final place.
  struct PendingList {
    std::vector<CopyList> *into;
    size_t index, at;
  };
  std::vector<PendingList> pending;
  using Copies = std::map<std::pair<DType, DType>, std::vector<StagingCopy>>;
  auto appendLists = [&](std::vector<CopyList> &into, const Copies &copies) {
    for (const auto &[dtypes, list] : copies) {
      CopyList copyList;
      copyList.from = dtypes.first;
      copyList.to = dtypes.second;
      copyList.count = static_cast<int>(list.size());
      for (const StagingCopy &copy : list)
        copyList.maxCount = std::max(copyList.maxCount, copy.count);
      pending.push_back({&into, into.size(), append(list)});
      into.push_back(copyList);
    }
  };
  auto at = [](unsigned char *base, size_t bytes) {
    return static_cast<void *>(base + bytes);
  };
  std::vector<std::vector<TableOffsets>> offsets(units_.size());
  stateOf_.assign(params.size(), {});
  for (size_t u = 0; u < units_.size(); ++u) {
    Unit &unit = units_[u];
    const StepUnit &spec = *unit.spec;
    size_t payloadSize = dtypeSize(spec.payload);
    bool split = spec.kind == UnitKind::Flat || spec.kind == UnitKind::Owned;
    unsigned char *packed = collectives_.data() + unit.packedAt;
    unsigned char *part = collectives_.data() + unit.partAt;
    // Where this rank's part starts in the packed order.
    int64_t mine = 0;
    for (int r = 0; split && r < rank; ++r)
      mine += spec.counts[r];
    Copies widen, narrow, gatherIn, pack, unpack;
    for (size_t l = 0; l < unit.launches.size(); ++l) {
      Launch &launch = unit.launches[l];
      const LaunchLayout &layout = layouts[u][l];
      size_t count = launch.members.size(), states = launch.rule->states.size();
      std::vector<float *> paramPtrs, statePtrs(states * count);
      std::vector<const float *> gradPtrs;
      std::vector<int64_t> numels;
      std::vector<size_t> stateUsed(states, 0);
      for (size_t i = 0; i < count; ++i) {
        size_t k = launch.members[i];
        size_t p = spec.params[k];
        const ExecutorParam &param = params[p];
        ElementRange range = spec.kind == UnitKind::Local
                                 ? ElementRange{0, param.param.numel()}
                                 : spec.ranges[rank][k];
        int64_t numel = range.length;
        numels.push_back(numel);
        // The parameter: the caller's memory from the range's start, or
        // f32 staging of it.
        void *paramAt = static_cast<unsigned char *>(param.param.data) +
                        range.begin * dtypeSize(param.param.dtype);
        float *stepped = static_cast<float *>(paramAt);
        if (param.param.dtype == DType::BF16) {
          stepped = static_cast<float *>(
              at(staging_.data(), layout.stageAt[i].first));
          widen[{DType::BF16, DType::F32}].push_back({paramAt, stepped, numel});
          narrow[{DType::F32, DType::BF16}].push_back({stepped, paramAt, numel});
        }
        // The gradient: the caller's, or the averaged one in a collective
        // buffer (in the payload's dtype); f32 staging of a bf16 one.
        const void *gradAt = param.grad.data;
        DType gradDType = param.grad.dtype;
        if (spec.kind == UnitKind::Small) {
          gradAt = packed + unit.offsets[k] * payloadSize;
          gradDType = spec.payload;
        } else if (split) {
          gradAt = part + (unit.offsets[k] + range.begin - mine) * payloadSize;
          gradDType = spec.payload;
          // The update goes where the gradient was, for the all-gather.
          gatherIn[{DType::F32, spec.payload}].push_back(
              {stepped, const_cast<void *>(gradAt), numel});
        }
        const float *gradUsed = static_cast<const float *>(gradAt);
        if (gradDType == DType::BF16) {
          float *stage = static_cast<float *>(
              at(staging_.data(), layout.stageAt[i].second));
          widen[{DType::BF16, DType::F32}].push_back({gradAt, stage, numel});
          gradUsed = stage;
        }
        paramPtrs.push_back(stepped);
        gradPtrs.push_back(gradUsed);
        for (size_t s = 0; s < states; ++s) {
          float *state =
              static_cast<float *>(at(states_.data(), layout.stateAt[s])) +
              stateUsed[s];
          statePtrs[s * count + i] = state;
          stateOf_[p].push_back(state);
          stateUsed[s] +=
              static_cast<size_t>(param.stateRows[s] * param.stateCols[s]);
        }
        launch.call.maxNumel = std::max(launch.call.maxNumel, numel);
      }
      offsets[u].push_back({append(paramPtrs), append(gradPtrs),
                            append(statePtrs), append(numels)});
    }
    // Every member's gradient into the packed order; every member's update
    // out of it.
    if (spec.kind != UnitKind::Local)
      for (size_t k = 0; k < spec.params.size(); ++k) {
        const ExecutorParam &param = params[spec.params[k]];
        int64_t numel = param.param.numel();
        void *slice = packed + unit.offsets[k] * payloadSize;
        pack[{param.grad.dtype, spec.payload}].push_back(
            {param.grad.data, slice, numel});
        if (split)
          unpack[{spec.payload, param.param.dtype}].push_back(
              {slice, param.param.data, numel});
      }
    appendLists(unit.widen, widen);
    appendLists(unit.narrow, narrow);
    appendLists(unit.gatherIn, gatherIn);
    appendLists(unit.pack, pack);
    appendLists(unit.unpack, unpack);
  }
  tables_.allocate(image.size(), "the units' tables");
  // Pageable: staged when the call returns, so `image` may go.
  if (!image.empty())
    OPTGEN_CUDA_CHECK(cudaMemcpyAsync(tables_.data(), image.data(),
                                      image.size(), cudaMemcpyHostToDevice,
                                      stream_),
                      "copying the units' tables");
  for (const PendingList &list : pending)
    (*list.into)[list.index].copies =
        reinterpret_cast<const StagingCopy *>(tables_.data() + list.at);
  // Only a rule that is not elementwise multiplies matrices.
  bool products = false;
  for (const Unit &unit : units_)
    for (const Launch &launch : unit.launches)
      products = products || !launch.rule->elementwise;
  if (products)
    blas_ = DeviceBlas::create();

  const double *hypers = reinterpret_cast<const double *>(values_.data());
  const int64_t *steps = reinterpret_cast<const int64_t *>(values_.data());
  for (size_t u = 0; u < units_.size(); ++u) {
    Unit &unit = units_[u];
    for (size_t l = 0; l < unit.launches.size(); ++l) {
      Launch &launch = unit.launches[l];
      DeviceCall &call = launch.call;
      const unsigned char *tables = tables_.data();
      const TableOffsets &table = offsets[u][l];
      size_t first = unit.spec->params[launch.members[0]];
      call.members = static_cast<int>(launch.members.size());
      call.shape = launch.shape.empty() ? nullptr : launch.shape.data();
      call.rank = static_cast<int>(launch.shape.size());
      if (launch.common)
        std::tie(call.rows, call.cols) = asRowsCols(launch.shape);
      call.stream = stream_;
      call.params = reinterpret_cast<float *const *>(tables + table.params);
      call.grads =
          reinterpret_cast<const float *const *>(tables + table.grads);
      call.states = reinterpret_cast<float *const *>(tables + table.states);
      call.numels = reinterpret_cast<const int64_t *>(tables + table.numels);
      call.steps = steps + stepSlot_[first];
      call.hypers =
          hypers + hyperArrays_[arrayOf.at(setup_.params[first].hypers)].at;
      call.hostHypers = setup_.params[first].hypers;
      call.blas = blas_.handle() ? &blas_ : nullptr;
      call.workspace = call.workspacePerMember
                           ? reinterpret_cast<float *>(workspace_.data())
                           : nullptr;
    }
  }
}

Unit &CudaExecutorImpl::unit(int index, const char *what) {
  if (index < 0 || static_cast<size_t>(index) >= units_.size())
    fail(std::string(what) + " of unit " + std::to_string(index) + ", of " +
         std::to_string(units_.size()));
  return units_[index];
}

void CudaExecutorImpl::abandonCapture() noexcept {
  if (!capturing_)
    return;
  capturing_ = false;
  cudaGraph_t partial = nullptr;
  // Ends the capture whatever it holds; the step's failure is what is
  // reported, not this call's.
  if (cudaStreamEndCapture(stream_, &partial) == cudaSuccess && partial)
    cudaGraphDestroy(partial);
  cudaGetLastError(); // an invalidated capture's error is the step's too
  captured_.clear();
}

void CudaExecutorImpl::dropGraph() noexcept {
  if (graph_)
    cudaGraphExecDestroy(graph_);
  graph_ = nullptr;
  captured_.clear();
}

std::vector<double> CudaExecutorImpl::intHyperValues() const {
  std::vector<double> values;
  for (const double *value : intHypers_)
    values.push_back(*value);
  return values;
}

void CudaExecutorImpl::fail(const std::string &message) {
  abandonCapture();
  throw Error(message);
}

void CudaExecutorImpl::beginStep() {
  // A step that failed in code other than the executor's may have left its
  // capture open.
  abandonCapture();
  for (Unit &unit : units_) {
    // A step that failed half-way may have left collectives in flight:
    // their requests order the stream after them as they go.
    unit.reduction.reset();
    unit.gather.reset();
    unit.phase = UnitPhase::Idle;
  }
  replayed_ = 0;
  sent_ = received_ = 0;
  DeviceGuard guard(device_);
  const char *context = "starting a step on the CUDA device";
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  OPTGEN_CUDA_CHECK(cudaStreamIsCapturing(stream_, &status), context);
  if (status != cudaStreamCaptureStatusNone)
    throw Error("the optimizer's stream is being captured by its caller: a "
                "step reads its hyperparameters and step counts from the "
                "host, which a graph captured outside it would not see "
                "change");
  if (stream_ == own_) {
    // After the legacy default stream's work (the gradients' kernels of a
    // caller without a stream of its own).
    OPTGEN_CUDA_CHECK(cudaEventRecord(order_, cudaStreamLegacy), context);
    OPTGEN_CUDA_CHECK(cudaStreamWaitEvent(own_, order_, 0), context);
  }
  for (const HyperArray &array : hyperArrays_)
    if (array.length)
      std::memcpy(&hostValues_[array.at], array.from,
                  array.length * sizeof(double));
  for (size_t p = 0; p < stepSlot_.size(); ++p)
    if (stepSlot_[p] != SIZE_MAX)
      std::memcpy(&hostValues_[stepSlot_[p]], setup_.params[p].steps,
                  sizeof(int64_t));
  // From pageable memory: the driver has staged (or copied) hostValues_
  // when the call returns, so the next step may rewrite it at once, and the
  // copy is ordered on the stream before the step's kernels. (CUDA allows
  // the driver to wait for the stream's earlier work before staging: step()
  // may then wait for the previous step's kernels.) Outside any graph: each
  // step's values reach the replayed kernels.
  if (!hostValues_.empty())
    OPTGEN_CUDA_CHECK(cudaMemcpyAsync(values_.data(), hostValues_.data(),
                                      hostValues_.size() * sizeof(uint64_t),
                                      cudaMemcpyHostToDevice, stream_),
                      "copying the hyperparameters and step counts");
  // The graph replays what its launches decided on the host at its capture:
  // a changed integer hyperparameter (a loop count) needs a new one.
  if (graph_ && intHyperValues() != capturedInts_)
    dropGraph();
  if (graphs_ && !graph_) {
    // Thread-local: a CUDA call of this thread that may not be captured
    // (a rule allocating memory in its launch) fails the capture; other
    // threads go on as they please.
    OPTGEN_CUDA_CHECK(
        cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal),
        "capturing the step as a CUDA graph");
    capturing_ = true;
    captured_.clear();
    capturedInts_ = intHyperValues();
  }
  if (globals_) {
    partialsRequest_.reset();
    for (Unit &unit : units_)
      unit.partials = false;
    globalsPhase_ = GlobalsPhase::Accumulating;
    // The step's partials start from their identities (in the graph).
    if (!replaying())
      checkCuda(launchFoldPartials(stepPartials_, nullptr, 0,
                                   static_cast<int>(globals_->partials.size()),
                                   partialKinds_, true, stream_),
                "starting the globals' partials", "the step");
  }
}

void CudaExecutorImpl::enqueueCopies(const std::vector<CopyList> &lists,
                                     const Unit &unit, const char *what) {
  for (const CopyList &list : lists)
    checkCuda(launchStagingCopies(list.copies, list.count, list.maxCount,
                                  list.from, list.to, stream_),
              what, unit.name);
}

void CudaExecutorImpl::enqueue(const Unit &unit) {
  enqueueCopies(unit.widen, unit, "widening bf16 to f32");
  for (const Launch &launch : unit.launches) {
    if (launch.call.maxNumel == 0)
      continue;
    try {
      launch.rule->launch(launch.call);
    } catch (const Error &error) {
      throw Error(launch.about + ": " + error.what());
    }
    checkCuda(cudaGetLastError(), "the rule's launch", launch.about);
  }
  enqueueCopies(unit.narrow, unit, "rounding to bf16");
  enqueueCopies(unit.gatherIn, unit, "the updates into the all-gather's part");
}

void CudaExecutorImpl::pack(const Unit &unit) {
  enqueueCopies(unit.pack, unit, "packing the gradients");
  // The padding of equal parts reduces to zeros.
  if (unit.packedBytes > unit.packedUsed)
    checkCuda(cudaMemsetAsync(collectives_.data() + unit.packedAt +
                                  unit.packedUsed,
                              0, unit.packedBytes - unit.packedUsed, stream_),
              "cudaMemsetAsync", unit.name + ": zeroing the padding");
}

void CudaExecutorImpl::count(const Unit &unit, ScheduleOp::Kind collective) {
  Traffic traffic = collectiveTraffic(*unit.spec, collective, setup_.rank);
  sent_ += traffic.sent;
  received_ += traffic.received;
}

void CudaExecutorImpl::expectPhase(const Unit &unit, UnitPhase phase,
                                   const char *what) {
  if (unit.phase != phase)
    fail(outOfOrder(unit.name, what, unit.phase));
}

bool CudaExecutorImpl::enqueues(Primitive primitive, int index) {
  if (replaying()) {
    // The captured step's primitives, one by one, in its order.
    if (replayed_ >= captured_.size() ||
        captured_[replayed_] != std::make_pair(primitive, index))
      fail("unit " + std::to_string(index) +
           ": a primitive out of the order of the step captured as a CUDA "
           "graph (call setGraphs(false) for a step that changes its order)");
    ++replayed_;
    return false;
  }
  if (capturing_)
    captured_.push_back({primitive, index});
  return true;
}

void CudaExecutorImpl::compute(int index) {
  Unit &u = unit(index, "compute");
  expectPhase(u, u.spec->kind == UnitKind::Local ? UnitPhase::Idle : UnitPhase::Reduced,
              "compute");
  if (globals_ && globalsPhase_ != GlobalsPhase::Finished)
    fail(u.name + ": compute before the globals it reads are finished");
  if (enqueues(Primitive::Compute, index)) {
    try {
      DeviceGuard guard(device_);
      enqueue(u);
    } catch (...) {
      abandonCapture();
      throw;
    }
  }
  u.phase = UnitPhase::Computed;
}

Token CudaExecutorImpl::launchAllReduce(int index) {
  Unit &u = unit(index, "all-reduce");
  if (u.spec->kind != UnitKind::Small)
    fail(u.name + " has no all-reduce");
  expectPhase(u, UnitPhase::Idle, "all-reduce");
  if (enqueues(Primitive::AllReduce, index)) {
    try {
      DeviceGuard guard(device_);
      pack(u);
      u.reduction = setup_.communicator->allReduceMean(
          collectives_.data() + u.packedAt, u.spec->counts[0],
          u.spec->payload);
    } catch (const Error &error) {
      fail(u.name + ": " + error.what());
    }
  }
  count(u, ScheduleOp::Kind::AllReduce);
  u.phase = UnitPhase::Reducing;
  return Token{2 * index};
}

Token CudaExecutorImpl::launchReduceScatter(int index) {
  Unit &u = unit(index, "reduce-scatter");
  if (u.spec->kind != UnitKind::Flat && u.spec->kind != UnitKind::Owned)
    fail(u.name + " has no reduce-scatter");
  expectPhase(u, UnitPhase::Idle, "reduce-scatter");
  if (enqueues(Primitive::ReduceScatter, index)) {
    try {
      DeviceGuard guard(device_);
      pack(u);
      u.reduction = setup_.communicator->reduceScatterMean(
          collectives_.data() + u.packedAt, collectives_.data() + u.partAt,
          u.spec->counts, u.spec->payload);
    } catch (const Error &error) {
      fail(u.name + ": " + error.what());
    }
  }
  count(u, ScheduleOp::Kind::ReduceScatter);
  u.phase = UnitPhase::Reducing;
  return Token{2 * index};
}

Token CudaExecutorImpl::launchAllGather(int index) {
  Unit &u = unit(index, "all-gather");
  if (u.spec->kind != UnitKind::Flat && u.spec->kind != UnitKind::Owned)
    fail(u.name + " has no all-gather");
  expectPhase(u, UnitPhase::Computed, "all-gather");
  if (enqueues(Primitive::AllGather, index)) {
    try {
      DeviceGuard guard(device_);
      u.gather = setup_.communicator->allGather(
          collectives_.data() + u.partAt, collectives_.data() + u.packedAt,
          u.spec->counts, u.spec->payload);
    } catch (const Error &error) {
      fail(u.name + ": " + error.what());
    }
  }
  count(u, ScheduleOp::Kind::AllGather);
  u.phase = UnitPhase::Gathering;
  return Token{2 * index + 1};
}

void CudaExecutorImpl::wait(Token token) {
  if (token.slot < 0)
    fail("wait for a token no collective gave");
  if (globals_ && token.slot == partialsToken()) {
    if (globalsPhase_ != GlobalsPhase::Gathering)
      fail("wait for the partials' gather, which is not in flight");
    if (enqueues(Primitive::Wait, token.slot)) {
      try {
        DeviceGuard guard(device_);
        partialsRequest_->wait();
      } catch (const Error &error) {
        fail(std::string("the partials' gather: ") + error.what());
      }
    }
    globalsPhase_ = GlobalsPhase::Gathered;
    return;
  }
  int index = token.slot / 2;
  Unit &u = unit(index, "wait");
  bool reduction = token.slot % 2 == 0;
  if (reduction)
    expectPhase(u, UnitPhase::Reducing, "wait for the reduction");
  else
    expectPhase(u, UnitPhase::Gathering, "wait for the all-gather");
  if (enqueues(Primitive::Wait, token.slot)) {
    try {
      DeviceGuard guard(device_);
      if (reduction) {
        u.reduction->wait();
      } else {
        u.gather->wait();
        // Every rank's updates, into every member.
        enqueueCopies(u.unpack, u, "unpacking the all-gathered updates");
      }
    } catch (const Error &error) {
      fail(u.name + ": " + error.what());
    }
  }
  u.phase = reduction ? UnitPhase::Reduced : UnitPhase::Done;
}

void CudaExecutorImpl::endStep() {
  if (globals_ && globalsPhase_ != GlobalsPhase::Finished)
    fail("the step did not finish its globals");
  for (const Unit &unit : units_)
    if (unit.phase != finalPhase(unit.spec->kind))
      fail(incompleteUnit(unit.name, unit.spec->kind, unit.phase));
  try {
    DeviceGuard guard(device_);
    const char *context = "running the step as a CUDA graph";
    if (capturing_) {
      capturing_ = false;
      cudaGraph_t graph = nullptr;
      OPTGEN_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph), context);
      cudaError_t instantiated = cudaGraphInstantiate(&graph_, graph, 0);
      cudaGraphDestroy(graph); // graph_ holds what it needs
      if (instantiated != cudaSuccess) {
        graph_ = nullptr;
        captured_.clear();
        throwCudaError(instantiated, "cudaGraphInstantiate", context);
      }
      ++captures_;
    }
    if (graph_)
      OPTGEN_CUDA_CHECK(cudaGraphLaunch(graph_, stream_), context);
    if (stream_ == own_) {
      // Before the legacy default stream's later work.
      OPTGEN_CUDA_CHECK(cudaEventRecord(order_, own_), "ending a step");
      OPTGEN_CUDA_CHECK(cudaStreamWaitEvent(cudaStreamLegacy, order_, 0),
                        "ending a step");
    }
  } catch (...) {
    abandonCapture();
    throw;
  }
}

void CudaExecutorImpl::expectGlobals(const char *what) {
  if (!globals_)
    fail(std::string(what) + ": the spec has no globals");
}

void CudaExecutorImpl::accumulatePartials(int index) {
  expectGlobals("partials");
  Unit &u = unit(index, "partials");
  expectPhase(u, u.spec->kind == UnitKind::Local ? UnitPhase::Idle
                                                 : UnitPhase::Reduced,
              "partials");
  if (u.partials || globalsPhase_ != GlobalsPhase::Accumulating)
    fail(u.name + (u.partials ? ": partials twice in a step"
                              : ": partials after the partials' gather"));
  u.partials = true;
  // Every rank steps a small unit whole: rank 0 counts it (the CUDA
  // executor has no shard groups).
  if (u.spec->kind == UnitKind::Small && setup_.rank != 0)
    return;
  if (!enqueues(Primitive::Partials, index))
    return;
  try {
    DeviceGuard guard(device_);
    // The f32 gradients (and parameters) the update reads.
    enqueueCopies(u.widen, u, "widening bf16 to f32");
    int count = static_cast<int>(globals_->partials.size());
    for (const Launch &launch : u.launches) {
      if (launch.call.maxNumel == 0)
        continue;
      DeviceGlobals call;
      call.stream = stream_;
      call.members = launch.call.members;
      call.maxNumel = launch.call.maxNumel;
      call.params = launch.call.params;
      call.grads = launch.call.grads;
      call.numels = launch.call.numels;
      call.scratch = globalsScratch_;
      call.memberPartials = memberPartials_;
      globals_->launchContribution(call);
      checkCuda(cudaGetLastError(), "the globals' contribution", launch.about);
      checkCuda(launchFoldPartials(stepPartials_, memberPartials_,
                                   call.members, count, partialKinds_, false,
                                   stream_),
                "folding the members' partials", launch.about);
    }
  } catch (const Error &error) {
    fail(u.name + ": " + error.what());
  }
}

Token CudaExecutorImpl::launchPartialsGather() {
  expectGlobals("the partials' gather");
  if (!distributed())
    fail("the partials' gather in a step of local units, whose partials are "
         "this rank's alone");
  if (globalsPhase_ != GlobalsPhase::Accumulating)
    fail("the partials' gather, twice in a step");
  for (const Unit &u : units_)
    if (!u.partials)
      fail("the partials' gather before " + u.name + "'s partials");
  int64_t words = static_cast<int64_t>(globals_->partials.size() * 2);
  int ranks = setup_.communicator->size();
  if (enqueues(Primitive::GatherPartials, partialsToken())) {
    try {
      DeviceGuard guard(device_);
      // Doubles as F32 words, which every communicator moves unchanged.
      partialsRequest_ = setup_.communicator->allGather(
          stepPartials_, gathered_,
          std::vector<int64_t>(static_cast<size_t>(ranks), words), DType::F32);
    } catch (const Error &error) {
      fail(std::string("the partials' gather: ") + error.what());
    }
  }
  Traffic traffic = partialsTraffic(
      static_cast<int64_t>(globals_->partials.size()), ranks);
  sent_ += traffic.sent;
  received_ += traffic.received;
  globalsPhase_ = GlobalsPhase::Gathering;
  return Token{partialsToken()};
}

void CudaExecutorImpl::finishGlobals() {
  expectGlobals("finishGlobals");
  bool many = distributed();
  GlobalsPhase ready =
      many ? GlobalsPhase::Gathered : GlobalsPhase::Accumulating;
  if (globalsPhase_ != ready)
    fail(globalsPhase_ == GlobalsPhase::Finished
             ? "finishGlobals, twice in a step"
             : "finishGlobals before the partials were gathered");
  for (const Unit &u : units_)
    if (!u.partials)
      fail("finishGlobals before " + u.name + "'s partials");
  if (enqueues(Primitive::FinishGlobals, 0)) {
    try {
      DeviceGuard guard(device_);
      // Rank order, from the same bits on every rank.
      int count = static_cast<int>(globals_->partials.size());
      checkCuda(launchFoldPartials(combined_, many ? gathered_ : stepPartials_,
                                   many ? setup_.communicator->size() : 1,
                                   count, partialKinds_, true, stream_),
                "combining the ranks' partials", "the globals");
      DeviceGlobals call;
      call.stream = stream_;
      call.partials = combined_;
      call.globals = globalValues_;
      globals_->launchFinish(call);
      checkCuda(cudaGetLastError(), "the globals' finish", "the globals");
    } catch (const Error &error) {
      fail(error.what());
    }
  }
  globalsPhase_ = GlobalsPhase::Finished;
  finishedGlobals_ = true;
}

std::vector<float> CudaExecutorImpl::globalValues() const {
  if (!globals_ || !finishedGlobals_)
    return {};
  std::vector<float> values(globals_->names.size());
  const char *context = "reading the globals";
  DeviceGuard guard(device_);
  OPTGEN_CUDA_CHECK(cudaMemcpyAsync(values.data(), globalValues_,
                                    values.size() * sizeof(float),
                                    cudaMemcpyDeviceToHost, stream_),
                    context);
  waitForStream(stream_, waitsOn(), context);
  return values;
}

void CudaExecutorImpl::readState(size_t param, size_t state,
                                 float *values) const {
  const ExecutorParam &p = setup_.params.at(param);
  size_t bytes =
      static_cast<size_t>(p.stateRows.at(state) * p.stateCols.at(state)) *
      sizeof(float);
  if (!bytes || stateOf_[param].empty())
    return; // this rank holds none of it
  std::string context = "reading state '" + std::string(p.rule->states[state]) +
                        "' of parameter '" + paramName(param) + "'";
  DeviceGuard guard(device_);
  OPTGEN_CUDA_CHECK(cudaMemcpyAsync(values, stateOf_[param][state], bytes,
                                    cudaMemcpyDeviceToHost, stream_),
                    context);
  waitForStream(stream_, waitsOn(), context);
}

void CudaExecutorImpl::writeState(size_t param, size_t state,
                                  const float *values) {
  const ExecutorParam &p = setup_.params.at(param);
  size_t bytes =
      static_cast<size_t>(p.stateRows.at(state) * p.stateCols.at(state)) *
      sizeof(float);
  if (!bytes || stateOf_[param].empty())
    return;
  std::string context = "writing state '" + std::string(p.rule->states[state]) +
                        "' of parameter '" + paramName(param) + "'";
  DeviceGuard guard(device_);
  OPTGEN_CUDA_CHECK(cudaMemcpyAsync(stateOf_[param][state], values, bytes,
                                    cudaMemcpyHostToDevice, stream_),
                    context);
  waitForStream(stream_, waitsOn(), context);
}

void CudaExecutorImpl::setStream(cudaStream_t stream) {
  abandonCapture(); // of a step that failed in code other than ours
  requested_ = stream;
  if (device_ < 0)
    return; // prepare() takes it
  cudaStream_t next = streamFor(stream);
  if (next == stream_)
    return;
  DeviceGuard guard(device_);
  // What the previous stream still has to do (a step, a copy of state)
  // comes before the next step.
  OPTGEN_CUDA_CHECK(cudaEventRecord(order_, stream_), "setStream()");
  OPTGEN_CUDA_CHECK(cudaStreamWaitEvent(next, order_, 0), "setStream()");
  stream_ = next;
  for (Unit &unit : units_)
    for (Launch &launch : unit.launches)
      launch.call.stream = next;
  if (distributed())
    bindCommunicator();
}

void CudaExecutorImpl::setGraphs(bool enabled) {
  abandonCapture();
  graphs_ = enabled;
  if (!enabled)
    dropGraph();
}

} // namespace

std::unique_ptr<CudaExecutor> makeCudaExecutor() {
  return std::make_unique<CudaExecutorImpl>();
}

} // namespace optgen::runtime
