//===- HostExecutor.cpp - Steps on the host -------------------------------===//

#include "optgen/runtime/HostExecutor.h"

#include "optgen/runtime/Error.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <tuple>
#include <utility>

namespace optgen::runtime {

namespace {

/// Zeroed floats in memory of their own; from 2 MiB up, in transparent huge
/// pages where the system has them (madvise): the matrices in a step's
/// workspace are read with large strides (BLAS packing, transposed
/// products), and on 4 KiB pages that costs a TLB miss every few rows.
class HugeBuffer {
public:
  HugeBuffer() = default;
  explicit HugeBuffer(size_t floats) {
    if (floats == 0)
      return;
    constexpr size_t kHuge = size_t(2) << 20, kLine = 64;
    // Smaller buffers keep to cache lines (no page of their own).
    bool huge = floats * sizeof(float) >= kHuge;
    size_t align = huge ? kHuge : kLine;
    bytes_ = (floats * sizeof(float) + align - 1) / align * align;
    void *memory = std::aligned_alloc(align, bytes_);
    if (!memory)
      throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    if (huge)
      madvise(memory, bytes_, MADV_HUGEPAGE);
#endif
    std::memset(memory, 0, bytes_);
    data_.reset(static_cast<float *>(memory));
  }
  float *data() const { return data_.get(); }

private:
  struct Free {
    void operator()(float *memory) const { std::free(memory); }
  };
  std::unique_ptr<float[], Free> data_;
  size_t bytes_ = 0;
};


/// One rule call a step makes on this rank: a parameter, or the part of it
/// this rank steps, with where each input and output lives. Everything is
/// fixed at prepare(), so that a step only converts, steps and copies.
struct Call {
  size_t index; ///< the parameter's, in the schedule
  const RuleSpec *rule;
  ElementRange range;
  /// What the rule sees: rows x cols and the shape (the parameter's, or
  /// one row of the part's elements).
  int64_t rows, cols;
  std::vector<int64_t> shape;
  /// The gradient: the caller's or the averaged one in a collective
  /// buffer; staged in f32 when it is not f32.
  const void *grad;
  DType gradDType;
  float *gradStage = nullptr;
  /// The caller's parameter at range.begin; staged when it is not f32.
  void *param;
  DType paramDType;
  float *paramStage = nullptr;
  /// Flat and Owned: where the updated elements go for the all-gather.
  void *gather = nullptr;
  DType payload = DType::F32;
  std::vector<float *> states;
  const int64_t *stateRows, *stateCols;
  const double *hypers;
  const int64_t *steps;
};

struct Unit {
  const StepUnit *spec = nullptr;
  std::vector<Call> calls; ///< this rank's, in member order
  /// Per member, where it starts in the packed order.
  std::vector<int64_t> offsets;
  /// Small: the gradients, all-reduced in place. Flat and Owned: the
  /// reduce-scatter's input and the all-gather's output.
  std::vector<unsigned char> packed;
  /// Flat and Owned: this rank's part, the reduce-scatter's output (the
  /// averaged gradients) and then the all-gather's input (the updates).
  std::vector<unsigned char> part;
  /// Per state index, the state of every call that has it, contiguous: a
  /// bucket's K same-shape matrices hold each state as one [K, rows, cols].
  std::vector<std::vector<float>> states;
  /// The calls are independent matrix updates of one rule, stepped in
  /// parallel across the batch.
  bool batched = false;
  UnitPhase phase = UnitPhase::Idle;
  /// Its partials are in the step's (a step with globals).
  bool partials = false;
  RequestPtr reduction, gather;
};

/// The threads a parallel region may have, and this one's number in it.
int maxThreads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

int threadIndex() {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

/// Whether `count` elements of `dtype` (F32, BF16 or F16) at `data` are
/// all finite: one branch-free pass that vectorises.
bool allFinite(const void *data, DType dtype, int64_t count) {
  if (dtype == DType::F32) {
    const float *values = static_cast<const float *>(data);
    bool bad = false;
    for (int64_t i = 0; i < count; ++i)
      bad |= !(values[i] - values[i] == 0.0f); // NaN and infinities
    return !bad;
  }
  const uint16_t *bits = static_cast<const uint16_t *>(data);
  uint16_t exponent = dtype == DType::BF16 ? 0x7f80 : 0x7c00;
  bool bad = false;
  for (int64_t i = 0; i < count; ++i)
    bad |= (bits[i] & exponent) == exponent;
  return !bad;
}

/// convertElements(), checking what it wrote while it is still in cache:
/// whether every element is finite.
bool convertChecked(const void *src, DType from, void *dst, DType to,
                    int64_t count) {
  constexpr int64_t kChunk = 8192;
  bool finite = true;
  size_t fromSize = dtypeSize(from), toSize = dtypeSize(to);
  for (int64_t at = 0; at < count; at += kChunk) {
    int64_t n = std::min(kChunk, count - at);
    const void *in = static_cast<const unsigned char *>(src) + at * fromSize;
    void *out = static_cast<unsigned char *>(dst) + at * toSize;
    convertElements(in, from, out, to, n);
    finite &= allFinite(out, to, n);
  }
  return finite;
}

int64_t numelOf(const std::vector<int64_t> &shape) {
  auto [rows, cols] = asRowsCols(shape);
  return rows * cols;
}

class HostExecutor final : public Executor {
public:
  void prepare(const ExecutorSetup &setup) override;
  bool runsShardGroups() const override { return true; }
  void beginStep() override;
  void endStep() override;
  Token launchAllReduce(int unit) override;
  Token launchReduceScatter(int unit) override;
  Token launchAllGather(int unit) override;
  void wait(Token token) override;
  void compute(int unit) override;
  void rebind(size_t param, const TensorView &data,
              const TensorView &grad) override;
  void accumulatePartials(int unit) override;
  Token launchPartialsGather() override;
  void finishGlobals() override;
  bool runsGlobals() const override { return true; }
  std::vector<float> globalValues() const override { return globalValues_; }
  void readState(size_t param, size_t state, float *values) const override;
  void writeState(size_t param, size_t state, const float *values) override;
  int64_t stateBytes() const override;
  int64_t bytesSent() const override { return sent_; }
  int64_t bytesReceived() const override { return received_; }
  bool canSkipNonFinite() const override { return true; }
  bool lastStepSkipped() const override { return skipped_; }

private:
  /// Skip mode: once every reduction is launched, whether any rank's
  /// gradients were non-finite (then the step computes and gathers
  /// nothing); throws when a unit computes before that is known.
  bool skipping(const char *what, int index);
  /// The unit `index`, after checking that it exists.
  Unit &unit(int index, const char *what);
  /// Throws Error unless `unit` is in `phase`.
  void expectPhase(const Unit &unit, int index, UnitPhase phase,
                   const char *what) const;
  std::string describe(int index) const;
  void pack(Unit &unit);
  /// The call's parameter and gradient in f32: where they are, or staged.
  std::pair<float *, const float *> stage(const Call &call) const;
  /// Steps one call with `workspace` as its scratch.
  void run(const Call &call, float *workspace) const;
  /// Throws Error unless the spec has globals; `what` names the primitive.
  void expectGlobals(const char *what) const;
  void count(const Unit &unit, ScheduleOp::Kind collective);

  ExecutorSetup setup_;
  std::vector<Unit> units_;
  /// f32 staging of non-f32 gradients and parameters: one unit's worth,
  /// as units compute one at a time.
  std::vector<float> staging_;
  /// The scratch of the calls that may run at once (one per thread of a
  /// batch), each workspaceElements_ floats.
  HugeBuffer workspace_;
  int64_t workspaceElements_ = 0;
  int workspaceSlots_ = 1;
  /// Per call of the largest unit, what its rule threw in a batch.
  std::vector<std::exception_ptr> errors_;
  /// Per parameter, its call: {unit, call}, or {-1, -1} when this rank
  /// steps none of it.
  std::vector<std::pair<int, int>> callOf_;
  int64_t sent_ = 0, received_ = 0;
  /// NonFinitePolicy::Skip. Units with a reduction check the gradients as
  /// they pack them and agree with one more one-float all-reduce after the
  /// last reduction's launch; local units (one rank) check them in a pass
  /// of their own at beginStep().
  bool skipNonFinite_ = false;
  int reductionUnits_ = 0, launchedReductions_ = 0;
  bool nonFinite_ = false, resolved_ = false, skipped_ = false;
  float flag_ = 0;
  RequestPtr flagRequest_;
  /// The globals (null without): this step's partials (each unit's
  /// combined into them in program order), one call's contribution, every
  /// rank of the shard group's partials once gathered, and the values the
  /// last finish gave.
  const GlobalsSpec *globals_ = nullptr;
  enum class GlobalsPhase { Accumulating, Gathering, Gathered, Finished };
  GlobalsPhase globalsPhase_ = GlobalsPhase::Accumulating;
  /// Some unit has a collective: the partials are gathered before the
  /// finish.
  bool distributed_ = false;
  std::vector<double> partials_, contribution_, gathered_;
  std::vector<float> globalValues_;
  RequestPtr partialsRequest_;
};

std::string HostExecutor::describe(int index) const {
  return "unit " + std::to_string(index) + " (" +
         unitKindName(units_[index].spec->kind) + ")";
}

Unit &HostExecutor::unit(int index, const char *what) {
  if (index < 0 || static_cast<size_t>(index) >= units_.size())
    throw Error(std::string(what) + " of unit " + std::to_string(index) +
                ", of " + std::to_string(units_.size()));
  return units_[index];
}

void HostExecutor::expectPhase(const Unit &unit, int index, UnitPhase phase,
                               const char *what) const {
  if (unit.phase != phase)
    throw Error(outOfOrder(describe(index), what, unit.phase));
}

void HostExecutor::prepare(const ExecutorSetup &setup) {
  setup_ = setup; // the calls point into this copy's parameters
  skipNonFinite_ = setup.skipNonFinite;
  reductionUnits_ = 0;
  for (const StepUnit &unit : setup.schedule->units)
    reductionUnits_ += unit.kind != UnitKind::Local;
  distributed_ = reductionUnits_ > 0;
  globals_ = setup.globals && !setup.globals->empty() ? setup.globals : nullptr;
  if (globals_) {
    if (!globals_->contribution || !globals_->finish ||
        globals_->partials.empty())
      throw Error("the spec's globals have no partials, contribution or "
                  "finish");
    size_t count = globals_->partials.size();
    partials_.assign(count, 0.0);
    contribution_.assign(count, 0.0);
    gathered_.assign(count * shardGroupOf(*setup.schedule), 0.0);
    globalValues_.clear();
  }
  const StepSchedule &schedule = *setup_.schedule;
  // Counts and owners are by position in a shard group (every rank's, when
  // there are no groups).
  int group = shardGroupOf(schedule);
  int rank = setup_.rank % group;
  if (group < schedule.worldSize &&
      (!setup_.groupCommunicator || !setup_.crossCommunicator))
    throw Error("a step in shard groups needs the group's communicators");
  for (size_t p = 0; p < setup_.params.size(); ++p)
    for (const TensorView *view :
         {&setup_.params[p].param, &setup_.params[p].grad})
      if (view->device != Device::Host)
        throw Error("parameter '" + schedule.params[p].name + "' is in " +
                    std::string(deviceName(view->device)) +
                    " memory; the host executor steps host memory");
  for (size_t p = 0; p < setup_.params.size(); ++p)
    if (!setup_.params[p].rule->step)
      throw Error("parameter '" + schedule.params[p].name + "' runs rule '" +
                  setup_.params[p].rule->name +
                  "', which was compiled for a device, not the host");

  units_.clear();
  units_.resize(schedule.units.size());
  callOf_.assign(schedule.params.size(), {-1, -1});
  size_t stagingSize = 0;
  for (size_t u = 0; u < units_.size(); ++u) {
    Unit &unit = units_[u];
    const StepUnit &spec = schedule.units[u];
    unit.spec = &spec;
    size_t payloadSize = dtypeSize(spec.payload);
    int64_t total = 0;
    for (size_t p : spec.params) {
      unit.offsets.push_back(total);
      total += numelOf(schedule.params[p].shape);
    }
    bool split = spec.kind == UnitKind::Flat || spec.kind == UnitKind::Owned;
    int64_t mine = 0; // where this rank's part starts in the packed order
    if (spec.kind == UnitKind::Small) {
      unit.packed.assign(static_cast<size_t>(total) * payloadSize, 0);
    } else if (split) {
      int64_t counted = 0;
      for (int r = 0; r < group; ++r) {
        if (r == rank)
          mine = counted;
        counted += spec.counts[r];
      }
      unit.packed.assign(static_cast<size_t>(counted) * payloadSize, 0);
      unit.part.assign(static_cast<size_t>(spec.counts[rank]) * payloadSize, 0);
    }

    for (size_t k = 0; k < spec.params.size(); ++k) {
      size_t p = spec.params[k];
      const ExecutorParam &param = setup_.params[p];
      ElementRange range = spec.ranges[rank][k];
      bool here = spec.kind == UnitKind::Local ||
                  spec.kind == UnitKind::Small ||
                  (spec.kind == UnitKind::Flat && range.length > 0) ||
                  (spec.kind == UnitKind::Owned && spec.owners[k] == rank);
      if (!here)
        continue;
      Call call;
      call.index = p;
      call.rule = param.rule;
      call.range = range;
      const std::vector<int64_t> &shape = schedule.params[p].shape;
      if (range.length == numelOf(shape)) {
        call.shape = shape;
        std::tie(call.rows, call.cols) = asRowsCols(shape);
      } else {
        // A part of an elementwise rule's parameter: one row of elements.
        call.shape = {range.length};
        call.rows = 1;
        call.cols = range.length;
      }
      if (spec.kind == UnitKind::Local) {
        call.grad = static_cast<const unsigned char *>(param.grad.data) +
                    range.begin * dtypeSize(param.grad.dtype);
        call.gradDType = param.grad.dtype;
      } else {
        unsigned char *at =
            spec.kind == UnitKind::Small
                ? unit.packed.data() + unit.offsets[k] * payloadSize
                : unit.part.data() +
                      (unit.offsets[k] + range.begin - mine) * payloadSize;
        call.grad = at;
        call.gradDType = spec.payload;
        if (split) {
          call.gather = at;
          call.payload = spec.payload;
        }
      }
      call.param = static_cast<unsigned char *>(param.param.data) +
                   range.begin * dtypeSize(param.param.dtype);
      call.paramDType = param.param.dtype;
      call.stateRows = param.stateRows.data();
      call.stateCols = param.stateCols.data();
      call.hypers = param.hypers;
      call.steps = param.steps;
      callOf_[p] = {static_cast<int>(u), static_cast<int>(unit.calls.size())};
      unit.calls.push_back(std::move(call));
    }

    // One allocation per state index for the unit's calls, each call's
    // state at its offset in it.
    size_t stateCount = 0;
    for (const Call &call : unit.calls)
      stateCount = std::max(stateCount, call.rule->states.size());
    unit.states.resize(stateCount);
    for (size_t s = 0; s < stateCount; ++s) {
      size_t size = 0;
      for (const Call &call : unit.calls)
        if (s < call.rule->states.size())
          size += static_cast<size_t>(call.stateRows[s] * call.stateCols[s]);
      unit.states[s].assign(size, 0.0f);
    }
    std::vector<size_t> at(stateCount, 0);
    size_t staged = 0;
    for (Call &call : unit.calls) {
      for (size_t s = 0; s < call.rule->states.size(); ++s) {
        call.states.push_back(unit.states[s].data() + at[s]);
        at[s] += static_cast<size_t>(call.stateRows[s] * call.stateCols[s]);
      }
      size_t length = static_cast<size_t>(call.range.length);
      staged += (call.gradDType != DType::F32 ? length : 0) +
                (call.paramDType != DType::F32 ? length : 0);
    }
    stagingSize = std::max(stagingSize, staged);
  }
  // A batch runs its calls on up to every thread, each with its own
  // workspace; anything else one call at a time.
  workspaceElements_ = 0;
  workspaceSlots_ = 1;
  size_t mostCalls = 0;
  for (Unit &unit : units_) {
    unit.batched = unit.spec->rule >= 0 && unit.calls.size() > 1 &&
                   !unit.calls[0].rule->elementwise;
    if (unit.batched)
      workspaceSlots_ =
          std::max(workspaceSlots_,
                   std::min(static_cast<int>(unit.calls.size()), maxThreads()));
    mostCalls = std::max(mostCalls, unit.calls.size());
    for (const Call &call : unit.calls)
      if (call.rule->workspaceElements)
        workspaceElements_ = std::max(
            workspaceElements_,
            call.rule->workspaceElements(call.shape.data(),
                                         static_cast<int>(call.shape.size())));
  }
  workspace_ = HugeBuffer(static_cast<size_t>(workspaceElements_) *
                         workspaceSlots_);
  errors_.assign(mostCalls, nullptr);

  // Each unit's calls stage into their own slices of one shared area.
  staging_.assign(stagingSize, 0.0f);
  for (Unit &unit : units_) {
    float *at = staging_.data();
    for (Call &call : unit.calls) {
      if (call.gradDType != DType::F32) {
        call.gradStage = at;
        at += call.range.length;
      }
      if (call.paramDType != DType::F32) {
        call.paramStage = at;
        at += call.range.length;
      }
    }
  }
}

void HostExecutor::beginStep() {
  // A step that failed half-way may have left collectives in flight: their
  // Requests complete them as they go.
  for (Unit &unit : units_) {
    unit.reduction.reset();
    unit.gather.reset();
    unit.phase = UnitPhase::Idle;
  }
  flagRequest_.reset();
  partialsRequest_.reset();
  if (globals_) {
    for (Unit &unit : units_)
      unit.partials = false;
    resetPartials(*globals_, partials_.data());
    globalsPhase_ = GlobalsPhase::Accumulating;
  }
  sent_ = received_ = 0;
  launchedReductions_ = 0;
  nonFinite_ = resolved_ = skipped_ = false;
  if (skipNonFinite_ && reductionUnits_ == 0) {
    // Local units read the caller's gradients where they are: no pass over
    // them happens anyway, so the check is one of its own.
    for (const ExecutorParam &param : setup_.params)
      nonFinite_ |= !allFinite(param.grad.data, param.grad.dtype,
                               numelOf(param.grad.shape));
    skipped_ = nonFinite_;
    resolved_ = true;
  }
}

bool HostExecutor::skipping(const char *what, int index) {
  if (!skipNonFinite_ || resolved_)
    return skipped_;
  if (launchedReductions_ < reductionUnits_)
    throw Error(describe(index) + ": " + what +
                " before every reduction was launched, which skipping steps "
                "with non-finite gradients needs");
  flagRequest_->wait();
  skipped_ = flag_ > 0;
  resolved_ = true;
  return skipped_;
}

void HostExecutor::endStep() {
  if (globals_ && globalsPhase_ != GlobalsPhase::Finished)
    throw Error("the step did not finish its globals");
  for (size_t u = 0; u < units_.size(); ++u) {
    const Unit &unit = units_[u];
    if (unit.phase != finalPhase(unit.spec->kind))
      throw Error(incompleteUnit(describe(static_cast<int>(u)),
                                 unit.spec->kind, unit.phase));
  }
}

void HostExecutor::count(const Unit &unit, ScheduleOp::Kind collective) {
  Traffic traffic = collectiveTraffic(
      *setup_.schedule, static_cast<int>(&unit - units_.data()), collective,
      setup_.rank);
  sent_ += traffic.sent;
  received_ += traffic.received;
}

void HostExecutor::pack(Unit &unit) {
  const StepUnit &spec = *unit.spec;
  size_t payloadSize = dtypeSize(spec.payload);
  int64_t end = 0;
  for (size_t k = 0; k < spec.params.size(); ++k) {
    const TensorView &grad = setup_.params[spec.params[k]].grad;
    int64_t numel = numelOf(grad.shape);
    void *packed = unit.packed.data() + unit.offsets[k] * payloadSize;
    if (skipNonFinite_)
      nonFinite_ |=
          !convertChecked(grad.data, grad.dtype, packed, spec.payload, numel);
    else
      convertElements(grad.data, grad.dtype, packed, spec.payload, numel);
    end = unit.offsets[k] + numel;
  }
  // The padding of equal parts reduces to zeros.
  size_t used = static_cast<size_t>(end) * payloadSize;
  std::memset(unit.packed.data() + used, 0, unit.packed.size() - used);
  if (skipNonFinite_ && ++launchedReductions_ == reductionUnits_) {
    // Every rank has checked its gradients: one float says whether any
    // found a non-finite one (launched in the same order on every rank).
    flag_ = nonFinite_ ? 1.0f : 0.0f;
    flagRequest_ =
        setup_.communicator->allReduceMean(&flag_, 1, DType::F32);
  }
}

Token HostExecutor::launchAllReduce(int index) {
  Unit &u = unit(index, "all-reduce");
  if (u.spec->kind != UnitKind::Small)
    throw Error(describe(index) + " has no all-reduce");
  expectPhase(u, index, UnitPhase::Idle, "all-reduce");
  pack(u);
  u.reduction = setup_.communicator->allReduceMean(
      u.packed.data(), u.spec->counts[0], u.spec->payload);
  count(u, ScheduleOp::Kind::AllReduce);
  u.phase = UnitPhase::Reducing;
  return Token{2 * index};
}

Token HostExecutor::launchReduceScatter(int index) {
  Unit &u = unit(index, "reduce-scatter");
  if (u.spec->kind != UnitKind::Flat && u.spec->kind != UnitKind::Owned)
    throw Error(describe(index) + " has no reduce-scatter");
  expectPhase(u, index, UnitPhase::Idle, "reduce-scatter");
  pack(u);
  // With shard groups: within the group, then the part across the groups.
  Communicator &group = setup_.groupCommunicator ? *setup_.groupCommunicator
                                                 : *setup_.communicator;
  u.reduction = group.reduceScatterMean(u.packed.data(), u.part.data(),
                                        u.spec->counts, u.spec->payload);
  if (setup_.crossCommunicator)
    u.reduction = thenAllReduceMean(
        std::move(u.reduction), *setup_.crossCommunicator, u.part.data(),
        u.spec->counts[setup_.rank % group.size()], u.spec->payload);
  count(u, ScheduleOp::Kind::ReduceScatter);
  u.phase = UnitPhase::Reducing;
  return Token{2 * index};
}

Token HostExecutor::launchAllGather(int index) {
  Unit &u = unit(index, "all-gather");
  if (u.spec->kind != UnitKind::Flat && u.spec->kind != UnitKind::Owned)
    throw Error(describe(index) + " has no all-gather");
  expectPhase(u, index, UnitPhase::Computed, "all-gather");
  if (skipping("all-gather", index)) {
    // Every rank skips: nothing was updated, nothing to share.
    u.phase = UnitPhase::Gathering;
    return Token{2 * index + 1};
  }
  Communicator &group = setup_.groupCommunicator ? *setup_.groupCommunicator
                                                 : *setup_.communicator;
  u.gather = group.allGather(u.part.data(), u.packed.data(), u.spec->counts,
                             u.spec->payload);
  count(u, ScheduleOp::Kind::AllGather);
  u.phase = UnitPhase::Gathering;
  return Token{2 * index + 1};
}

void HostExecutor::wait(Token token) {
  if (token.slot < 0)
    throw Error("wait for a token no collective gave");
  if (token.slot == 2 * static_cast<int>(units_.size())) {
    expectGlobals("wait for the partials' gather");
    if (globalsPhase_ != GlobalsPhase::Gathering)
      throw Error("wait for the partials' gather, which is not in flight");
    partialsRequest_->wait();
    globalsPhase_ = GlobalsPhase::Gathered;
    return;
  }
  int index = token.slot / 2;
  Unit &u = unit(index, "wait");
  if (token.slot % 2 == 0) {
    expectPhase(u, index, UnitPhase::Reducing, "wait for the reduction");
    u.reduction->wait();
    u.phase = UnitPhase::Reduced;
    return;
  }
  expectPhase(u, index, UnitPhase::Gathering, "wait for the all-gather");
  if (!u.gather) { // a skipped step's
    u.phase = UnitPhase::Done;
    return;
  }
  u.gather->wait();
  // Every rank's updates, into every member.
  size_t payloadSize = dtypeSize(u.spec->payload);
  for (size_t k = 0; k < u.spec->params.size(); ++k) {
    const TensorView &param = setup_.params[u.spec->params[k]].param;
    convertElements(u.packed.data() + u.offsets[k] * payloadSize,
                    u.spec->payload, param.data, param.dtype,
                    numelOf(param.shape));
  }
  u.phase = UnitPhase::Done;
}

std::pair<float *, const float *> HostExecutor::stage(const Call &call) const {
  int64_t length = call.range.length;
  float *param = static_cast<float *>(call.param);
  if (call.paramStage) {
    convertElements(call.param, call.paramDType, call.paramStage, DType::F32,
                    length);
    param = call.paramStage;
  }
  const float *grad = static_cast<const float *>(call.grad);
  if (call.gradStage) {
    convertElements(call.grad, call.gradDType, call.gradStage, DType::F32,
                    length);
    grad = call.gradStage;
  }
  return {param, grad};
}

void HostExecutor::run(const Call &call, float *workspace) const {
  int64_t length = call.range.length;
  if (length == 0)
    return; // a parameter without elements: nothing to update
  auto [param, grad] = stage(call);
  RuleCall ruleCall{param,
                    grad,
                    call.states.data(),
                    call.stateRows,
                    call.stateCols,
                    call.rows,
                    call.cols,
                    call.shape.data(),
                    static_cast<int>(call.shape.size()),
                    call.hypers,
                    *call.steps,
                    // Only a rule that asks for one: its workspace is sized
                    // for the rules that do.
                    call.rule->workspaceElements ? workspace : nullptr,
                    globals_ ? globalValues_.data() : nullptr};
  try {
    call.rule->step(ruleCall);
  } catch (const Error &error) {
    throw Error("parameter '" + setup_.schedule->params[call.index].name +
                "' (rule '" + call.rule->name + "'): " + error.what());
  }
  if (call.paramStage)
    convertElements(call.paramStage, DType::F32, call.param, call.paramDType,
                    length);
  if (call.gather)
    convertElements(param, DType::F32, call.gather, call.payload, length);
}

void HostExecutor::compute(int index) {
  Unit &u = unit(index, "compute");
  expectPhase(u, index,
              u.spec->kind == UnitKind::Local ? UnitPhase::Idle : UnitPhase::Reduced,
              "compute");
  if (globals_ && globalsPhase_ != GlobalsPhase::Finished)
    throw Error(describe(index) +
                ": compute before the globals it reads are finished");
  if (skipping("compute", index)) {
    u.phase = UnitPhase::Computed; // nothing changes in a skipped step
    return;
  }
  auto workspace = [&](int slot) {
    return workspaceElements_ ? workspace_.data() + slot * workspaceElements_
                              : nullptr;
  };
  if (!u.batched || workspaceSlots_ == 1) {
    for (const Call &call : u.calls)
      run(call, workspace(0));
    u.phase = UnitPhase::Computed;
    return;
  }
  // The batch's members in parallel, each call on one thread (its loops'
  // nested regions, and an OpenMP OpenBLAS's products, then run on that
  // thread alone): the same computations as one at a time, so the same
  // bits. An exception may not leave a parallel region: the first in
  // member order is rethrown after it.
  int calls = static_cast<int>(u.calls.size());
  std::fill_n(errors_.begin(), calls, nullptr);
#ifdef _OPENMP
  int slots = std::min(calls, workspaceSlots_);
#pragma omp parallel for num_threads(slots) schedule(dynamic, 1)
#endif
  for (int c = 0; c < calls; ++c) {
    try {
      run(u.calls[c], workspace(threadIndex()));
    } catch (...) {
      errors_[c] = std::current_exception();
    }
  }
  for (int c = 0; c < calls; ++c)
    if (errors_[c])
      std::rethrow_exception(errors_[c]);
  u.phase = UnitPhase::Computed;
}

void HostExecutor::rebind(size_t param, const TensorView &data,
                          const TensorView &grad) {
  ExecutorParam &p = setup_.params.at(param);
  p.param = data;
  p.grad = grad;
  // Packing, the non-finite check and the all-gather read the views; only
  // the call holds pointers of its own.
  auto [u, c] = callOf_[param];
  if (u < 0)
    return;
  Call &call = units_[u].calls[c];
  call.param = static_cast<unsigned char *>(data.data) +
               call.range.begin * dtypeSize(data.dtype);
  if (units_[u].spec->kind == UnitKind::Local)
    call.grad = static_cast<const unsigned char *>(grad.data) +
                call.range.begin * dtypeSize(grad.dtype);
}

void HostExecutor::expectGlobals(const char *what) const {
  if (!globals_)
    throw Error(std::string(what) + ": the spec has no globals");
}

void HostExecutor::accumulatePartials(int index) {
  expectGlobals("partials");
  Unit &u = unit(index, "partials");
  expectPhase(u, index,
              u.spec->kind == UnitKind::Local ? UnitPhase::Idle
                                              : UnitPhase::Reduced,
              "partials");
  if (u.partials || globalsPhase_ != GlobalsPhase::Accumulating)
    throw Error(describe(index) +
                (u.partials ? ": partials twice in a step"
                            : ": partials after the partials' gather"));
  u.partials = true;
  // Every rank updates a small unit: the first of each group counts it.
  if (u.spec->kind == UnitKind::Small &&
      setup_.rank % shardGroupOf(*setup_.schedule) != 0)
    return;
  for (const Call &call : u.calls) {
    if (call.range.length == 0)
      continue;
    auto [param, grad] = stage(call);
    globals_->contribution(param, grad, call.range.length,
                           contribution_.data());
    combinePartials(*globals_, partials_.data(), contribution_.data());
  }
}

Token HostExecutor::launchPartialsGather() {
  expectGlobals("the partials' gather");
  if (!distributed_)
    throw Error("the partials' gather in a step of local units, whose "
                "partials are this rank's alone");
  if (globalsPhase_ != GlobalsPhase::Accumulating)
    throw Error("the partials' gather, twice in a step");
  for (size_t u = 0; u < units_.size(); ++u)
    if (!units_[u].partials)
      throw Error("the partials' gather before " +
                  describe(static_cast<int>(u)) + "'s partials");
  // Doubles as F32 words, which every communicator moves unchanged.
  Communicator &group = setup_.groupCommunicator ? *setup_.groupCommunicator
                                                 : *setup_.communicator;
  int64_t words = static_cast<int64_t>(partials_.size() * 2);
  partialsRequest_ = group.allGather(
      partials_.data(), gathered_.data(),
      std::vector<int64_t>(static_cast<size_t>(group.size()), words),
      DType::F32);
  Traffic traffic = partialsTraffic(static_cast<int64_t>(partials_.size()),
                                    group.size());
  sent_ += traffic.sent;
  received_ += traffic.received;
  globalsPhase_ = GlobalsPhase::Gathering;
  return Token{2 * static_cast<int>(units_.size())};
}

void HostExecutor::finishGlobals() {
  expectGlobals("finishGlobals");
  GlobalsPhase ready =
      distributed_ ? GlobalsPhase::Gathered : GlobalsPhase::Accumulating;
  if (globalsPhase_ != ready)
    throw Error(globalsPhase_ == GlobalsPhase::Finished
                    ? "finishGlobals, twice in a step"
                    : "finishGlobals before the partials were gathered");
  for (size_t u = 0; u < units_.size(); ++u)
    if (!units_[u].partials)
      throw Error("finishGlobals before " + describe(static_cast<int>(u)) +
                  "'s partials");
  if (distributed_) {
    // Rank order, from the same bits on every rank of the group.
    resetPartials(*globals_, partials_.data());
    size_t count = partials_.size();
    for (size_t r = 0; r * count < gathered_.size(); ++r)
      combinePartials(*globals_, partials_.data(), gathered_.data() + r * count);
  }
  globalValues_.assign(globals_->names.size(), 0.0f);
  globals_->finish(partials_.data(), globalValues_.data());
  globalsPhase_ = GlobalsPhase::Finished;
}

void HostExecutor::readState(size_t param, size_t state, float *values) const {
  auto [u, c] = callOf_.at(param);
  if (u < 0)
    return; // this rank holds none of it
  const Call &call = units_[u].calls[c];
  std::copy_n(call.states.at(state),
              call.stateRows[state] * call.stateCols[state], values);
}

void HostExecutor::writeState(size_t param, size_t state, const float *values) {
  auto [u, c] = callOf_.at(param);
  if (u < 0)
    return;
  const Call &call = units_[u].calls[c];
  std::copy_n(values, call.stateRows[state] * call.stateCols[state],
              call.states.at(state));
}

int64_t HostExecutor::stateBytes() const {
  int64_t bytes = 0;
  for (const Unit &unit : units_)
    for (const std::vector<float> &state : unit.states)
      bytes += static_cast<int64_t>(state.size() * sizeof(float));
  return bytes;
}

} // namespace

std::unique_ptr<Executor> makeHostExecutor() {
  return std::make_unique<HostExecutor>();
}

} // namespace optgen::runtime
