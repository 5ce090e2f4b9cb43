//===- CaseReplay.cpp - Replaying a case file -----------------------------===//

#include "optgen/runtime/CaseReplay.h"

#include "optgen/runtime/Error.h"
#include "optgen/runtime/FileIO.h"
#include "optgen/runtime/Json.h"
#include "optgen/runtime/Safetensors.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

namespace optgen::runtime {

Stepper::~Stepper() = default;

void Stepper::saveState(const std::string &) {
  throw Error("this stepper keeps no checkpoints");
}
void Stepper::loadState(const std::string &) {
  throw Error("this stepper keeps no checkpoints");
}
void Stepper::agree(const std::string &error, const std::string &,
                    const DifferenceFn &) {
  if (!error.empty())
    throw AgreedError(error);
}
void Stepper::abortAll(int) {}
void Stepper::skipNonFinite() {
  throw Error("this stepper cannot skip steps with non-finite gradients");
}

std::string runCheckpointStatePath(const std::string &dir) {
  return (std::filesystem::path(dir) / "optimizer.safetensors").string();
}
std::string runCheckpointParamsPath(const std::string &dir) {
  return (std::filesystem::path(dir) / "params.safetensors").string();
}

void OptimizerStepper::addGroup(const std::string &name,
                                const std::string &rule) {
  optimizer->addGroup(name, rule);
}
void OptimizerStepper::setHyper(const std::string &group,
                                const std::string &name,
                                const std::vector<double> &values) {
  optimizer->setHyper(group, name, values);
}
void OptimizerStepper::addParameter(const std::string &name, TensorView param,
                                    TensorView grad,
                                    const std::string &group) {
  if (group.empty())
    optimizer->addParameter(name, std::move(param), std::move(grad));
  else
    optimizer->addParameter(name, std::move(param), std::move(grad), group);
}
void OptimizerStepper::finalize() { optimizer->finalize(); }

std::vector<std::pair<std::string, double>>
lastGlobals(const OptimizerFront &optimizer) {
  std::vector<std::pair<std::string, double>> values;
  for (const std::string &name : optimizer.globalNames())
    values.emplace_back(name, optimizer.globalValue(name));
  return values;
}
void OptimizerStepper::step() { optimizer->step(); }

namespace {

struct CaseGroup {
  std::string name, rule;
  std::vector<std::string> params;
  std::vector<std::pair<std::string, std::vector<double>>> hypers;
};

/// The `groups` metadata: [{"kind": RULE, "params": [...], HYPER: value}].
std::vector<CaseGroup> parseGroups(const std::string &text,
                                   const std::string &source) {
  JsonValue json = parseJson(text, source + " (groups)");
  if (!json.isArray())
    throw Error(source + ": 'groups' is not a JSON list");
  std::vector<CaseGroup> groups;
  for (size_t i = 0; i < json.size(); ++i) {
    const JsonValue &entry = json.at(i);
    if (!entry.isObject())
      throw Error(source + ": group " + std::to_string(i) +
                  " is not an object");
    CaseGroup group;
    const JsonValue *kind = entry.find("kind");
    const JsonValue *params = entry.find("params");
    if (!kind || !kind->isString() || !params || !params->isArray())
      throw Error(source + ": group " + std::to_string(i) +
                  " needs \"kind\" (a rule) and \"params\" (a list)");
    group.rule = kind->asString();
    group.name = "case" + std::to_string(i) + "." + group.rule;
    for (const JsonValue &p : params->asArray()) {
      if (!p.isString())
        throw Error(source + ": group " + std::to_string(i) +
                    " lists a parameter that is not a string");
      group.params.push_back(p.asString());
    }
    for (const auto &[key, value] : entry.asObject()) {
      if (key == "kind" || key == "params")
        continue;
      std::vector<double> values;
      if (value.isNumber()) {
        values.push_back(value.asDouble());
      } else if (value.isArray()) {
        for (const JsonValue &v : value.asArray()) {
          if (!v.isNumber())
            throw Error(source + ": hyperparameter '" + key +
                        "' holds a non-number");
          values.push_back(v.asDouble());
        }
      } else {
        throw Error(source + ": hyperparameter '" + key +
                    "' is neither a number nor a list of numbers");
      }
      group.hypers.emplace_back(key, std::move(values));
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid]
                           : 0.5 * (values[mid - 1] + values[mid]);
}

/// |(out - p0) - (expect - p0)| / |expect - p0|, Frobenius norms.
double updateError(const std::vector<float> &initial,
                   const std::vector<float> &out,
                   const std::vector<float> &expect) {
  double diff = 0, ref = 0;
  for (size_t i = 0; i < initial.size(); ++i) {
    double got = double(out[i]) - initial[i];
    double want = double(expect[i]) - initial[i];
    diff += (got - want) * (got - want);
    ref += want * want;
  }
  return ref > 0 ? std::sqrt(diff / ref) : std::sqrt(diff);
}

/// A decimal integer, all of `text` (no sign, no spaces, no suffix).
bool parseCount(const std::string &text, int64_t &value) {
  if (text.empty() || text.size() > 18)
    return false;
  value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    value = value * 10 + (c - '0');
  }
  return true;
}

/// The case as every replay uses it.
struct CaseData {
  int64_t steps = 0;
  std::vector<std::string> names;
  std::vector<std::vector<float>> initial;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<CaseGroup> groups;
  std::vector<std::string> groupOf; ///< per parameter, its case group or ""
  /// --resume: the step the checkpoint was saved after, and the parameters
  /// then.
  int64_t resumedAt = 0;
  std::vector<std::vector<float>> resumed;
  /// The case file, read once.
  std::optional<SafetensorsFile> file;
};

/// Refuses options whose outputs would overwrite an input or each other.
void checkOptions(const CaseOptions &options) {
  if (options.repeat < 1)
    throw Error("--repeat must be at least 1");
  if (options.saveAt != 0 || !options.saveAtDir.empty()) {
    if (options.saveAt < 1 || options.saveAtDir.empty())
      throw Error("--save-at takes a step (at least 1) and a folder");
  }
  if ((!options.saveAtDir.empty() || !options.resumeDir.empty()) &&
      options.repeat != 1)
    throw Error("--save-at and --resume replay the case once: no --repeat");
  if (!options.resumeDir.empty() && !options.loadStatePath.empty())
    throw Error("--resume loads the optimizer state of its checkpoint: no "
                "--load-state with it");
  std::vector<std::pair<std::string, std::string>> inputs{
      {"--case", options.casePath}};
  if (!options.loadStatePath.empty())
    inputs.push_back({"--load-state", options.loadStatePath});
  if (!options.resumeDir.empty()) {
    inputs.push_back({"--resume", runCheckpointStatePath(options.resumeDir)});
    inputs.push_back({"--resume", runCheckpointParamsPath(options.resumeDir)});
  }
  std::vector<std::pair<std::string, std::string>> outputs;
  if (!options.outPath.empty())
    outputs.push_back({"--out", options.outPath});
  if (!options.reportPath.empty())
    outputs.push_back({"--report", options.reportPath});
  if (!options.saveStatePath.empty())
    outputs.push_back({"--save-state", options.saveStatePath});
  if (!options.saveAtDir.empty()) {
    outputs.push_back({"--save-at", runCheckpointStatePath(options.saveAtDir)});
    outputs.push_back({"--save-at", runCheckpointParamsPath(options.saveAtDir)});
  }
  for (size_t o = 0; o < outputs.size(); ++o) {
    for (const auto &[flag, path] : inputs)
      if (sameFile(outputs[o].second, path))
        throw Error(outputs[o].first + " '" + outputs[o].second +
                    "' is the file " + flag +
                    " reads: an output never overwrites an input");
    for (size_t other = 0; other < o; ++other)
      if (sameFile(outputs[o].second, outputs[other].second))
        throw Error(outputs[o].first + " and " + outputs[other].first +
                    " both write '" + outputs[o].second + "'");
  }
}

CaseData readCase(const CaseOptions &options) {
  CaseData data;
  data.file = SafetensorsFile::open(options.casePath);
  SafetensorsFile &file = *data.file;
  const std::string &source = options.casePath;
  auto meta = file.metadata();
  auto stepsIt = meta.find("steps");
  if (stepsIt == meta.end())
    throw Error(source + " has no 'steps' in its metadata");
  if (!parseCount(stepsIt->second, data.steps) || data.steps < 1 ||
      data.steps > 1000000)
    throw Error(source + ": 'steps' is " + quoteForMessage(stepsIt->second) +
                ", not a number of steps from 1 to 1000000");

  for (const std::string &name : file.names())
    if (name.rfind("param/", 0) == 0)
      data.names.push_back(name.substr(6));
  if (data.names.empty())
    throw Error(source + " has no param/<name> tensors");
  for (const std::string &name : data.names) {
    TensorView view = file.view("param/" + name);
    data.initial.push_back(toFloatVector(view));
    data.shapes.push_back(view.shape);
    for (int64_t s = 1; s <= data.steps; ++s) {
      std::string grad = "grad/" + std::to_string(s) + "/" + name;
      if (!file.has(grad))
        throw Error(source + " has no gradient '" + grad + "'");
      if (file.info(grad).shape != view.shape)
        throw Error(source + ": '" + grad + "' is " +
                    formatShape(file.info(grad).shape) + ", not " +
                    formatShape(view.shape));
    }
    std::string expect = "expect/" + name;
    if (file.has(expect) && file.info(expect).shape != view.shape)
      throw Error(source + ": '" + expect + "' is " +
                  formatShape(file.info(expect).shape) + ", but 'param/" +
                  name + "' is " + formatShape(view.shape));
  }
  for (const std::string &name : file.names())
    if (name.rfind("expect/", 0) == 0 &&
        !file.has("param/" + name.substr(7)))
      throw Error(source + ": '" + name + "' expects a parameter the case "
                  "does not have (no 'param/" + name.substr(7) + "')");
  if (options.tolerance >= 0 &&
      std::none_of(data.names.begin(), data.names.end(),
                   [&](const std::string &name) {
                     return file.has("expect/" + name);
                   }))
    throw Error("--tolerance compares the result with the case's "
                "expect/<name> tensors, and " + source + " has none");

  auto groupsIt = meta.find("groups");
  if (groupsIt != meta.end())
    data.groups = parseGroups(groupsIt->second, source);
  data.groupOf.assign(data.names.size(), "");
  std::vector<size_t> listedBy(data.names.size(), 0);
  for (size_t g = 0; g < data.groups.size(); ++g)
    for (const std::string &param : data.groups[g].params) {
      auto at = std::find(data.names.begin(), data.names.end(), param);
      if (at == data.names.end())
        throw Error(source + ": group " + std::to_string(g) +
                    " of its 'groups' lists parameter " +
                    quoteForMessage(param) + ", which the case does not have");
      size_t i = static_cast<size_t>(at - data.names.begin());
      if (!data.groupOf[i].empty())
        throw Error(source + ": parameter " + quoteForMessage(param) +
                    " is in two of its 'groups', " +
                    std::to_string(listedBy[i]) + " and " + std::to_string(g));
      data.groupOf[i] = data.groups[g].name;
      listedBy[i] = g;
    }

  if (!options.resumeDir.empty()) {
    std::string path = runCheckpointParamsPath(options.resumeDir);
    SafetensorsFile saved = SafetensorsFile::open(path);
    const auto &savedMeta = saved.metadata();
    auto get = [&](const char *key) -> std::string {
      auto it = savedMeta.find(key);
      if (it == savedMeta.end())
        throw Error("'" + path + "' has no '" + key +
                    "' in its metadata: not a checkpoint of optgen run "
                    "--save-at");
      return it->second;
    };
    if (get("format") != "optgen-run-checkpoint" || get("format_version") != "1")
      throw Error("'" + path + "' is not a checkpoint of optgen run --save-at "
                  "(format 'optgen-run-checkpoint', version 1)");
    int64_t savedSteps = 0;
    if (!parseCount(get("step"), data.resumedAt) ||
        !parseCount(get("steps"), savedSteps))
      throw Error("'" + path + "': its step is not a number");
    if (savedSteps != data.steps || data.resumedAt > data.steps)
      throw Error("'" + path + "' was saved after step " +
                  std::to_string(data.resumedAt) + " of a case of " +
                  std::to_string(savedSteps) + " steps; " + source + " has " +
                  std::to_string(data.steps));
    // The two files of a checkpoint belong together.
    std::string statePath = runCheckpointStatePath(options.resumeDir);
    SafetensorsFile state = SafetensorsFile::openHeader(statePath);
    auto checksum = state.metadata().find("checksum");
    if (checksum == state.metadata().end() ||
        checksum->second != get("state_checksum"))
      throw Error("the checkpoint in '" + options.resumeDir +
                  "' is inconsistent: params.safetensors was saved with "
                  "optimizer state " + get("state_checksum") +
                  ", optimizer.safetensors holds " +
                  (checksum == state.metadata().end() ? std::string("none")
                                                      : checksum->second));
    for (const std::string &name : saved.names())
      if (name.rfind("param/", 0) != 0 ||
          std::find(data.names.begin(), data.names.end(), name.substr(6)) ==
              data.names.end())
        throw Error("'" + path + "' holds " + quoteForMessage(name) +
                    ", which is no parameter of " + source);
    for (size_t i = 0; i < data.names.size(); ++i) {
      std::string name = "param/" + data.names[i];
      if (!saved.has(name))
        throw Error("'" + path + "' has no parameter " +
                    quoteForMessage(data.names[i]));
      const TensorInfo &info = saved.info(name);
      if (info.dtype != DType::F32 || info.shape != data.shapes[i])
        throw Error("'" + path + "': parameter " +
                    quoteForMessage(data.names[i]) + " is " +
                    std::string(dtypeName(info.dtype)) + " " +
                    formatShape(info.shape) + ", the case's F32 " +
                    formatShape(data.shapes[i]));
      data.resumed.push_back(toFloatVector(saved.view(name)));
    }
  }
  if (options.saveAt > data.steps)
    throw Error("--save-at " + std::to_string(options.saveAt) + ": " + source +
                " has " + std::to_string(data.steps) + " steps");
  if (options.saveAt && options.saveAt <= data.resumedAt)
    throw Error("--save-at " + std::to_string(options.saveAt) +
                ": the run resumes after step " +
                std::to_string(data.resumedAt));
  return data;
}

/// What the ranks must agree on about the case: its steps and where the
/// replay starts.
std::string caseDescription(const CaseData &data) {
  return writeJson(JsonObject{{"steps", data.steps},
                              {"resumed_at", data.resumedAt}});
}

std::string explainCase(const std::string &first, const std::string &theirs,
                        int rank) {
  JsonValue a = parseJson(first), b = parseJson(theirs);
  std::string r = "rank " + std::to_string(rank);
  if (a.at("steps") != b.at("steps"))
    return r + "'s case has " + std::to_string(b.at("steps").asInt64()) +
           " steps, rank 0's has " + std::to_string(a.at("steps").asInt64());
  return r + " resumes after step " +
         std::to_string(b.at("resumed_at").asInt64()) + ", rank 0 after step " +
         std::to_string(a.at("resumed_at").asInt64());
}

/// Writes the run's checkpoint after step `step` into `dir` (every rank
/// calls it): the optimizer state, then the parameters with the state's
/// checksum, each file atomically.
void saveRunCheckpoint(Stepper &stepper, const CaseOptions &options,
                       const CaseData &data,
                       const std::vector<std::vector<float>> &params,
                       int64_t step) {
  const std::string &dir = options.saveAtDir;
  std::string error;
  if (stepper.rank() == 0) {
    std::error_code failure;
    std::filesystem::create_directories(dir, failure);
    if (failure)
      error = "--save-at: cannot create the folder '" + dir +
              "': " + failure.message();
  }
  stepper.agree(error, "", nullptr);
  std::string statePath = runCheckpointStatePath(dir);
  stepper.saveState(statePath);
  error.clear();
  if (stepper.rank() == 0) {
    try {
      SafetensorsFile state = SafetensorsFile::openHeader(statePath);
      auto checksum = state.metadata().find("checksum");
      SafetensorsWriter writer;
      writer.setMetadata("format", "optgen-run-checkpoint");
      writer.setMetadata("format_version", "1");
      writer.setMetadata("step", std::to_string(step));
      writer.setMetadata("steps", std::to_string(data.steps));
      writer.setMetadata("case", options.casePath);
      writer.setMetadata("state_checksum", checksum == state.metadata().end()
                                               ? std::string("none")
                                               : checksum->second);
      for (size_t i = 0; i < data.names.size(); ++i) {
        std::vector<unsigned char> bytes(params[i].size() * sizeof(float));
        if (!bytes.empty())
          std::memcpy(bytes.data(), params[i].data(), bytes.size());
        writer.add("param/" + data.names[i], DType::F32, data.shapes[i],
                   std::move(bytes));
      }
      writer.write(runCheckpointParamsPath(dir));
    } catch (const std::exception &e) {
      error = e.what();
    }
  }
  stepper.agree(error, "", nullptr);
}

/// Replays the case (runCase's work); ExitToleranceExceeded when the
/// errors are above options.tolerance, else ExitSuccess.
int replay(const std::function<std::unique_ptr<Stepper>()> &makeStepper,
           const CaseOptions &options, std::unique_ptr<Stepper> &current) {
  // The stepper (and its communicator) first, so that every rank reaches
  // the agreement below whatever fails before it.
  current = makeStepper();
  CaseData data;
  std::string error;
  try {
    checkOptions(options);
    data = readCase(options);
  } catch (const std::exception &e) {
    error = e.what();
  }
  current->agree(error, error.empty() ? caseDescription(data) : "",
                 explainCase);
  const std::vector<std::string> &names = data.names;
  const std::vector<std::vector<int64_t>> &shapes = data.shapes;
  SafetensorsFile &file = *data.file;

  std::vector<std::vector<float>> params, grads;
  std::vector<double> stepMs;
  int rank = 0, worldSize = 1;
  int64_t stateBytes = -1, bytesSent = -1, bytesReceived = -1, skipped = -1;
  std::vector<std::pair<std::string, double>> globals;
  for (int r = 0; r < options.repeat; ++r) {
    params = data.resumed.empty() ? data.initial : data.resumed;
    grads.assign(names.size(), {});
    if (r > 0)
      current = makeStepper();
    Stepper &stepper = *current;
    rank = stepper.rank();
    worldSize = stepper.worldSize();
    error.clear();
    try {
      if (options.skipNonFinite)
        stepper.skipNonFinite();
      for (const CaseGroup &group : data.groups) {
        stepper.addGroup(group.name, group.rule);
        for (const auto &[name, values] : group.hypers)
          stepper.setHyper(group.name, name, values);
      }
      for (size_t i = 0; i < names.size(); ++i) {
        grads[i].assign(data.initial[i].size(), 0.0f);
        stepper.addParameter(names[i],
                             {params[i].data(), DType::F32, shapes[i]},
                             {grads[i].data(), DType::F32, shapes[i]},
                             data.groupOf[i]);
      }
    } catch (const std::exception &e) {
      error = e.what();
    }
    stepper.agree(error, "", nullptr);
    stepper.finalize();
    stateBytes = stepper.stateBytes();
    if (!options.loadStatePath.empty())
      stepper.loadState(options.loadStatePath);
    if (!options.resumeDir.empty())
      stepper.loadState(runCheckpointStatePath(options.resumeDir));
    for (int64_t s = data.resumedAt + 1; s <= data.steps; ++s) {
      for (size_t i = 0; i < names.size(); ++i) {
        std::vector<float> g = toFloatVector(
            file.view("grad/" + std::to_string(s) + "/" + names[i]));
        if (options.splitGrads)
          // g + c_r * pattern with the c_r summing to zero over the ranks:
          // the ranks' mean is the case's gradient.
          for (size_t k = 0; k < g.size(); ++k)
            g[k] += (rank - (worldSize - 1) / 2.0f) * 0.25f *
                    (static_cast<float>(k % 7) - 3.0f) * std::fabs(g[k]);
        std::copy(g.begin(), g.end(), grads[i].begin());
      }
      if (s == options.failAtStep)
        throw Error("failing before step " + std::to_string(s) +
                    ", as --fail-at-step asks");
      auto start = std::chrono::steady_clock::now();
      stepper.step();
      auto end = std::chrono::steady_clock::now();
      double timed = stepper.lastStepMs();
      stepMs.push_back(
          timed >= 0
              ? timed
              : std::chrono::duration<double, std::milli>(end - start).count());
      if (s == options.saveAt)
        saveRunCheckpoint(stepper, options, data, params, s);
    }
    bytesSent = stepper.bytesSent();
    bytesReceived = stepper.bytesReceived();
    skipped = stepper.skippedSteps();
    if (data.steps > data.resumedAt)
      globals = stepper.globalValues();
    if (!options.saveStatePath.empty() && r + 1 == options.repeat)
      stepper.saveState(options.saveStatePath);
  }

  // Every rank ends with the same parameters; rank 0 reports them.
  if (rank != 0)
    return ExitSuccess;
  JsonObject report;
  report.emplace_back("target", options.target);
  report.emplace_back("case", options.casePath);
  report.emplace_back("steps", data.steps);
  if (data.resumedAt)
    report.emplace_back("resumed_at", data.resumedAt);
  if (options.saveAt)
    report.emplace_back("saved_at", options.saveAt);
  report.emplace_back("repeat", options.repeat);
  report.emplace_back("world_size", worldSize);
  if (stateBytes >= 0)
    report.emplace_back("state_bytes_rank0", stateBytes);
  if (worldSize > 1 || bytesSent > 0) {
    report.emplace_back("sent_bytes_rank0", bytesSent);
    report.emplace_back("received_bytes_rank0", bytesReceived);
  }
  if (skipped >= 0)
    report.emplace_back("skipped_steps", skipped);
  if (!globals.empty()) {
    // The last step's, as every rank has them.
    JsonObject values;
    for (const auto &[name, value] : globals)
      values.emplace_back(name, value);
    report.emplace_back("globals", std::move(values));
  }
  double medianMs = stepMs.empty() ? 0 : median(stepMs);
  report.emplace_back("step_ms_median", medianMs);
  report.emplace_back("step_ms_min",
                      stepMs.empty()
                          ? 0.0
                          : *std::min_element(stepMs.begin(), stepMs.end()));
  JsonObject errors;
  size_t compared = 0;
  std::vector<std::string> outside; ///< above --tolerance, with their errors
  std::printf("%-32s %14s\n", "parameter", "update error");
  for (size_t i = 0; i < names.size(); ++i) {
    std::string expect = "expect/" + names[i];
    if (!file.has(expect))
      continue;
    double rel = updateError(data.initial[i], params[i],
                             toFloatVector(file.view(expect)));
    JsonObject entry;
    entry.emplace_back("rel", rel);
    JsonArray shape;
    for (int64_t d : shapes[i])
      shape.push_back(d);
    entry.emplace_back("shape", std::move(shape));
    errors.emplace_back(names[i], std::move(entry));
    std::printf("%-32s %14.3e\n", names[i].c_str(), rel);
    ++compared;
    // A NaN error is outside every tolerance.
    if (options.tolerance >= 0 && !(rel <= options.tolerance)) {
      char text[32];
      std::snprintf(text, sizeof text, "%.3e", rel);
      outside.push_back(quoteForMessage(names[i]) + " (" + text + ")");
    }
  }
  if (!errors.empty())
    report.emplace_back("params", std::move(errors));
  std::printf("%s: %lld steps x %d, median %.3f ms per step (%s)\n",
              options.casePath.c_str(), static_cast<long long>(data.steps),
              options.repeat, medianMs, options.target.c_str());
  if (skipped > 0)
    std::printf("%lld steps skipped: a gradient was not finite\n",
                static_cast<long long>(skipped));

  if (!options.outPath.empty()) {
    SafetensorsWriter writer;
    writer.setMetadata("steps", std::to_string(data.steps));
    writer.setMetadata("target", options.target);
    for (size_t i = 0; i < names.size(); ++i) {
      std::vector<unsigned char> bytes(params[i].size() * sizeof(float));
      if (!bytes.empty())
        std::memcpy(bytes.data(), params[i].data(), bytes.size());
      writer.add("param/" + names[i], DType::F32, shapes[i], std::move(bytes));
    }
    writer.write(options.outPath);
  }
  if (!options.reportPath.empty())
    writeFileAtomically(options.reportPath,
                        writeJson(JsonValue(std::move(report)), 2) + "\n");
  if (outside.empty())
    return ExitSuccess;
  std::fflush(stdout);
  std::string list;
  for (const std::string &entry : outside)
    list += (list.empty() ? "" : ", ") + entry;
  std::fprintf(stderr,
               "optgen: error: %zu of %zu parameters' update errors are above "
               "--tolerance %g: %s\n",
               outside.size(), compared,
               options.tolerance, list.c_str());
  return ExitToleranceExceeded;
}

} // namespace

int runCase(const std::function<std::unique_ptr<Stepper>()> &makeStepper,
            const CaseOptions &options) {
  std::unique_ptr<Stepper> stepper;
  try {
    return replay(makeStepper, options, stepper);
  } catch (const AgreedError &error) {
    // Every rank knows: each reports and returns.
    std::fflush(stdout);
    std::fprintf(stderr, "optgen: error: %s\n", error.what());
    return ExitFailure;
  } catch (const std::exception &error) {
    std::fflush(stdout);
    if (!stepper || stepper->worldSize() == 1) {
      std::fprintf(stderr, "optgen: error: %s\n", error.what());
      return ExitFailure;
    }
    // The other ranks may wait for this one inside a collective: end them.
    std::fprintf(stderr,
                 "optgen: error: rank %d: %s\noptgen: error: ending all %d "
                 "ranks\n",
                 stepper->rank(), error.what(), stepper->worldSize());
    stepper->abortAll(ExitFailure);
    return ExitFailure;
  }
}

} // namespace optgen::runtime
