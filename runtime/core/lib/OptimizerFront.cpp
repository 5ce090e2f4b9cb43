//===- OptimizerFront.cpp - The device-agnostic optimizer -----------------===//

#include "optgen/runtime/OptimizerFront.h"

#include "optgen/runtime/Error.h"
#include "optgen/runtime/Glob.h"
#include "optgen/runtime/Safetensors.h"
#include "optgen/runtime/Sharding.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace optgen::runtime {

namespace {

/// A parameter of any rank is stepped as one row; a matrix as itself.
std::pair<int64_t, int64_t> asRowsCols(const std::vector<int64_t> &shape) {
  if (shape.size() == 2)
    return {shape[0], shape[1]};
  int64_t numel = 1;
  for (int64_t d : shape)
    numel *= d;
  return {1, numel};
}

} // namespace

Optimizer::Optimizer(OptimizerSpec spec)
    : spec_(std::move(spec)), communicator_(makeSingleRankCommunicator()) {
  for (const GroupSpec &group : spec_.groups) {
    const RuleSpec &rule = spec_.rules.at(group.rule);
    std::vector<double> values;
    for (const HyperSpec &hyper : rule.hypers) {
      bool set = std::any_of(
          group.settings.begin(), group.settings.end(),
          [&](const auto &s) { return std::string(s.first) == hyper.name; });
      if (!hyper.hasDefault && !set)
        throw Error(std::string("group '") + group.name + "' does not set '" +
                    hyper.name + "', which rule '" + rule.name +
                    "' gives no default");
      for (int i = 0; i < hyper.size; ++i)
        values.push_back(hyper.hasDefault ? hyper.defaults.at(i) : 0.0);
    }
    hypers_.push_back(std::move(values));
    for (const auto &[name, setting] : group.settings)
      setHyper(group.name, name, setting);
  }
}

Optimizer::~Optimizer() = default;

void Optimizer::addParameter(const std::string &name, TensorView param,
                             TensorView grad) {
  addParameter(name, std::move(param), std::move(grad), "");
}

void Optimizer::addParameter(const std::string &name, TensorView param,
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
  if (!param.data || !grad.data)
    throw Error("parameter '" + name + "' has no memory");
  (void)param.numel(); // validates the shape
  for (const Param &p : params_)
    if (p.name == name)
      throw Error("parameter '" + name + "' is added twice");
  if (!group.empty())
    (void)groupIndex(group);
  Param p;
  p.name = name;
  p.param = std::move(param);
  p.grad = std::move(grad);
  p.group = group;
  params_.push_back(std::move(p));
}

size_t Optimizer::groupIndex(const std::string &name) const {
  for (size_t i = 0; i < spec_.groups.size(); ++i)
    if (spec_.groups[i].name == name)
      return i;
  throw Error("optimizer '" + std::string(spec_.name) + "' has no group '" +
              name + "'");
}

size_t Optimizer::paramIndex(const std::string &name) const {
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].name == name)
      return i;
  throw Error("no parameter '" + name + "'");
}

size_t Optimizer::hyperIndex(size_t group, const std::string &name,
                             size_t *offset) const {
  const RuleSpec &rule = spec_.rules[spec_.groups[group].rule];
  size_t at = 0;
  for (size_t i = 0; i < rule.hypers.size(); ++i) {
    if (rule.hypers[i].name == name) {
      *offset = at;
      return i;
    }
    at += rule.hypers[i].size;
  }
  throw Error("group '" + std::string(spec_.groups[group].name) +
              "' (rule '" + rule.name + "') has no hyperparameter '" + name +
              "'");
}

void Optimizer::setHyper(const std::string &group, const std::string &name,
                         double value) {
  setHyper(group, name, std::vector<double>{value});
}

void Optimizer::setHyper(const std::string &group, const std::string &name,
                         const std::vector<double> &values) {
  size_t g = groupIndex(group), offset = 0;
  const HyperSpec &hyper =
      spec_.rules[spec_.groups[g].rule].hypers[hyperIndex(g, name, &offset)];
  if (static_cast<int>(values.size()) != hyper.size)
    throw Error("hyperparameter '" + name + "' of group '" + group +
                "' takes " + std::to_string(hyper.size) + " value" +
                (hyper.size == 1 ? "" : "s") + ", not " +
                std::to_string(values.size()));
  for (double v : values)
    if (hyper.isInt && v != std::trunc(v))
      throw Error("hyperparameter '" + name + "' of group '" + group +
                  "' is an int, not " + std::to_string(v));
  std::copy(values.begin(), values.end(), hypers_[g].begin() + offset);
  unset_.erase(group + "/" + name);
}

double Optimizer::hyper(const std::string &group,
                        const std::string &name) const {
  std::vector<double> values = hyperValues(group, name);
  if (values.size() != 1)
    throw Error("hyperparameter '" + name + "' of group '" + group +
                "' is a tuple of " + std::to_string(values.size()) +
                "; read it with hyperValues()");
  return values[0];
}

std::vector<double> Optimizer::hyperValues(const std::string &group,
                                           const std::string &name) const {
  size_t g = groupIndex(group), offset = 0;
  const HyperSpec &hyper =
      spec_.rules[spec_.groups[g].rule].hypers[hyperIndex(g, name, &offset)];
  return {hypers_[g].begin() + offset,
          hypers_[g].begin() + offset + hyper.size};
}

void Optimizer::addGroup(const std::string &name, const std::string &rule) {
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
  spec_.groups.push_back(
      {addedNames_.back().c_str(), index, {}, nullptr, {}});
  std::vector<double> values;
  for (const HyperSpec &hyper : spec_.rules[index].hypers) {
    if (!hyper.hasDefault)
      unset_.insert(name + "/" + hyper.name);
    for (int i = 0; i < hyper.size; ++i)
      values.push_back(hyper.hasDefault ? hyper.defaults.at(i) : 0.0);
  }
  hypers_.push_back(std::move(values));
}

void Optimizer::applyPlannedGroups() {
  for (Param &p : params_) {
    auto planned = std::find_if(
        spec_.plannedParams.begin(), spec_.plannedParams.end(),
        [&](const PlannedParam &q) { return q.name == p.name; });
    if (planned == spec_.plannedParams.end())
      throw Error("parameter '" + p.name +
                  "' is not one of the parameters optimizer '" + spec_.name +
                  "' was compiled for (optgen compile --shapes)");
    if (planned->shape != p.param.shape)
      throw Error("parameter '" + p.name + "' is " +
                  formatShape(p.param.shape) + ", but optimizer '" +
                  spec_.name + "' was compiled for " +
                  formatShape(planned->shape));
    if (p.group.empty()) {
      p.group = spec_.groups[planned->group].name;
      p.rule = planned->rule;
    }
  }
  for (const PlannedParam &planned : spec_.plannedParams)
    if (std::none_of(params_.begin(), params_.end(),
                     [&](const Param &p) { return p.name == planned.name; }))
      throw Error("parameter '" + std::string(planned.name) + "', which "
                  "optimizer '" + spec_.name +
                  "' was compiled for, was not registered");
}

void Optimizer::setCommunicator(std::unique_ptr<Communicator> communicator) {
  if (finalized_)
    throw Error("setCommunicator() after finalize()");
  communicator_ = std::move(communicator);
}

void Optimizer::partsOf(int rank, std::vector<int64_t> &begin,
                        std::vector<int64_t> &length) const {
  begin.assign(params_.size(), 0);
  length.clear();
  for (const Param &p : params_)
    length.push_back(p.param.numel());
  if (!shards_)
    return;
  for (const ShardUnit &unit : shards_->units) {
    if (unit.kind == ShardUnit::Kind::Small)
      continue;
    int64_t mine = 0;
    for (int r = 0; r < rank; ++r)
      mine += unit.counts[r];
    int64_t at = 0;
    for (size_t k = 0; k < unit.params.size(); ++k) {
      size_t p = unit.params[k];
      int64_t numel = params_[p].param.numel();
      if (unit.kind == ShardUnit::Kind::Owned) {
        length[p] = unit.owner[k] == rank ? numel : 0;
      } else {
        int64_t first = std::max(at, mine);
        int64_t last = std::min(at + numel, mine + unit.counts[rank]);
        begin[p] = std::max<int64_t>(first - at, 0);
        length[p] = std::max<int64_t>(last - first, 0);
      }
      at += numel;
    }
  }
}

void Optimizer::finalize() {
  if (finalized_)
    throw Error("finalize() is called once");
  if (!spec_.plannedParams.empty())
    applyPlannedGroups();
  std::vector<ParamDesc> descs;
  for (const Param &p : params_)
    descs.push_back({p.name, p.param.shape, p.group});
  std::vector<GroupDesc> groups;
  for (const GroupSpec &group : spec_.groups) {
    GroupDesc desc{group.name, spec_.rules[group.rule].name, {},
                   spec_.rules[group.rule].rank, nullptr};
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
  plan_ = planStep(descs, groups);
  for (size_t i = 0; i < params_.size(); ++i)
    for (const HyperSpec &hyper :
         spec_.rules[spec_.groups[plan_.groupOf[i]].rule].hypers) {
      std::string group = spec_.groups[plan_.groupOf[i]].name;
      if (unset_.count(group + "/" + hyper.name))
        throw Error("parameter '" + params_[i].name + "' is in group '" +
                    group + "', which does not set '" + hyper.name + "'");
    }

  if (spec_.distribution == Distribution::Zero2) {
    std::vector<ShardParam> shardParams;
    for (size_t i = 0; i < params_.size(); ++i)
      shardParams.push_back({params_[i].param.shape, ruleOf(i).elementwise});
    shards_ = planShards(plan_, shardParams, communicator_->size(),
                         spec_.smallNumel);
  }
  std::vector<int64_t> partBegin, partLength;
  partsOf(communicator_->rank(), partBegin, partLength);
  for (size_t i = 0; i < params_.size(); ++i) {
    Param &p = params_[i];
    const RuleSpec &rule = ruleOf(i);
    size_t count = rule.states.size();
    p.stateRows.assign(count, 0);
    p.stateCols.assign(count, 0);
    rule.stateShapes(p.param.shape.data(),
                     static_cast<int>(p.param.shape.size()),
                     p.stateRows.data(), p.stateCols.data());
    p.fullRows = p.stateRows;
    p.fullCols = p.stateCols;
    p.partBegin = partBegin[i];
    p.partLength = partLength[i];
    for (size_t s = 0; s < count; ++s)
      if (partLength[i] == 0 ||
          (partLength[i] != p.param.numel() &&
           p.stateRows[s] * p.stateCols[s] == p.param.numel())) {
        // This rank keeps the state of its part only (none of a matrix
        // another rank owns).
        p.stateRows[s] = 1;
        p.stateCols[s] = partLength[i];
      }
    p.states.resize(count);
    for (size_t s = 0; s < count; ++s)
      p.states[s].assign(
          static_cast<size_t>(p.stateRows[s] * p.stateCols[s]), 0.0f);
    if (p.param.dtype == DType::BF16) {
      p.stagedParam.resize(static_cast<size_t>(p.param.numel()));
      p.stagedGrad.resize(static_cast<size_t>(p.param.numel()));
    }
  }
  finalized_ = true;
}

float *Optimizer::paramData(Param &p) {
  return p.param.dtype == DType::BF16 ? p.stagedParam.data()
                                      : static_cast<float *>(p.param.data);
}

const float *Optimizer::gradData(Param &p) {
  return p.grad.dtype == DType::BF16 ? p.stagedGrad.data()
                                     : static_cast<const float *>(p.grad.data);
}

void Optimizer::runRule(size_t index, const float *grad, int64_t begin,
                        int64_t length) {
  Param &p = params_[index];
  const RuleSpec &rule = ruleOf(index);
  std::vector<float *> states;
  for (std::vector<float> &s : p.states)
    states.push_back(s.data());
  auto [rows, cols] = asRowsCols(p.param.shape);
  const int64_t *shape = p.param.shape.data();
  int rank = static_cast<int>(p.param.shape.size());
  if (length != rows * cols) {
    // A part of an elementwise rule's parameter: one row of its elements.
    rows = 1;
    cols = length;
    shape = &length;
    rank = 1;
  }
  RuleCall call{paramData(p) + begin, grad,  states.data(),
                p.stateRows.data(),   p.stateCols.data(),
                rows,                 cols,  shape,
                rank,                 hypers_[plan_.groupOf[index]].data(),
                p.steps};
  try {
    rule.step(call);
  } catch (const Error &error) {
    throw Error("parameter '" + p.name + "' (rule '" + rule.name +
                "'): " + error.what());
  }
}

void Optimizer::step() {
  if (!finalized_)
    throw Error("step() before finalize()");
  // bf16 parameters are stepped in f32 and rounded back.
  for (Param &p : params_) {
    ++p.steps;
    if (p.param.dtype == DType::BF16)
      for (size_t k = 0; k < p.stagedParam.size(); ++k) {
        p.stagedParam[k] = readFloat(p.param, static_cast<int64_t>(k));
        p.stagedGrad[k] = readFloat(p.grad, static_cast<int64_t>(k));
      }
  }
  // One rank alone needs no packing: the plain step is the same math.
  if (shards_ && communicator_->size() > 1) {
    stepSharded();
  } else {
    for (const Bucket &bucket : plan_.buckets)
      for (size_t index : bucket.params)
        runRule(index, gradData(params_[index]), 0, params_[index].param.numel());
  }
  for (Param &p : params_)
    if (p.param.dtype == DType::BF16)
      for (size_t k = 0; k < p.stagedParam.size(); ++k)
        writeFloat(p.param, static_cast<int64_t>(k), p.stagedParam[k]);
}

void Optimizer::stepSharded() {
  const ShardPlan &plan = *shards_;
  int rank = communicator_->rank();
  size_t unitCount = plan.units.size();
  std::vector<std::vector<float>> reduced(unitCount), gathered(unitCount),
      send(unitCount);
  std::vector<RequestPtr> reductions(unitCount), gathers(unitCount);
  auto numel = [&](size_t p) { return params_[p].param.numel(); };

  bytesSent_ = bytesReceived_ = 0;
  // Phase 1: launch every reduction.
  for (size_t u = 0; u < unitCount; ++u) {
    const ShardUnit &unit = plan.units[u];
    int64_t total = 0;
    for (int64_t c : unit.counts)
      total += c;
    // The payloads: an all-reduce gives and gets the packed tensors; a
    // reduce-scatter gives them all and gets its part; its all-gather gives
    // the part and gets them all.
    bool small = unit.kind == ShardUnit::Kind::Small;
    bytesSent_ += 4 * (small ? total : total + unit.counts[rank]);
    bytesReceived_ += 4 * (small ? total : unit.counts[rank] + total);
    std::vector<float> &buffer =
        unit.kind == ShardUnit::Kind::Small ? reduced[u] : send[u];
    buffer.assign(static_cast<size_t>(total), 0.0f); // zero padding
    int64_t at = 0;
    for (size_t p : unit.params) {
      const float *g = gradData(params_[p]);
      std::copy(g, g + numel(p), buffer.begin() + at);
      at += numel(p);
    }
    if (unit.kind == ShardUnit::Kind::Small) {
      reductions[u] = communicator_->allReduceMean(buffer.data(), total,
                                                     DType::F32);
    } else {
      reduced[u].assign(static_cast<size_t>(unit.counts[rank]), 0.0f);
      reductions[u] = communicator_->reduceScatterMean(
          buffer.data(), reduced[u].data(), unit.counts, DType::F32);
    }
  }

  // Phase 2: per unit, wait for its reduction, update this rank's part and
  // launch the gather of the updated parameters.
  for (size_t u = 0; u < unitCount; ++u) {
    const ShardUnit &unit = plan.units[u];
    reductions[u]->wait();
    int64_t mine = 0; // where this rank's part starts in the packed order
    for (int r = 0; r < rank && unit.kind != ShardUnit::Kind::Small; ++r)
      mine += unit.counts[r];
    int64_t at = 0;
    if (unit.kind == ShardUnit::Kind::Small) {
      for (size_t p : unit.params) {
        runRule(p, reduced[u].data() + at, 0, numel(p));
        at += numel(p);
      }
      continue;
    }
    send[u].assign(static_cast<size_t>(unit.counts[rank]), 0.0f);
    for (size_t k = 0; k < unit.params.size(); ++k) {
      size_t p = unit.params[k];
      Param &param = params_[p];
      int64_t first = std::max(at, mine);
      int64_t last = std::min(at + numel(p), mine + unit.counts[rank]);
      bool here = unit.kind == ShardUnit::Kind::Owned ? unit.owner[k] == rank
                                                      : first < last;
      if (here) {
        if (unit.kind == ShardUnit::Kind::Owned)
          first = at, last = at + numel(p);
        runRule(p, reduced[u].data() + (first - mine), first - at,
                last - first);
        const float *updated = paramData(param) + (first - at);
        std::copy(updated, updated + (last - first),
                  send[u].begin() + (first - mine));
      }
      at += numel(p);
    }
    int64_t total = 0;
    for (int64_t c : unit.counts)
      total += c;
    gathered[u].assign(static_cast<size_t>(total), 0.0f);
    gathers[u] = communicator_->allGather(send[u].data(), gathered[u].data(),
                                          unit.counts, DType::F32);
  }

  // Phase 3: wait for the gathers; every rank now holds every update.
  for (size_t u = 0; u < unitCount; ++u) {
    const ShardUnit &unit = plan.units[u];
    if (unit.kind == ShardUnit::Kind::Small)
      continue;
    gathers[u]->wait();
    int64_t at = 0;
    for (size_t p : unit.params) {
      std::copy(gathered[u].begin() + at, gathered[u].begin() + at + numel(p),
                paramData(params_[p]));
      at += numel(p);
    }
  }
}

const RuleSpec &Optimizer::ruleOf(size_t param) const {
  int rule = params_[param].rule;
  return spec_.rules[rule >= 0 ? rule
                               : spec_.groups[plan_.groupOf[param]].rule];
}

int64_t Optimizer::stepCount(const std::string &param) const {
  return params_[paramIndex(param)].steps;
}

int64_t Optimizer::stateBytes() const {
  int64_t bytes = 0;
  for (const Param &p : params_)
    for (const std::vector<float> &s : p.states)
      bytes += static_cast<int64_t>(s.size() * sizeof(float));
  return bytes;
}

std::string Optimizer::groupOf(const std::string &param) const {
  if (!finalized_)
    throw Error("groupOf() before finalize()");
  return spec_.groups[plan_.groupOf[paramIndex(param)]].name;
}

std::string Optimizer::describePlan() const {
  if (!finalized_)
    throw Error("describePlan() before finalize()");
  std::vector<ParamDesc> params;
  for (const Param &p : params_)
    params.push_back({p.name, p.param.shape, p.group});
  std::vector<GroupDesc> groups;
  for (const GroupSpec &group : spec_.groups)
    groups.push_back({group.name, spec_.rules[group.rule].name, {},
                      spec_.rules[group.rule].rank, nullptr});
  return optgen::runtime::describePlan(plan_, params, groups);
}

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

void Optimizer::saveState(const std::string &path) {
  if (!finalized_)
    throw Error("saveState() before finalize()");
  // Each state is gathered whole (parts of sharded ones come from the
  // ranks holding them) and rank 0 writes it, keyed by parameter name, so
  // the file is the same whatever the number of ranks.
  int size = communicator_->size(), rank = communicator_->rank();
  std::vector<std::vector<int64_t>> parts(size); // [rank][param]
  for (int r = 0; r < size; ++r) {
    std::vector<int64_t> begin;
    partsOf(r, begin, parts[r]);
  }
  SafetensorsWriter writer;
  writer.setMetadata("optimizer", spec_.name);
  for (size_t i = 0; i < params_.size(); ++i) {
    Param &p = params_[i];
    const RuleSpec &rule = ruleOf(i);
    std::vector<int64_t> partOf(size);
    for (int r = 0; r < size; ++r)
      partOf[r] = parts[r][i];
    for (size_t s = 0; s < p.states.size(); ++s) {
      int64_t full = p.fullRows[s] * p.fullCols[s];
      std::vector<int64_t> counts = stateCounts(partOf, p.param.numel(), full);
      std::vector<float> whole(static_cast<size_t>(full));
      communicator_
          ->allGather(p.states[s].data(), whole.data(), counts, DType::F32)
          ->wait();
      std::vector<unsigned char> bytes(whole.size() * sizeof(float));
      if (!bytes.empty())
        std::memcpy(bytes.data(), whole.data(), bytes.size());
      writer.add("state/" + p.name + "/" + rule.states[s], DType::F32,
                 {p.fullRows[s], p.fullCols[s]}, std::move(bytes));
    }
    std::vector<unsigned char> step(sizeof(int64_t));
    std::memcpy(step.data(), &p.steps, sizeof(int64_t));
    writer.add("step/" + p.name, DType::I64, {1}, std::move(step));
  }
  if (rank == 0)
    writer.write(path);
  // Nobody returns before the file is there.
  float done = 0;
  communicator_->allReduceMean(&done, 1, DType::F32)->wait();
}

void Optimizer::loadState(const std::string &path) {
  if (!finalized_)
    throw Error("loadState() before finalize()");
  SafetensorsFile file = SafetensorsFile::open(path);
  for (size_t i = 0; i < params_.size(); ++i) {
    Param &p = params_[i];
    const RuleSpec &rule = ruleOf(i);
    for (size_t s = 0; s < p.states.size(); ++s) {
      std::string name = "state/" + p.name + "/" + rule.states[s];
      if (!file.has(name))
        throw Error(path + " has no state '" + rule.states[s] +
                    "' for parameter '" + p.name + "'");
      TensorView view = file.view(name);
      int64_t full = p.fullRows[s] * p.fullCols[s];
      if (view.numel() != full)
        throw Error(path + ": state '" + name + "' has " +
                    std::to_string(view.numel()) + " elements, but parameter '" +
                    p.name + "' needs " + std::to_string(full));
      std::vector<float> values = toFloatVector(view);
      // This rank's part: a slice of a state shaped like a split parameter,
      // else all of it (or nothing, when it holds none).
      int64_t from = static_cast<int64_t>(p.states[s].size()) < full &&
                             full == p.param.numel()
                         ? p.partBegin
                         : 0;
      std::copy(values.begin() + from,
                values.begin() + from + p.states[s].size(),
                p.states[s].begin());
    }
    std::string step = "step/" + p.name;
    if (!file.has(step))
      throw Error(path + " has no step count for parameter '" + p.name + "'");
    p.steps = static_cast<int64_t>(readDouble(file.view(step), 0));
  }
}

} // namespace optgen::runtime
