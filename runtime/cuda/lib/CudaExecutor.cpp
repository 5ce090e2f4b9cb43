//===- CudaExecutor.cpp - Steps on one CUDA GPU ---------------------------===//

#include "optgen/runtime/CudaExecutor.h"

#include "Staging.h"
#include "optgen/runtime/CudaCheck.h"
#include "optgen/runtime/DeviceCall.h"
#include "optgen/runtime/DeviceGemm.h"
#include "optgen/runtime/Error.h"

#include <algorithm>
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

struct Unit {
  const StepUnit *spec = nullptr;
  const RuleSpec *rule = nullptr;
  /// "unit 3 (local)", for the order of the primitives; `about` adds the
  /// rule and the parameters, for what goes wrong in them.
  std::string name, about;
  /// The members' one shape; empty when an elementwise rule's members
  /// differ (`common` false).
  std::vector<int64_t> shape;
  bool common = true;
  DeviceCall call;
  /// The bf16 widened before the rule and narrowed after it (device
  /// memory), the longest `staged` elements.
  const StagingCopy *widen = nullptr, *narrow = nullptr;
  int widenCount = 0, narrowCount = 0;
  int64_t staged = 0;
  bool computed = false;
};

/// Where a unit's tables start in the tables' block, in bytes.
struct TableOffsets {
  size_t params, grads, states, numels, widen, narrow;
};

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
  void readState(size_t param, size_t state, float *values) const override;
  void writeState(size_t param, size_t state, const float *values) override;
  int64_t stateBytes() const override { return stateBytes_; }
  int64_t bytesSent() const override { return 0; }
  int64_t bytesReceived() const override { return 0; }
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
  /// Names the unit and finds its rule and shape. Throws Error for a unit
  /// of the distributed step, and for one that is not one launch of one
  /// rule.
  void planUnit(size_t index);
  /// Throws Error unless `view` is memory of the executor's device.
  void checkResidence(size_t param, const TensorView &view,
                      const char *what) const;
  void allocate();
  /// The unit `index`, after checking that it exists.
  Unit &unit(int index, const char *what);
  /// Ends the step's capture (if one is open) and throws Error: a failed
  /// step must not leave the stream capturing.
  [[noreturn]] void fail(const std::string &message);
  /// Ends an open capture, dropping what it captured.
  void abandonCapture() noexcept;
  /// The unit's device work, on the stream (captured or not).
  void enqueue(const Unit &unit);
  bool replaying() const { return graph_ && !capturing_; }
  /// Drops the captured graph (freed once a launch in flight completes).
  void dropGraph() noexcept;
  /// The integer hyperparameters' values now, in intHypers_'s order.
  std::vector<double> intHyperValues() const;
  /// The stream a step runs on when the caller gave `stream`.
  cudaStream_t streamFor(cudaStream_t stream) const {
    return stream == nullptr || stream == cudaStreamLegacy ? own_ : stream;
  }

  ExecutorSetup setup_;
  std::vector<Unit> units_;
  int device_ = -1; ///< the device, from prepare() on
  /// Per parameter, per state, its slice of the state arena.
  std::vector<std::vector<float *>> stateOf_;
  int64_t stateBytes_ = 0;
  DeviceBuffer states_, staging_, workspace_, tables_, values_;

  /// Hyperparameters then step counts, as values_ holds them: each group's
  /// array (where it is copied from, and its doubles) and, per parameter,
  /// where its step count goes (its unit's members are consecutive).
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
  /// The units in the order the captured step computed them, and how many
  /// of them this step has computed.
  std::vector<int> captured_;
  size_t replayed_ = 0;
  /// Graphs captured (and instantiated) so far.
  int64_t captures_ = 0;
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
  if (stream_)
    cudaStreamSynchronize(stream_); // nothing may run on what is freed
  dropGraph();
  if (order_)
    cudaEventDestroy(order_);
  if (own_)
    cudaStreamDestroy(own_);
  for (DeviceBuffer *buffer :
       {&states_, &staging_, &workspace_, &tables_, &values_})
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
  unit.spec = &setup_.schedule->units[index];
  const std::vector<size_t> &members = unit.spec->params;
  unit.name = "unit " + std::to_string(index) + " (" +
              unitKindName(unit.spec->kind) + ")";
  if (members.empty())
    throw Error(unit.name + " has no parameters");
  size_t first = members[0];
  if (unit.spec->kind != UnitKind::Local)
    throw Error("parameter '" + paramName(first) + "' is in " + unit.name +
                " of the distributed (ZeRO-2) step; the distributed CUDA "
                "step is not built yet (step on one rank, or without "
                "`distribute zero2`)");
  unit.rule = setup_.params[first].rule;
  unit.shape = setup_.schedule->params[first].shape;
  std::string names;
  for (size_t k = 0; k < members.size() && k < 3; ++k)
    names += (k ? ", '" : "'") + paramName(members[k]) + "'";
  if (members.size() > 3)
    names += " and " + std::to_string(members.size() - 3) + " more";
  unit.about = "unit " + std::to_string(index) + " (rule '" + unit.rule->name +
               "' on parameter" + (members.size() > 1 ? "s " : " ") + names +
               ")";
  // One launch: one rule, one group's hyperparameters, and, unless the
  // rule is elementwise, one shape.
  for (size_t p : members) {
    const ExecutorParam &param = setup_.params[p];
    if (param.rule != unit.rule)
      throw Error("parameter '" + paramName(p) + "' runs rule '" +
                  param.rule->name + "', but parameter '" + paramName(first) +
                  "' of the same " + unit.name + " runs rule '" +
                  unit.rule->name +
                  "'; the CUDA executor launches one rule per unit");
    if (param.hypers != setup_.params[first].hypers)
      throw Error("parameters '" + paramName(first) + "' and '" + paramName(p) +
                  "' of " + unit.name +
                  " are in different groups; the CUDA executor launches a "
                  "unit with one group's hyperparameters");
    const std::vector<int64_t> &shape = setup_.schedule->params[p].shape;
    if (shape != unit.shape) {
      if (!unit.rule->elementwise)
        throw Error("parameter '" + paramName(p) + "' has shape " +
                    formatShape(shape) + ", but parameter '" +
                    paramName(first) + "' of the same " + unit.name +
                    " has shape " + formatShape(unit.shape) + "; rule '" +
                    unit.rule->name +
                    "' is not elementwise, so it steps members of one shape");
      unit.common = false;
    }
  }
  if (!unit.common)
    unit.shape.clear();
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
  checkParams();
  units_.assign(setup_.schedule->units.size(), Unit{});
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
}

void CudaExecutorImpl::allocate() {
  const std::vector<ExecutorParam> &params = setup_.params;
  // Byte offsets first: the states in one arena (per unit, each state one
  // [K, rows, cols] array), the staging and the workspace one unit's worth
  // (units run one at a time on one stream).
  std::vector<std::vector<size_t>> stateAt(units_.size());
  std::vector<std::vector<std::pair<size_t, size_t>>> stageAt(units_.size());
  size_t stateArena = 0, stagingBytes = 0, workspaceBytes = 0;
  for (size_t u = 0; u < units_.size(); ++u) {
    Unit &unit = units_[u];
    const std::vector<size_t> &members = unit.spec->params;
    for (size_t s = 0; s < unit.rule->states.size(); ++s) {
      size_t elements = 0;
      for (size_t p : members)
        elements += static_cast<size_t>(params[p].stateRows[s] *
                                        params[p].stateCols[s]);
      stateAt[u].push_back(stateArena);
      stateArena += alignUp(elements * sizeof(float));
      stateBytes_ += static_cast<int64_t>(elements * sizeof(float));
    }
    size_t staged = 0;
    for (size_t p : members) {
      size_t bytes =
          alignUp(static_cast<size_t>(params[p].param.numel()) * sizeof(float));
      std::pair<size_t, size_t> at; // the parameter's, the gradient's
      if (params[p].param.dtype == DType::BF16) {
        at.first = staged;
        staged += bytes;
      }
      if (params[p].grad.dtype == DType::BF16) {
        at.second = staged;
        staged += bytes;
      }
      stageAt[u].push_back(at);
    }
    stagingBytes = std::max(stagingBytes, staged);
    int64_t perMember = 0;
    if (unit.rule->workspaceElements)
      for (size_t p : members) {
        const std::vector<int64_t> &shape = setup_.schedule->params[p].shape;
        perMember = std::max(perMember,
                             unit.rule->workspaceElements(
                                 shape.data(), static_cast<int>(shape.size())));
      }
    unit.call.workspacePerMember = static_cast<int64_t>(
        alignUp(static_cast<size_t>(perMember) * sizeof(float)) /
        sizeof(float));
    workspaceBytes = std::max(
        workspaceBytes, static_cast<size_t>(unit.call.workspacePerMember) *
                            sizeof(float) * members.size());
  }

  states_.allocate(stateArena, "optimizer state");
  if (stateArena)
    OPTGEN_CUDA_CHECK(cudaMemset(states_.data(), 0, stateArena),
                      "zeroing the optimizer state");
  staging_.allocate(stagingBytes, "f32 staging of bf16 parameters");
  workspace_.allocate(workspaceBytes, "the rules' workspace");

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
  stepSlot_.assign(params.size(), 0);
  size_t slot = hyperWords_;
  for (const Unit &unit : units_)
    for (size_t p : unit.spec->params)
      stepSlot_[p] = slot++;
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
  std::vector<TableOffsets> offsets(units_.size());
  stateOf_.assign(params.size(), {});
  for (size_t u = 0; u < units_.size(); ++u) {
    Unit &unit = units_[u];
    const std::vector<size_t> &members = unit.spec->params;
    size_t count = members.size(), states = unit.rule->states.size();
    std::vector<float *> paramPtrs, statePtrs(states * count);
    std::vector<const float *> gradPtrs;
    std::vector<int64_t> numels;
    std::vector<StagingCopy> widen, narrow;
    std::vector<size_t> stateUsed(states, 0);
    for (size_t k = 0; k < count; ++k) {
      size_t p = members[k];
      const ExecutorParam &param = params[p];
      int64_t numel = param.param.numel();
      numels.push_back(numel);
      float *paramAt = static_cast<float *>(param.param.data);
      const float *gradAt = static_cast<const float *>(param.grad.data);
      if (param.param.dtype == DType::BF16) {
        paramAt =
            reinterpret_cast<float *>(staging_.data() + stageAt[u][k].first);
        widen.push_back({param.param.data, paramAt, numel});
        narrow.push_back({paramAt, param.param.data, numel});
        unit.staged = std::max(unit.staged, numel);
      }
      if (param.grad.dtype == DType::BF16) {
        float *stage =
            reinterpret_cast<float *>(staging_.data() + stageAt[u][k].second);
        widen.push_back({param.grad.data, stage, numel});
        gradAt = stage;
        unit.staged = std::max(unit.staged, numel);
      }
      paramPtrs.push_back(paramAt);
      gradPtrs.push_back(gradAt);
      for (size_t s = 0; s < states; ++s) {
        float *state =
            reinterpret_cast<float *>(states_.data() + stateAt[u][s]) +
            stateUsed[s];
        statePtrs[s * count + k] = state;
        stateOf_[p].push_back(state);
        stateUsed[s] +=
            static_cast<size_t>(param.stateRows[s] * param.stateCols[s]);
      }
      unit.call.maxNumel = std::max(unit.call.maxNumel, numel);
    }
    offsets[u] = {append(paramPtrs), append(gradPtrs), append(statePtrs),
                  append(numels),    append(widen),    append(narrow)};
    unit.widenCount = static_cast<int>(widen.size());
    unit.narrowCount = static_cast<int>(narrow.size());
  }
  tables_.allocate(image.size(), "the units' tables");
  if (!image.empty())
    OPTGEN_CUDA_CHECK(cudaMemcpy(tables_.data(), image.data(), image.size(),
                                 cudaMemcpyHostToDevice),
                      "copying the units' tables");

  OPTGEN_CUDA_CHECK(cudaStreamCreateWithFlags(&own_, cudaStreamNonBlocking),
                    "creating the CUDA executor's stream");
  OPTGEN_CUDA_CHECK(cudaEventCreateWithFlags(&order_, cudaEventDisableTiming),
                    "creating the CUDA executor's event");
  stream_ = streamFor(requested_);
  // Only a rule that is not elementwise multiplies matrices.
  if (std::any_of(units_.begin(), units_.end(),
                  [](const Unit &unit) { return !unit.rule->elementwise; }))
    blas_ = DeviceBlas::create();

  const double *hypers = reinterpret_cast<const double *>(values_.data());
  const int64_t *steps = reinterpret_cast<const int64_t *>(values_.data());
  for (size_t u = 0; u < units_.size(); ++u) {
    Unit &unit = units_[u];
    DeviceCall &call = unit.call;
    const unsigned char *tables = tables_.data();
    size_t first = unit.spec->params[0];
    call.members = static_cast<int>(unit.spec->params.size());
    call.shape = unit.shape.empty() ? nullptr : unit.shape.data();
    call.rank = static_cast<int>(unit.shape.size());
    if (unit.common)
      std::tie(call.rows, call.cols) = asRowsCols(unit.shape);
    call.stream = stream_;
    call.params = reinterpret_cast<float *const *>(tables + offsets[u].params);
    call.grads =
        reinterpret_cast<const float *const *>(tables + offsets[u].grads);
    call.states = reinterpret_cast<float *const *>(tables + offsets[u].states);
    call.numels = reinterpret_cast<const int64_t *>(tables + offsets[u].numels);
    call.steps = steps + stepSlot_[first];
    call.hypers =
        hypers + hyperArrays_[arrayOf.at(setup_.params[first].hypers)].at;
    call.hostHypers = setup_.params[first].hypers;
    call.blas = blas_.handle() ? &blas_ : nullptr;
    call.workspace = call.workspacePerMember
                         ? reinterpret_cast<float *>(workspace_.data())
                         : nullptr;
    unit.widen =
        reinterpret_cast<const StagingCopy *>(tables + offsets[u].widen);
    unit.narrow =
        reinterpret_cast<const StagingCopy *>(tables + offsets[u].narrow);
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
  for (Unit &unit : units_)
    unit.computed = false;
  replayed_ = 0;
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
}

void CudaExecutorImpl::enqueue(const Unit &unit) {
  // The unit names itself: no message is built unless something fails.
  checkCuda(launchWidenBF16(unit.widen, unit.widenCount, unit.staged, stream_),
            "widening bf16 to f32", unit.about);
  if (unit.call.maxNumel > 0) {
    try {
      unit.rule->launch(unit.call);
    } catch (const Error &error) {
      throw Error(unit.about + ": " + error.what());
    }
    checkCuda(cudaGetLastError(), "the rule's launch", unit.about);
  }
  checkCuda(
      launchNarrowToBF16(unit.narrow, unit.narrowCount, unit.staged, stream_),
      "rounding to bf16", unit.about);
}

void CudaExecutorImpl::compute(int index) {
  Unit &u = unit(index, "compute");
  if (u.computed)
    fail(u.name + ": compute after it was computed");
  if (replaying()) {
    // Every unit is computed once per step: the captured order has one
    // unit at each of this step's computes.
    if (captured_[replayed_] != index)
      fail(u.name +
           ": computed out of the order of the step captured as a "
           "CUDA graph, where unit " +
           std::to_string(captured_[replayed_]) + " came next");
    ++replayed_;
  } else {
    try {
      DeviceGuard guard(device_);
      enqueue(u);
    } catch (...) {
      abandonCapture();
      throw;
    }
    if (capturing_)
      captured_.push_back(index);
  }
  u.computed = true;
}

void CudaExecutorImpl::endStep() {
  for (const Unit &unit : units_)
    if (!unit.computed)
      fail("the step left " + unit.name + " incomplete: it was not computed");
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

Token CudaExecutorImpl::launchAllReduce(int index) {
  fail(unit(index, "all-reduce").name + " has no all-reduce");
}

Token CudaExecutorImpl::launchReduceScatter(int index) {
  fail(unit(index, "reduce-scatter").name + " has no reduce-scatter");
}

Token CudaExecutorImpl::launchAllGather(int index) {
  fail(unit(index, "all-gather").name + " has no all-gather");
}

void CudaExecutorImpl::wait(Token) {
  fail("wait for a token no collective gave");
}

void CudaExecutorImpl::readState(size_t param, size_t state,
                                 float *values) const {
  const ExecutorParam &p = setup_.params.at(param);
  size_t bytes =
      static_cast<size_t>(p.stateRows.at(state) * p.stateCols.at(state)) *
      sizeof(float);
  if (!bytes)
    return;
  std::string context = "reading state '" + std::string(p.rule->states[state]) +
                        "' of parameter '" + paramName(param) + "'";
  DeviceGuard guard(device_);
  OPTGEN_CUDA_CHECK(cudaMemcpyAsync(values, stateOf_[param][state], bytes,
                                    cudaMemcpyDeviceToHost, stream_),
                    context);
  OPTGEN_CUDA_CHECK(cudaStreamSynchronize(stream_), context);
}

void CudaExecutorImpl::writeState(size_t param, size_t state,
                                  const float *values) {
  const ExecutorParam &p = setup_.params.at(param);
  size_t bytes =
      static_cast<size_t>(p.stateRows.at(state) * p.stateCols.at(state)) *
      sizeof(float);
  if (!bytes)
    return;
  std::string context = "writing state '" + std::string(p.rule->states[state]) +
                        "' of parameter '" + paramName(param) + "'";
  DeviceGuard guard(device_);
  OPTGEN_CUDA_CHECK(cudaMemcpyAsync(stateOf_[param][state], values, bytes,
                                    cudaMemcpyHostToDevice, stream_),
                    context);
  OPTGEN_CUDA_CHECK(cudaStreamSynchronize(stream_), context);
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
    unit.call.stream = next;
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
