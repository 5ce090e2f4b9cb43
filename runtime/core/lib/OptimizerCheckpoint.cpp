//===- OptimizerCheckpoint.cpp - An optimizer's checkpoints ---------------===//
//
// The OptimizerFront members that write and read checkpoints: the tables
// a checkpoint stores (the spec's structure, the plan and the
// hyperparameters, as JSON) and the fingerprints of the first two; the
// state gathered whole from the ranks that hold it (saveState,
// exportState); and a checkpoint checked whole, every rank agreeing,
// before anything changes (loadState, importState). The format, its
// checksum and what a load refuses: docs/RELIABILITY.md.
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
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace optgen::runtime {

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
