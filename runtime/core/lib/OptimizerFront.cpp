//===- OptimizerFront.cpp - The device-agnostic optimizer -----------------===//
//
// OptimizerFront's parameters, groups and hyperparameters, the schedule
// built at finalize(), and the step. What its ranks compare is in
// OptimizerAgreement.cpp, its checkpoints in OptimizerCheckpoint.cpp.
//
//===----------------------------------------------------------------------===//

#include "optgen/runtime/OptimizerFront.h"

#include "OptimizerFrontInternal.h"
#include "optgen/runtime/Agreement.h"
#include "optgen/runtime/Error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
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

} // namespace optgen::runtime
