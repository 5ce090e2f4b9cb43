//===- OptimizerFront.cpp - The device-agnostic optimizer -----------------===//
//
// OptimizerFront's parameters, groups and hyperparameters, the schedule
// built at finalize(), the step, and checkpoints. What its ranks compare
// is in OptimizerAgreement.cpp.
//
//===----------------------------------------------------------------------===//

#include "optgen/runtime/OptimizerFront.h"

#include "OptimizerFrontInternal.h"
#include "optgen/runtime/Agreement.h"
#include "optgen/runtime/Error.h"
#include "optgen/runtime/Hash.h"
#include "optgen/runtime/Json.h"
#include "optgen/runtime/Safetensors.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <tuple>

namespace optgen::runtime {

OptimizerFront::OptimizerFront(OptimizerSpec spec,
                               std::unique_ptr<Executor> executor)
    : spec_(std::move(spec)), communicator_(makeSingleRankCommunicator()),
      executor_(std::move(executor)), onNonFinite_(spec_.onNonFinite) {
  if (!executor_)
    throw Error("optimizer '" + std::string(spec_.name) + "' has no executor");
  for (const RuleSpec &rule : spec_.rules)
    checkHyperLayout(rule);
  for (const GroupSpec &group : spec_.groups) {
    const RuleSpec &rule = spec_.rules.at(group.rule);
    for (const HyperSpec &hyper : rule.hypers) {
      bool set = std::any_of(
          group.settings.begin(), group.settings.end(),
          [&](const auto &s) { return std::string(s.first) == hyper.name; });
      if (!hyper.hasDefault && !set)
        throw Error(std::string("group '") + group.name + "' does not set '" +
                    hyper.name + "', which rule '" + rule.name +
                    "' gives no default");
    }
    hypers_.push_back(defaultHypers(rule));
    for (const auto &[name, setting] : group.settings)
      setHyper(group.name, name, setting);
  }
}

OptimizerFront::~OptimizerFront() {
  // The executor first: it reads the schedule and parameters while it
  // ends its step (a CUDA executor waits for its stream), and its graph
  // holds the communicators' collectives.
  executor_.reset();
}

void OptimizerFront::checkHyperLayout(const RuleSpec &rule) {
  // Generated tables come from a verified layout; hand-written ones may not.
  std::vector<const HyperSpec *> byOffset;
  for (const HyperSpec &hyper : rule.hypers) {
    if (hyper.size < 1 || hyper.offset < 0)
      throw Error(std::string("rule '") + rule.name + "': hyperparameter '" +
                  hyper.name + "' has size " + std::to_string(hyper.size) +
                  " at offset " + std::to_string(hyper.offset));
    if (hyper.hasDefault && hyper.defaults.size() != size_t(hyper.size))
      throw Error(std::string("rule '") + rule.name + "': hyperparameter '" +
                  hyper.name + "' has " +
                  std::to_string(hyper.defaults.size()) +
                  " default values for " + std::to_string(hyper.size));
    byOffset.push_back(&hyper);
  }
  std::sort(byOffset.begin(), byOffset.end(),
            [](const HyperSpec *a, const HyperSpec *b) {
              return a->offset < b->offset;
            });
  for (size_t i = 1; i < byOffset.size(); ++i)
    if (byOffset[i - 1]->offset + byOffset[i - 1]->size > byOffset[i]->offset)
      throw Error(std::string("rule '") + rule.name + "': hyperparameters '" +
                  byOffset[i - 1]->name + "' and '" + byOffset[i]->name +
                  "' overlap");
}

std::vector<double> OptimizerFront::defaultHypers(const RuleSpec &rule) {
  int length = 0;
  for (const HyperSpec &hyper : rule.hypers)
    length = std::max(length, hyper.offset + hyper.size);
  std::vector<double> values(static_cast<size_t>(length), 0.0);
  for (const HyperSpec &hyper : rule.hypers)
    if (hyper.hasDefault)
      std::copy(hyper.defaults.begin(), hyper.defaults.end(),
                values.begin() + hyper.offset);
  return values;
}

void OptimizerFront::addParameter(const std::string &name, TensorView param,
                                  TensorView grad) {
  addParameter(name, std::move(param), std::move(grad), "");
}

void OptimizerFront::addParameter(const std::string &name, TensorView param,
                                  TensorView grad, const std::string &group) {
  if (finalized_)
    throw Error("parameter '" + name + "' added after finalize()");
  if (param.dtype != DType::F32 && param.dtype != DType::BF16)
    throw Error("parameter '" + name + "' is " +
                std::string(dtypeName(param.dtype)) +
                "; parameters are F32 or BF16");
  if (grad.dtype != param.dtype || grad.shape != param.shape)
    throw Error("the gradient of '" + name + "' is " +
                std::string(dtypeName(grad.dtype)) + " " +
                formatShape(grad.shape) + ", but the parameter is " +
                std::string(dtypeName(param.dtype)) + " " +
                formatShape(param.shape));
  // A parameter without elements (a [0, 8] matrix) has nothing to update
  // and may have no memory.
  if (param.numel() > 0 && (!param.data || !grad.data))
    throw Error("parameter '" + name + "' has no memory");
  if (paramAt_.count(name))
    throw Error("parameter '" + name + "' is added twice");
  if (!group.empty())
    (void)groupIndex(group);
  paramAt_[name] = params_.size();
  Param p;
  p.name = name;
  p.param = std::move(param);
  p.grad = std::move(grad);
  p.group = group;
  p.registered = params_.size();
  params_.push_back(std::move(p));
  memoryChecked_ = false;
}

void OptimizerFront::rebind(const std::string &name, TensorView param,
                            TensorView grad) {
  size_t i = paramIndex(name);
  Param &p = params_[i];
  auto describe = [](const TensorView &view) {
    return std::string(dtypeName(view.dtype)) + " " + formatShape(view.shape) +
           " in " + std::string(deviceName(view.device)) + " memory";
  };
  for (auto [given, registered, what] :
       {std::make_tuple(&param, &p.param, ""),
        std::make_tuple(&grad, &p.grad, "the gradient of ")})
    if (given->dtype != registered->dtype ||
        given->shape != registered->shape ||
        given->device != registered->device)
      throw Error(std::string(what) + "parameter '" + name + "' moves to " +
                  describe(*given) + ", but it was registered as " +
                  describe(*registered));
  if (param.numel() > 0 && (!param.data || !grad.data))
    throw Error("parameter '" + name + "' has no memory");
  p.param = std::move(param);
  p.grad = std::move(grad);
  memoryChecked_ = false;
  if (finalized_)
    executor_->rebind(i, p.param, p.grad);
}

size_t OptimizerFront::groupIndex(const std::string &name) const {
  for (size_t i = 0; i < spec_.groups.size(); ++i)
    if (spec_.groups[i].name == name)
      return i;
  throw Error("optimizer '" + std::string(spec_.name) + "' has no group '" +
              name + "'");
}

size_t OptimizerFront::paramIndex(const std::string &name) const {
  auto found = paramAt_.find(name);
  if (found == paramAt_.end())
    throw Error("no parameter '" + name + "'");
  return found->second;
}

size_t OptimizerFront::hyperIndex(size_t group, const std::string &name,
                                  size_t *offset) const {
  const RuleSpec &rule = spec_.rules[spec_.groups[group].rule];
  for (size_t i = 0; i < rule.hypers.size(); ++i) {
    if (rule.hypers[i].name == name) {
      *offset = static_cast<size_t>(rule.hypers[i].offset);
      return i;
    }
  }
  std::string known;
  for (const HyperSpec &hyper : rule.hypers)
    known += (known.empty() ? "" : ", ") + std::string(hyper.name);
  throw Error("group '" + std::string(spec_.groups[group].name) + "' (rule '" +
              rule.name + "') has no hyperparameter '" + name + "'" +
              (known.empty() ? "; the rule has none"
                             : "; its hyperparameters are " + known));
}

void OptimizerFront::setHyper(const std::string &group, const std::string &name,
                              double value) {
  setHyper(group, name, std::vector<double>{value});
}

void OptimizerFront::setHyper(const std::string &group, const std::string &name,
                              const std::vector<double> &values) {
  checkHyper(group, name, values);
  size_t g = groupIndex(group), offset = 0;
  (void)hyperIndex(g, name, &offset);
  std::copy(values.begin(), values.end(), hypers_[g].begin() + offset);
  unset_.erase(group + "/" + name);
}

void OptimizerFront::checkHyper(const std::string &group,
                                const std::string &name,
                                const std::vector<double> &values) const {
  size_t g = groupIndex(group), offset = 0;
  const HyperSpec &hyper =
      spec_.rules[spec_.groups[g].rule].hypers[hyperIndex(g, name, &offset)];
  if (static_cast<int>(values.size()) != hyper.size)
    throw Error("hyperparameter '" + name + "' of group '" + group +
                "' takes " + std::to_string(hyper.size) + " value" +
                (hyper.size == 1 ? "" : "s") + ", not " +
                std::to_string(values.size()));
  for (double v : values) {
    std::string what = "hyperparameter '" + name + "' of group '" + group + "'";
    if (!std::isfinite(v))
      throw Error(what + " is " + formatDouble(v) +
                  ": hyperparameters are finite numbers");
    // Ints are read as int64_t (and their doubles are exact) only within
    // 2^53.
    if (hyper.isInt && (v != std::trunc(v) || std::fabs(v) > 0x1p53))
      throw Error(what + " is an int (within 2^53), not " + formatDouble(v));
    if (hyper.nonNegative && v < 0)
      throw Error(what + " is " + formatDouble(v) +
                  ": it counts (bounds a slice of a table), so it is at "
                  "least 0");
  }
}

double OptimizerFront::hyper(const std::string &group,
                             const std::string &name) const {
  std::vector<double> values = hyperValues(group, name);
  if (values.size() != 1)
    throw Error("hyperparameter '" + name + "' of group '" + group +
                "' is a tuple of " + std::to_string(values.size()) +
                "; read it with hyperValues()");
  return values[0];
}

std::vector<double> OptimizerFront::hyperValues(const std::string &group,
                                                const std::string &name) const {
  size_t g = groupIndex(group), offset = 0;
  const HyperSpec &hyper =
      spec_.rules[spec_.groups[g].rule].hypers[hyperIndex(g, name, &offset)];
  return {hypers_[g].begin() + offset,
          hypers_[g].begin() + offset + hyper.size};
}

void OptimizerFront::addGroup(const std::string &name,
                              const std::string &rule) {
  if (finalized_)
    throw Error("group '" + name + "' added after finalize()");
  for (const GroupSpec &group : spec_.groups)
    if (group.name == name)
      throw Error("group '" + name + "' exists already");
  int index = -1;
  for (size_t r = 0; r < spec_.rules.size(); ++r)
    if (spec_.rules[r].name == rule)
      index = static_cast<int>(r);
  if (index < 0)
    throw Error("optimizer '" + std::string(spec_.name) + "' has no rule '" +
                rule + "'");
  addedNames_.push_back(name);
  spec_.groups.push_back({addedNames_.back().c_str(), index, {}, nullptr, {}});
  for (const HyperSpec &hyper : spec_.rules[index].hypers)
    if (!hyper.hasDefault)
      unset_.insert(name + "/" + hyper.name);
  hypers_.push_back(defaultHypers(spec_.rules[index]));
}

void OptimizerFront::applyPlannedGroups() {
  for (Param &p : params_) {
    auto planned =
        std::find_if(spec_.plannedParams.begin(), spec_.plannedParams.end(),
                     [&](const PlannedParam &q) { return q.name == p.name; });
    if (planned == spec_.plannedParams.end())
      throw Error("parameter '" + p.name +
                  "' is not one of the parameters optimizer '" + spec_.name +
                  "' was compiled for (optgen compile --shapes)");
    if (planned->shape != p.param.shape)
      throw Error("optimizer '" + std::string(spec_.name) +
                  "' was compiled for parameter '" + p.name + "' of shape " +
                  formatShape(planned->shape) + ", got " +
                  formatShape(p.param.shape));
    std::string group = spec_.groups[planned->group].name;
    if (spec_.compiledSchedule && !p.group.empty() && p.group != group)
      throw Error("optimizer '" + std::string(spec_.name) +
                  "' was compiled for parameter '" + p.name + "' in group '" +
                  group + "', got group '" + p.group + "'");
    if (p.group.empty() || spec_.compiledSchedule) {
      p.group = group;
      p.rule = planned->rule;
    }
  }
  for (const PlannedParam &planned : spec_.plannedParams)
    if (std::none_of(params_.begin(), params_.end(),
                     [&](const Param &p) { return p.name == planned.name; }))
      throw Error("parameter '" + std::string(planned.name) +
                  "', which "
                  "optimizer '" +
                  spec_.name + "' was compiled for, was not registered");
}

void OptimizerFront::setNonFinitePolicy(NonFinitePolicy policy) {
  if (finalized_)
    throw Error("setNonFinitePolicy() after finalize()");
  onNonFinite_ = policy;
}

void OptimizerFront::setCommunicator(
    std::unique_ptr<Communicator> communicator) {
  if (finalized_)
    throw Error("setCommunicator() after finalize()");
  communicator_ = std::move(communicator);
}

StepSchedule OptimizerFront::compiledSchedule() const {
  const CompiledSchedule &compiled = *spec_.compiledSchedule;
  if (!compiled.step)
    throw Error("optimizer '" + std::string(spec_.name) +
                "' has a compiled schedule without a step function");
  if (compiled.worldSize != communicator_->size())
    throw Error("optimizer '" + std::string(spec_.name) +
                "' was compiled for " + std::to_string(compiled.worldSize) +
                (compiled.worldSize == 1 ? " rank" : " ranks") +
                ", running on " + std::to_string(communicator_->size()));
  // The parameters in the compiled order, bound as compiled: nothing is
  // planned, the buckets only regrouped for describePlan().
  StepSchedule schedule;
  schedule.worldSize = compiled.worldSize;
  schedule.groupSize =
      compiled.groupSize < compiled.worldSize ? compiled.groupSize : 0;
  std::vector<size_t> groupOf;
  std::vector<std::vector<int64_t>> shapes;
  for (const PlannedParam &planned : spec_.plannedParams) {
    if (planned.group < 0 ||
        static_cast<size_t>(planned.group) >= spec_.groups.size())
      throw Error("parameter '" + std::string(planned.name) +
                  "' was compiled for group " + std::to_string(planned.group) +
                  " of " + std::to_string(spec_.groups.size()));
    int rule =
        planned.rule >= 0 ? planned.rule : spec_.groups[planned.group].rule;
    if (rule < 0 || static_cast<size_t>(rule) >= spec_.rules.size())
      throw Error("parameter '" + std::string(planned.name) +
                  "' was compiled for rule " + std::to_string(rule) + " of " +
                  std::to_string(spec_.rules.size()));
    const Param &p = params_[paramIndex(planned.name)];
    schedule.params.push_back({planned.name, planned.shape,
                               static_cast<size_t>(planned.group), rule,
                               spec_.rules[rule].elementwise, p.grad.dtype});
    groupOf.push_back(static_cast<size_t>(planned.group));
    shapes.push_back(planned.shape);
  }
  schedule.buckets = bucketParams(groupOf, shapes, spec_.groups.size());
  schedule.units = compiled.units;
  deriveRanges(schedule);
  return schedule;
}

StepSchedule OptimizerFront::plannedSchedule() {
  std::vector<ParamDesc> descs;
  for (const Param &p : params_)
    descs.push_back({p.name, p.param.shape, p.group});
  std::vector<GroupDesc> groups;
  for (const GroupSpec &group : spec_.groups) {
    GroupDesc desc{group.name,
                   spec_.rules[group.rule].name,
                   {},
                   spec_.rules[group.rule].rank,
                   nullptr};
    for (const char *pattern : group.patterns)
      desc.patterns.push_back(pattern);
    if (group.where) {
      auto where = group.where;
      desc.where = [where](const std::vector<int64_t> &shape) {
        return where(shape.data(), static_cast<int>(shape.size()));
      };
    }
    groups.push_back(std::move(desc));
  }
  Plan plan = planStep(descs, groups);
  std::vector<ScheduleParam> params;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Param &p = params_[i];
    size_t group = plan.groupOf[i];
    int rule = p.rule >= 0 ? p.rule : spec_.groups[group].rule;
    params.push_back({p.name, p.param.shape, group, rule,
                      spec_.rules[rule].elementwise, p.grad.dtype});
  }
  return buildStepSchedule(std::move(params), std::move(plan.buckets),
                           spec_.distribution, communicator_->size(),
                           spec_.smallNumel, spec_.shardGroup,
                           !spec_.globals.empty());
}

std::vector<ElementRange> OptimizerFront::partsOf(int rank) const {
  std::vector<ElementRange> parts(schedule_.params.size());
  for (const StepUnit &unit : schedule_.units)
    for (size_t k = 0; k < unit.params.size(); ++k)
      parts[unit.params[k]] = unit.ranges[rank][k];
  return parts;
}

void OptimizerFront::finalize() {
  if (finalized_)
    throw Error("finalize() is called once");
  if (communicator_->size() == 1) {
    finalizeHere();
    finalized_ = true;
    return;
  }
  // Every rank finishes its part, then the ranks agree: on success, that
  // they hold the same parameters, spec and plan (one small collective).
  std::string error, description;
  try {
    finalizeHere();
    description = agreementDescription();
  } catch (const std::exception &e) {
    error = e.what();
  }
  agree(*communicator_, error, description,
        [](const std::string &first, const std::string &theirs, int rank) {
          return explainDifference(first, theirs, rank);
        });
  finalized_ = true;
}

void OptimizerFront::finalizeHere() {
  // The parameters' memory, already (one tensor registered twice); their
  // gradients' at the first step, once bound (a framework may register the
  // parameter's memory in their place until then).
  std::string overlap = overlapError(/*gradients=*/false);
  if (!overlap.empty())
    throw Error(overlap);
  if (spec_.compiledSchedule && spec_.plannedParams.empty())
    throw Error("optimizer '" + std::string(spec_.name) +
                "' has a compiled schedule but no compiled parameters");
  if (!spec_.plannedParams.empty())
    applyPlannedGroups();
  StepSchedule schedule =
      spec_.compiledSchedule ? compiledSchedule() : plannedSchedule();

  // From here on the parameters are in the schedule's order.
  std::vector<Param> ordered;
  for (const ScheduleParam &param : schedule.params)
    ordered.push_back(std::move(params_[paramIndex(param.name)]));
  params_ = std::move(ordered);
  for (size_t i = 0; i < params_.size(); ++i)
    paramAt_[params_[i].name] = i;
  schedule_ = std::move(schedule);

  for (size_t i = 0; i < params_.size(); ++i) {
    std::string group = spec_.groups[schedule_.params[i].group].name;
    for (const HyperSpec &hyper : ruleOf(i).hypers)
      if (unset_.count(group + "/" + hyper.name))
        throw Error("parameter '" + params_[i].name + "' is in group '" +
                    group + "', which does not set '" + hyper.name + "'");
    // A rule specialised to the parameter's shape reads the group's values:
    // it must lay them out as the group's rule does.
    const RuleSpec &generic =
        spec_.rules[spec_.groups[schedule_.params[i].group].rule];
    const RuleSpec &runs = ruleOf(i);
    bool same = runs.hypers.size() == generic.hypers.size();
    for (size_t h = 0; same && h < runs.hypers.size(); ++h)
      same = std::string(runs.hypers[h].name) == generic.hypers[h].name &&
             runs.hypers[h].size == generic.hypers[h].size &&
             runs.hypers[h].offset == generic.hypers[h].offset;
    if (!same)
      throw Error("parameter '" + params_[i].name + "' runs rule '" +
                  runs.name +
                  "', whose hyperparameters are not laid out as "
                  "those of its group's rule '" +
                  generic.name + "'");
  }

  std::vector<ElementRange> parts = partsOf(communicator_->rank());
  bool skip = onNonFinite_ == NonFinitePolicy::Skip;
  if (skip && !executor_->canSkipNonFinite())
    throw Error("optimizer '" + std::string(spec_.name) +
                "' skips steps with non-finite gradients, which its "
                "executor cannot do");
  if (!spec_.globals.empty() && !executor_->runsGlobals())
    throw Error("optimizer '" + std::string(spec_.name) +
                "' has globals, which its executor does not run");
  ExecutorSetup setup{
      &schedule_, communicator_->rank(), {}, communicator_.get(), skip};
  setup.globals = &spec_.globals;
  int group = shardGroupOf(schedule_);
  if (group < schedule_.worldSize) {
    if (!executor_->runsShardGroups())
      throw Error("optimizer '" + std::string(spec_.name) +
                  "' shards within groups of " + std::to_string(group) +
                  " ranks, which this executor does not run");
    // Every rank splits the same way, in the same order.
    int rank = communicator_->rank();
    groupCommunicator_ = communicator_->split(rank / group, rank % group);
    crossCommunicator_ = communicator_->split(rank % group, rank / group);
    setup.groupCommunicator = groupCommunicator_.get();
    setup.crossCommunicator = crossCommunicator_.get();
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    Param &p = params_[i];
    const RuleSpec &rule = ruleOf(i);
    size_t count = rule.states.size();
    p.fullRows.assign(count, 0);
    p.fullCols.assign(count, 0);
    rule.stateShapes(p.param.shape.data(),
                     static_cast<int>(p.param.shape.size()), p.fullRows.data(),
                     p.fullCols.data());
    p.heldRows = p.fullRows;
    p.heldCols = p.fullCols;
    p.part = parts[i];
    int64_t numel = p.param.numel();
    for (size_t s = 0; s < count; ++s)
      if (p.part.length == 0 ||
          (p.part.length != numel && p.fullRows[s] * p.fullCols[s] == numel)) {
        // This rank keeps the state of its part only (none of a matrix
        // another rank owns).
        p.heldRows[s] = 1;
        p.heldCols[s] = p.part.length;
      }
    setup.params.push_back({p.param, p.grad, &rule,
                            hypers_[schedule_.params[i].group].data(), &p.steps,
                            p.heldRows, p.heldCols});
  }
  executor_->prepare(setup);
}

void OptimizerFront::step() {
  if (!finalized_)
    throw Error("step() before finalize()");
  try {
    // Before anything changes, on every rank: a step on memory that
    // overlaps, or with another rank's hyperparameters, is refused
    // everywhere.
    std::string overlap =
        memoryChecked_ ? "" : overlapError(/*gradients=*/true);
    if (communicator_->size() > 1)
      agree(*communicator_, overlap, stepDescription(),
            [this](const std::string &first, const std::string &theirs,
                   int rank) {
              return explainStepDifference(first, theirs, rank);
            });
    else if (!overlap.empty())
      throw Error(overlap);
    memoryChecked_ = true;
    for (Param &p : params_)
      ++p.steps;
    executor_->beginStep();
    if (spec_.compiledSchedule)
      spec_.compiledSchedule->step(*executor_);
    else
      runProgram(schedule_, *executor_);
    executor_->endStep();
    // A skipped step changed nothing: nor does it count as a step.
    lastSkipped_ = executor_->lastStepSkipped();
    if (lastSkipped_) {
      for (Param &p : params_)
        --p.steps;
      ++skipped_;
    }
  } catch (const AgreedError &) {
    throw; // every rank knows of it, none waits
  } catch (const std::exception &error) {
    if (communicator_->size() == 1)
      throw;
    // The other ranks wait inside this step's collectives (the agreement's
    // too), which this rank will never complete: nothing but ending them
    // all avoids a hang.
    std::fflush(stdout);
    std::fprintf(stderr,
                 "optgen: error: rank %d: %s\noptgen: error: rank %d failed "
                 "inside a step of optimizer '%s'; ending all %d ranks\n",
                 communicator_->rank(), error.what(), communicator_->rank(),
                 spec_.name, communicator_->size());
    communicator_->abort(1);
  }
}

std::vector<std::string> OptimizerFront::globalNames() const {
  return {spec_.globals.names.begin(), spec_.globals.names.end()};
}

double OptimizerFront::globalValue(const std::string &name) const {
  const std::vector<const char *> &names = spec_.globals.names;
  auto it = std::find_if(names.begin(), names.end(),
                         [&](const char *n) { return name == n; });
  if (it == names.end()) {
    std::string known;
    for (const char *n : names)
      known += std::string(known.empty() ? "" : ", ") + "'" + n + "'";
    throw Error("optimizer '" + std::string(spec_.name) +
                "' has no global '" + name + "'" +
                (known.empty() ? std::string("; it has none")
                               : "; its globals: " + known));
  }
  std::vector<float> values =
      finalized_ ? executor_->globalValues() : std::vector<float>();
  if (values.empty())
    throw Error("global '" + name + "' has no value before a step");
  return values[static_cast<size_t>(it - names.begin())];
}

const RuleSpec &OptimizerFront::ruleOf(size_t param) const {
  return spec_.rules[schedule_.params[param].rule];
}

const StepSchedule &OptimizerFront::schedule() const {
  if (!finalized_)
    throw Error("schedule() before finalize()");
  return schedule_;
}

int64_t OptimizerFront::stepCount(const std::string &param) const {
  return params_[paramIndex(param)].steps;
}

int64_t OptimizerFront::stateBytes() const {
  return finalized_ ? executor_->stateBytes() : 0;
}

int64_t OptimizerFront::bytesSent() const {
  return finalized_ ? executor_->bytesSent() : 0;
}

int64_t OptimizerFront::bytesReceived() const {
  return finalized_ ? executor_->bytesReceived() : 0;
}

std::string OptimizerFront::groupOf(const std::string &param) const {
  if (!finalized_)
    throw Error("groupOf() before finalize()");
  return spec_.groups[schedule_.params[paramIndex(param)].group].name;
}

std::string OptimizerFront::describePlan() const {
  if (!finalized_)
    throw Error("describePlan() before finalize()");
  Plan plan{{}, schedule_.buckets};
  std::vector<ParamDesc> params;
  for (const ScheduleParam &p : schedule_.params) {
    plan.groupOf.push_back(p.group);
    params.push_back({p.name, p.shape, ""});
  }
  std::vector<GroupDesc> groups;
  for (const GroupSpec &group : spec_.groups)
    groups.push_back({group.name,
                      spec_.rules[group.rule].name,
                      {},
                      spec_.rules[group.rule].rank,
                      nullptr});
  return optgen::runtime::describePlan(plan, params, groups);
}

std::string OptimizerFront::overlapError(bool gradients) const {
  // Every piece of memory, by where it starts: an overlap is a piece that
  // starts before one that began earlier ends. Gradients may share memory
  // with each other (both are only read), not with a parameter (written).
  struct Piece {
    Device device;
    uintptr_t begin, end;
    size_t param;
    bool grad;
  };
  std::vector<Piece> pieces;
  for (size_t i = 0; i < params_.size(); ++i)
    for (bool grad : {false, true}) {
      if (grad && !gradients)
        continue;
      const TensorView &view = grad ? params_[i].grad : params_[i].param;
      auto begin = reinterpret_cast<uintptr_t>(view.data);
      if (view.byteSize() > 0)
        pieces.push_back({view.device, begin, begin + view.byteSize(), i, grad});
    }
  std::sort(pieces.begin(), pieces.end(), [](const Piece &a, const Piece &b) {
    return std::tie(a.device, a.begin) < std::tie(b.device, b.begin);
  });
  const Piece *furthest = nullptr, *furthestParam = nullptr;
  for (const Piece &piece : pieces) {
    if (furthest && furthest->device != piece.device)
      furthest = furthestParam = nullptr;
    const Piece *other = piece.grad ? furthestParam : furthest;
    if (other && other->end > piece.begin) {
      const Piece &a = other->param < piece.param ? *other : piece;
      const Piece &b = other->param < piece.param ? piece : *other;
      auto named = [&](const Piece &x) {
        return (x.grad ? "the gradient of " : "parameter ") +
               quoteForMessage(params_[x.param].name);
      };
      if (a.param == b.param)
        return "parameter " + quoteForMessage(params_[a.param].name) +
               " and its gradient share memory: a step writes the parameter "
               "while it reads the gradient";
      return named(a) + " and " + named(b) +
             " share memory (one tensor registered twice, tied weights, or "
             "views that overlap): a step writes each parameter once, so "
             "each needs memory of its own";
    }
    if (!furthest || piece.end > furthest->end)
      furthest = &piece;
    if (!piece.grad && (!furthestParam || piece.end > furthestParam->end))
      furthestParam = &piece;
  }
  return "";
}

//===----------------------------------------------------------------------===//
// What checkpoints store
//===----------------------------------------------------------------------===//

std::string OptimizerFront::specJson() const {
  JsonArray rules;
  for (const RuleSpec &rule : spec_.rules) {
    JsonArray hypers, states;
    for (const HyperSpec &hyper : rule.hypers)
      hypers.push_back(JsonArray{hyper.name, hyper.size, hyper.isInt});
    for (const char *state : rule.states)
      states.push_back(state);
    rules.push_back(JsonObject{{"name", rule.name},
                               {"rank", rule.rank},
                               {"elementwise", rule.elementwise},
                               {"hypers", std::move(hypers)},
                               {"states", std::move(states)}});
  }
  // The spec's own groups: those a program adds (addGroup) are its
  // business, as is which group a parameter joins (the plan).
  JsonArray groups;
  for (const GroupSpec &group : spec_.groups)
    if (std::find(addedNames_.begin(), addedNames_.end(), group.name) ==
        addedNames_.end())
      groups.push_back(JsonArray{group.name, spec_.rules[group.rule].name});
  return writeJson(JsonObject{{"optimizer", spec_.name},
                              {"math", spec_.math},
                              {"rules", std::move(rules)},
                              {"groups", std::move(groups)}});
}

std::string OptimizerFront::planJson() const {
  // By name: the same whatever the registration order and the ranks.
  std::vector<size_t> order(params_.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return params_[a].name < params_[b].name;
  });
  // What a parameter's state means: its shape and the rule that keeps it.
  JsonArray plan;
  for (size_t i : order)
    plan.push_back(JsonArray{params_[i].name, shapeJson(params_[i].param.shape),
                             ruleOf(i).name});
  return writeJson(plan);
}

std::string OptimizerFront::hypersJson() const {
  JsonObject groups;
  for (size_t g = 0; g < spec_.groups.size(); ++g) {
    JsonObject values;
    for (const HyperSpec &hyper : spec_.rules[spec_.groups[g].rule].hypers) {
      JsonArray list;
      for (int k = 0; k < hyper.size; ++k) {
        double v = hypers_[g][hyper.offset + k];
        if (std::isfinite(v))
          list.push_back(v);
        else
          list.push_back(formatDouble(v));
      }
      values.emplace_back(hyper.name, std::move(list));
    }
    groups.emplace_back(spec_.groups[g].name, std::move(values));
  }
  return writeJson(groups);
}

std::string OptimizerFront::specFingerprint() const {
  return hex64(hash64(specJson()));
}

std::string OptimizerFront::planFingerprint() const {
  if (!finalized_)
    throw Error("planFingerprint() before finalize()");
  return hex64(hash64(planJson()));
}

std::vector<int64_t> OptimizerFront::storedStateShape(size_t param,
                                                      size_t state) const {
  const Param &p = params_[param];
  auto [rows, cols] = asRowsCols(p.param.shape);
  if (p.fullRows[state] == rows && p.fullCols[state] == cols)
    return p.param.shape;
  return {p.fullRows[state], p.fullCols[state]};
}

namespace {

constexpr const char *kStateFormat = "optgen-optimizer-state";
constexpr int kStateFormatVersion = 1;

struct TensorRef {
  const std::string *name;
  DType dtype;
  const std::vector<int64_t> *shape;
  const void *data;
  size_t bytes;
};

/// The checksum a checkpoint stores under "checksum": its other metadata,
/// by key, and its tensors, by name (dtype, shape, bytes).
uint64_t checkpointChecksum(const std::map<std::string, std::string> &metadata,
                            const std::vector<TensorRef> &tensors) {
  Hasher hasher;
  for (const auto &[key, value] : metadata) {
    if (key == "checksum")
      continue;
    hasher.updateString(key);
    hasher.updateString(value);
  }
  for (const TensorRef &t : tensors) {
    hasher.updateString(*t.name);
    hasher.updateString(dtypeName(t.dtype));
    hasher.updateInt(static_cast<int64_t>(t.shape->size()));
    for (int64_t d : *t.shape)
      hasher.updateInt(d);
    hasher.updateInt(static_cast<int64_t>(t.bytes));
    hasher.update(t.data, t.bytes);
  }
  return hasher.digest();
}

} // namespace

/// Which ranks hold what of a state of `numel` elements that is `full`
/// elements whole, given each rank's part of its parameter: a state shaped
/// like the parameter is split as the parameter is; any other is held whole
/// by the first rank that updates the parameter.
static std::vector<int64_t> stateCounts(const std::vector<int64_t> &parts,
                                        int64_t numel, int64_t full) {
  std::vector<int64_t> counts(parts.size(), 0);
  if (full == numel) {
    counts = parts;
    bool whole = std::count(parts.begin(), parts.end(), numel) > 1;
    if (whole) // every rank updates it (a small tensor): rank 0 gives it
      std::fill(counts.begin() + 1, counts.end(), 0);
    return counts;
  }
  for (size_t r = 0; r < parts.size(); ++r)
    if (parts[r] > 0) {
      counts[r] = full;
      break;
    }
  return counts;
}

std::string checkpointChecksum(
    const std::map<std::string, std::string> &metadata,
    const std::map<std::string, TensorView> &tensors) {
  std::vector<TensorRef> refs;
  for (const auto &[name, view] : tensors)
    refs.push_back({&name, view.dtype, &view.shape, view.data, view.byteSize()});
  return hex64(checkpointChecksum(metadata, refs));
}

/// Every rank's first counts[r] floats of `held`, in rank order, into
/// `whole`, through the communicator's blocking gather of host bytes: a
/// device communicator's collectives take device memory and return before
/// they complete, so state read into host memory goes this way, each
/// rank's part padded to the largest.
static void gatherOnHost(Communicator &gather, const std::vector<float> &held,
                         const std::vector<int64_t> &counts,
                         unsigned char *whole) {
  int64_t widest = *std::max_element(counts.begin(), counts.end());
  if (widest == 0)
    return;
  size_t slot = static_cast<size_t>(widest) * sizeof(float);
  std::vector<unsigned char> mine(slot, 0);
  // A rank holding none of it has no bytes to give (and `held` may be
  // empty: memcpy takes no null pointer, even for no bytes).
  if (size_t bytes = static_cast<size_t>(counts[gather.rank()]) * sizeof(float))
    std::memcpy(mine.data(), held.data(), bytes);
  std::vector<unsigned char> all(slot * counts.size());
  gather.allGatherBytes(mine.data(), slot, all.data());
  size_t at = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    size_t bytes = static_cast<size_t>(counts[r]) * sizeof(float);
    if (bytes)
      std::memcpy(whole + at, all.data() + r * slot, bytes);
    at += bytes;
  }
}

OptimizerFront::Checkpoint OptimizerFront::gatherState(bool everyRank) {
  // Each state is gathered whole (parts of sharded ones come from the
  // ranks holding them), keyed by parameter name, so the checkpoint is the
  // same whatever the number of ranks.
  // With shard groups every group holds all of the state: its ranks (the
  // positions 0 .. G - 1) gather it.
  Communicator &gather =
      groupCommunicator_ ? *groupCommunicator_ : *communicator_;
  int size = gather.size(), rank = communicator_->rank();
  bool keeps = everyRank || rank == 0;
  std::vector<std::vector<ElementRange>> parts(size); // [rank][param]
  for (int r = 0; r < size; ++r)
    parts[r] = partsOf(r);
  Checkpoint checkpoint;
  std::map<std::string, Tensor> &tensors = checkpoint.tensors;
  for (size_t i = 0; i < params_.size(); ++i) {
    Param &p = params_[i];
    const RuleSpec &rule = ruleOf(i);
    std::vector<int64_t> partOf(size);
    for (int r = 0; r < size; ++r)
      partOf[r] = parts[r][i].length;
    for (size_t s = 0; s < p.fullRows.size(); ++s) {
      int64_t full = p.fullRows[s] * p.fullCols[s];
      std::vector<int64_t> counts = stateCounts(partOf, p.param.numel(), full);
      std::vector<float> held(
          static_cast<size_t>(p.heldRows[s] * p.heldCols[s]));
      executor_->readState(i, s, held.data());
      Tensor whole = Tensor::zeros(DType::F32, storedStateShape(i, s));
      gatherOnHost(gather, held, counts, whole.bytes.data());
      if (keeps)
        tensors.emplace("state/" + p.name + "/" + rule.states[s],
                        std::move(whole));
    }
    if (keeps) {
      Tensor step = Tensor::zeros(DType::I64, {});
      std::memcpy(step.bytes.data(), &p.steps, sizeof(int64_t));
      tensors.emplace("step/" + p.name, std::move(step));
    }
  }
  if (!keeps)
    return checkpoint;
  checkpoint.metadata = {{"format", kStateFormat},
                         {"format_version", std::to_string(kStateFormatVersion)},
                         {"optimizer", spec_.name},
                         {"spec", specJson()},
                         {"spec_fingerprint", specFingerprint()},
                         {"plan", planJson()},
                         {"plan_fingerprint", hex64(hash64(planJson()))},
                         {"hyperparameters", hypersJson()},
                         {"skipped_steps", std::to_string(skipped_)}};
  std::vector<TensorRef> refs;
  for (const auto &[name, tensor] : tensors)
    refs.push_back({&name, tensor.dtype, &tensor.shape, tensor.bytes.data(),
                    tensor.bytes.size()});
  checkpoint.metadata["checksum"] =
      hex64(checkpointChecksum(checkpoint.metadata, refs));
  return checkpoint;
}

void OptimizerFront::saveState(const std::string &path) {
  if (!finalized_)
    throw Error("saveState() before finalize()");
  Checkpoint checkpoint = gatherState(/*everyRank=*/false);
  // Rank 0 writes; every rank learns whether it could.
  std::string error;
  if (communicator_->rank() == 0) {
    try {
      SafetensorsWriter writer;
      for (const auto &[key, value] : checkpoint.metadata)
        writer.setMetadata(key, value);
      for (auto &[name, tensor] : checkpoint.tensors)
        writer.add(name, tensor.dtype, tensor.shape, std::move(tensor.bytes));
      writer.write(path);
    } catch (const std::exception &e) {
      error = e.what();
    }
  }
  agree(*communicator_, error);
}

OptimizerFront::Checkpoint OptimizerFront::exportState() {
  if (!finalized_)
    throw Error("exportState() before finalize()");
  return gatherState(/*everyRank=*/true);
}

namespace {

std::vector<std::string> stringList(const JsonValue &list) {
  std::vector<std::string> out;
  for (const JsonValue &v : list.asArray())
    out.push_back(v.isString() ? v.asString() : writeJson(v));
  return out;
}

std::string joinNames(const std::vector<std::string> &names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i)
    out += (i ? ", " : "") + names[i];
  return out + "]";
}

/// How the spec that saved a checkpoint (`saved`) differs from this
/// optimizer's (`here`), both specJson(); empty when no difference is
/// found by name.
std::string specDifference(const JsonValue &here, const JsonValue &saved) {
  if (here.at("optimizer") != saved.at("optimizer"))
    return "it holds the state of optimizer '" +
           saved.at("optimizer").asString() + "', not of '" +
           here.at("optimizer").asString() + "'";
  const JsonValue *math = saved.find("math");
  if (!math)
    return "it records no fingerprint of the math that saved it (an older "
           "optgen's checkpoint)";
  if (*math != here.at("math"))
    return "it was saved by an optimizer that computes other math than "
           "this one: another spec, or other -D values (math fingerprints " +
           writeJson(*math) + " in the checkpoint, " +
           writeJson(here.at("math")) + " here)";
  auto byName = [](const JsonValue &list, const std::string &name,
                   bool isObject) -> const JsonValue * {
    for (const JsonValue &entry : list.asArray()) {
      const JsonValue &key = isObject ? entry.at("name") : entry.at(size_t{0});
      if (key.isString() && key.asString() == name)
        return &entry;
    }
    return nullptr;
  };
  for (const JsonValue &rule : here.at("rules").asArray()) {
    std::string name = rule.at("name").asString();
    const JsonValue *other = byName(saved.at("rules"), name, true);
    if (!other)
      return "the spec that saved it has no rule '" + name + "'";
    std::vector<std::string> states = stringList(rule.at("states")),
                             theirs = stringList(other->at("states"));
    if (states != theirs)
      return "rule '" + name + "' has states " + joinNames(states) +
             " here, " + joinNames(theirs) + " in the checkpoint";
    if (rule.at("hypers") != other->at("hypers"))
      return "rule '" + name + "' has hyperparameters " +
             writeJson(rule.at("hypers")) + " here, " +
             writeJson(other->at("hypers")) +
             " in the checkpoint ([name, values, is int])";
    if (rule != *other)
      return "rule '" + name + "' is " + writeJson(rule) + " here, " +
             writeJson(*other) + " in the checkpoint";
  }
  for (const JsonValue &rule : saved.at("rules").asArray())
    if (!byName(here.at("rules"), rule.at("name").asString(), true))
      return "the spec that saved it has rule '" +
             rule.at("name").asString() + "', which this one has not";
  for (const JsonValue &group : here.at("groups").asArray()) {
    std::string name = group.at(size_t{0}).asString();
    const JsonValue *other = byName(saved.at("groups"), name, false);
    if (!other)
      return "the spec that saved it has no group '" + name + "'";
    if (group.at(1) != other->at(1))
      return "group '" + name + "' runs rule '" + group.at(1).asString() +
             "' here, '" + other->at(1).asString() + "' in the checkpoint";
  }
  for (const JsonValue &group : saved.at("groups").asArray())
    if (!byName(here.at("groups"), group.at(size_t{0}).asString(), false))
      return "the spec that saved it has group '" +
             group.at(size_t{0}).asString() + "', which this one has not";
  return "";
}

std::string shapeText(const JsonValue &dims) {
  std::vector<int64_t> shape;
  for (const JsonValue &d : dims.asArray())
    shape.push_back(d.asInt64());
  return formatShape(shape);
}

/// How the checkpoint's plan (`saved`) differs from this optimizer's
/// (`here`), both planJson(); empty when they agree.
std::string planDifference(const JsonValue &here, const JsonValue &saved) {
  auto find = [](const JsonValue &plan, const JsonValue &name) {
    for (const JsonValue &entry : plan.asArray())
      if (entry.at(size_t{0}) == name)
        return &entry;
    return static_cast<const JsonValue *>(nullptr);
  };
  for (const JsonValue &p : here.asArray()) {
    std::string name = quoteForMessage(p.at(size_t{0}).asString());
    const JsonValue *q = find(saved, p.at(size_t{0}));
    if (!q)
      return "it holds no state for parameter " + name;
    if (p.at(1) != q->at(1))
      return "parameter " + name + " has shape " + shapeText(q->at(1)) +
             " in the checkpoint, " + shapeText(p.at(1)) + " here";
    if (p.at(2) != q->at(2))
      return "parameter " + name + " runs rule '" + p.at(2).asString() +
             "' here, rule '" + q->at(2).asString() + "' in the checkpoint";
  }
  for (const JsonValue &q : saved.asArray())
    if (!find(here, q.at(size_t{0})))
      return "it holds parameter " +
             quoteForMessage(q.at(size_t{0}).asString()) +
             ", which this optimizer does not have";
  return "";
}

} // namespace

void OptimizerFront::loadState(const std::string &path) {
  if (!finalized_)
    throw Error("loadState() before finalize()");
  std::optional<SafetensorsFile> file;
  restoreState(
      "'" + path + "'",
      [&](std::map<std::string, std::string> &metadata,
          std::map<std::string, TensorView> &tensors) {
        file.emplace(SafetensorsFile::open(path));
        metadata = file->metadata();
        for (const std::string &name : file->names())
          tensors.emplace(name, file->view(name));
      });
}

void OptimizerFront::importState(
    const std::map<std::string, std::string> &metadata,
    const std::map<std::string, TensorView> &tensors,
    const std::string &source) {
  if (!finalized_)
    throw Error("importState() before finalize()");
  restoreState(
      source,
      [&](std::map<std::string, std::string> &meta,
          std::map<std::string, TensorView> &views) {
        meta = metadata;
        views = tensors;
      });
}

void OptimizerFront::restoreState(const std::string &source,
                                  const CheckpointReader &read) {
  // Everything is read and checked first, into these; only then, when
  // every rank succeeded, does anything change.
  int64_t skipped = 0;
  std::vector<std::vector<std::vector<float>>> states(params_.size());
  std::vector<int64_t> steps(params_.size(), 0);
  std::vector<std::vector<double>> hypers = hypers_;
  std::string error, checksum;
  try {
    std::map<std::string, std::string> meta;
    std::map<std::string, TensorView> tensors;
    read(meta, tensors);
    auto refuse = [&](const std::string &problem) {
      throw Error(source + " is refused: " + problem);
    };
    auto metadata = [&](const std::string &key) -> const std::string & {
      auto it = meta.find(key);
      if (it == meta.end())
        refuse("its metadata has no '" + key +
               "' (an optimizer checkpoint of optgen has)");
      return it->second;
    };
    if (metadata("format") != kStateFormat)
      refuse("it is " + quoteForMessage(metadata("format")) + ", not '" +
             kStateFormat + "'");
    if (metadata("format_version") != std::to_string(kStateFormatVersion))
      refuse("it is format version " +
             quoteForMessage(metadata("format_version")) +
             "; this optgen reads version " +
             std::to_string(kStateFormatVersion));

    std::vector<TensorRef> refs;
    for (const auto &[name, view] : tensors) {
      if (view.device != Device::Host)
        refuse("its tensor " + quoteForMessage(name) + " is in " +
               std::string(deviceName(view.device)) +
               " memory; a checkpoint is read from host memory");
      refs.push_back(
          {&name, view.dtype, &view.shape, view.data, view.byteSize()});
    }
    // The hash of what was read: a checkpoint, in a file or in memory, must
    // hold the one it says, and every rank must have read the same.
    checksum = hex64(checkpointChecksum(meta, refs));
    if (metadata("checksum") != checksum)
      refuse("it is corrupted: it says its checksum is " +
             quoteForMessage(metadata("checksum")) +
             ", but its contents hash to '" + checksum + "'");
    auto has = [&](const std::string &name) { return tensors.count(name) > 0; };
    JsonValue savedSpec = parseJson(metadata("spec"), source + " (spec)");
    JsonValue hereSpec = parseJson(specJson(), "this optimizer's spec");
    if (savedSpec != hereSpec) {
      std::string difference = specDifference(hereSpec, savedSpec);
      refuse(difference.empty()
                 ? "it was saved by another spec (fingerprint " +
                       hex64(hash64(metadata("spec"))) +
                       ", this optimizer's " + specFingerprint() + ")"
                 : difference);
    }
    JsonValue savedPlan = parseJson(metadata("plan"), source + " (plan)");
    JsonValue herePlan = parseJson(planJson(), "this optimizer's plan");
    if (savedPlan != herePlan) {
      std::string difference = planDifference(herePlan, savedPlan);
      refuse(difference.empty() ? "its plan differs from this optimizer's"
                                : difference);
    }

    // Exactly the tensors this optimizer's state has, each as stored.
    std::map<std::string, std::pair<size_t, int>> expected; // param, state
    for (size_t i = 0; i < params_.size(); ++i) {
      const RuleSpec &rule = ruleOf(i);
      for (size_t s = 0; s < rule.states.size(); ++s)
        expected["state/" + params_[i].name + "/" + rule.states[s]] = {
            i, static_cast<int>(s)};
      expected["step/" + params_[i].name] = {i, -1};
    }
    for (const auto &[name, view] : tensors)
      if (!expected.count(name))
        refuse("it holds tensor " + quoteForMessage(name) +
               ", which is no state of this optimizer");
    for (const auto &[name, where] : expected) {
      auto [i, s] = where;
      const Param &p = params_[i];
      if (!has(name))
        refuse(s < 0 ? "it has no step count for parameter " +
                           quoteForMessage(p.name)
                     : "it has no state '" + std::string(ruleOf(i).states[s]) +
                           "' for parameter " + quoteForMessage(p.name));
      const TensorView &info = tensors.at(name);
      std::vector<int64_t> shape =
          s < 0 ? std::vector<int64_t>{} : storedStateShape(i, s);
      DType dtype = s < 0 ? DType::I64 : DType::F32;
      if (info.dtype != dtype || info.shape != shape)
        refuse("tensor " + quoteForMessage(name) + " is " +
               std::string(dtypeName(info.dtype)) + " " +
               formatShape(info.shape) + ", but parameter " +
               quoteForMessage(p.name) + " " + formatShape(p.param.shape) +
               " needs " + std::string(dtypeName(dtype)) + " " +
               formatShape(shape));
      const TensorView &view = info;
      if (s < 0) {
        int64_t count = 0;
        std::memcpy(&count, view.data, sizeof count);
        if (count < 0 || count > (int64_t{1} << 53))
          refuse("parameter " + quoteForMessage(p.name) + " has taken " +
                 std::to_string(count) +
                 " steps, says the checkpoint: not a step count");
        steps[i] = count;
        continue;
      }
      // This rank's part: a slice of a state shaped like a split
      // parameter, else all of it (or nothing, when it holds none).
      if (states[i].size() <= static_cast<size_t>(s))
        states[i].resize(ruleOf(i).states.size());
      int64_t full = p.fullRows[s] * p.fullCols[s];
      int64_t held = p.heldRows[s] * p.heldCols[s];
      int64_t from = held < full && full == p.param.numel() ? p.part.begin : 0;
      std::vector<float> &values = states[i][s];
      values.resize(static_cast<size_t>(held));
      if (held)
        std::memcpy(values.data(),
                    static_cast<const float *>(view.data) + from,
                    static_cast<size_t>(held) * sizeof(float));
    }

    const std::string &skippedText = metadata("skipped_steps");
    skipped = -1;
    if (!skippedText.empty() && skippedText.size() <= 15 &&
        skippedText.find_first_not_of("0123456789") == std::string::npos)
      skipped = std::stoll(skippedText);
    if (skipped < 0)
      refuse("its 'skipped_steps' is " + quoteForMessage(skippedText) +
             ", not a count");

    // The groups' hyperparameters, as setHyper() would take them.
    JsonValue saved =
        parseJson(metadata("hyperparameters"), source + " (hyperparameters)");
    if (!saved.isObject())
      refuse("its hyperparameters are not a JSON object");
    // Of the groups the checkpoint has too; the others keep theirs.
    for (size_t g = 0; g < spec_.groups.size(); ++g) {
      std::string group = spec_.groups[g].name;
      const JsonValue *values = saved.find(group);
      if (!values)
        continue;
      if (!values->isObject())
        refuse("its hyperparameters of group '" + group +
               "' are not a JSON object");
      for (const HyperSpec &hyper : spec_.rules[spec_.groups[g].rule].hypers) {
        const JsonValue *list = values->find(hyper.name);
        std::string what = "hyperparameter '" + std::string(hyper.name) +
                           "' of group '" + group + "'";
        if (!list || !list->isArray() ||
            list->size() != static_cast<size_t>(hyper.size))
          refuse(what + " is missing or has not " +
                 std::to_string(hyper.size) + " values");
        std::vector<double> taken;
        for (const JsonValue &v : list->asArray()) {
          if (!v.isNumber())
            refuse(what + " is " + writeJson(v) + ", not a number");
          taken.push_back(v.asDouble());
        }
        // Under the rules setHyper() applies.
        try {
          checkHyper(group, hyper.name, taken);
        } catch (const Error &e) {
          refuse(std::string("its ") + e.what());
        }
        std::copy(taken.begin(), taken.end(),
                  hypers[g].begin() + hyper.offset);
      }
    }
  } catch (const std::exception &e) {
    error = e.what();
  }
  // Every rank must have read the same checkpoint.
  agree(*communicator_, error, checksum,
        [](const std::string &first, const std::string &theirs, int rank) {
          return "rank " + std::to_string(rank) +
                 " read another checkpoint than rank 0 (checksums " + theirs +
                 " and " + first + ")";
        });

  for (size_t i = 0; i < params_.size(); ++i) {
    for (size_t s = 0; s < states[i].size(); ++s)
      executor_->writeState(i, s, states[i][s].data());
    params_[i].steps = steps[i];
  }
  skipped_ = skipped;
  // In place: the executor reads them where they are.
  for (size_t g = 0; g < hypers_.size(); ++g)
    std::copy(hypers[g].begin(), hypers[g].end(), hypers_[g].begin());
}

} // namespace optgen::runtime