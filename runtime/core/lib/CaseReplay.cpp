//===- CaseReplay.cpp - Replaying a case file -----------------------------===//

#include "optgen/runtime/CaseReplay.h"

#include "optgen/runtime/Error.h"
#include "optgen/runtime/Json.h"
#include "optgen/runtime/Safetensors.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

namespace optgen::runtime {

Stepper::~Stepper() = default;

void Stepper::saveState(const std::string &) {
  throw Error("this stepper keeps no checkpoints");
}
void Stepper::loadState(const std::string &) {
  throw Error("this stepper keeps no checkpoints");
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

void replay(const std::function<std::unique_ptr<Stepper>()> &makeStepper,
            const CaseOptions &options) {
  if (options.repeat < 1)
    throw Error("--repeat must be at least 1");
  SafetensorsFile file = SafetensorsFile::open(options.casePath);
  const std::string &source = options.casePath;
  auto meta = file.metadata();
  auto stepsIt = meta.find("steps");
  if (stepsIt == meta.end())
    throw Error(source + " has no 'steps' in its metadata");
  int64_t steps = std::stoll(stepsIt->second);
  if (steps < 1 || steps > 1000000)
    throw Error(source + ": 'steps' is " + stepsIt->second);

  std::vector<std::string> names;
  for (const std::string &name : file.names())
    if (name.rfind("param/", 0) == 0)
      names.push_back(name.substr(6));
  if (names.empty())
    throw Error(source + " has no param/<name> tensors");
  std::vector<std::vector<float>> initial;
  std::vector<std::vector<int64_t>> shapes;
  for (const std::string &name : names) {
    TensorView view = file.view("param/" + name);
    initial.push_back(toFloatVector(view));
    shapes.push_back(view.shape);
    for (int64_t s = 1; s <= steps; ++s) {
      std::string grad = "grad/" + std::to_string(s) + "/" + name;
      if (!file.has(grad))
        throw Error(source + " has no gradient '" + grad + "'");
      if (file.info(grad).shape != view.shape)
        throw Error(source + ": '" + grad + "' is " +
                    formatShape(file.info(grad).shape) + ", not " +
                    formatShape(view.shape));
    }
  }
  std::vector<CaseGroup> groups;
  auto groupsIt = meta.find("groups");
  if (groupsIt != meta.end())
    groups = parseGroups(groupsIt->second, source);

  std::vector<std::vector<float>> params, grads;
  std::vector<double> stepMs;
  int rank = 0, worldSize = 1;
  int64_t stateBytes = -1, bytesSent = -1, bytesReceived = -1;
  for (int r = 0; r < options.repeat; ++r) {
    params = initial;
    grads.assign(names.size(), {});
    std::unique_ptr<Stepper> stepper = makeStepper();
    rank = stepper->rank();
    worldSize = stepper->worldSize();
    for (const CaseGroup &group : groups) {
      stepper->addGroup(group.name, group.rule);
      for (const auto &[name, values] : group.hypers)
        stepper->setHyper(group.name, name, values);
    }
    for (size_t i = 0; i < names.size(); ++i) {
      grads[i].assign(initial[i].size(), 0.0f);
      std::string group;
      for (const CaseGroup &g : groups)
        if (std::find(g.params.begin(), g.params.end(), names[i]) !=
            g.params.end())
          group = g.name;
      stepper->addParameter(names[i], {params[i].data(), DType::F32, shapes[i]},
                            {grads[i].data(), DType::F32, shapes[i]}, group);
    }
    stepper->finalize();
    stateBytes = stepper->stateBytes();
    if (!options.loadStatePath.empty())
      stepper->loadState(options.loadStatePath);
    for (int64_t s = 1; s <= steps; ++s) {
      for (size_t i = 0; i < names.size(); ++i) {
        std::vector<float> g =
            toFloatVector(file.view("grad/" + std::to_string(s) + "/" + names[i]));
        if (options.splitGrads)
          // g + c_r * pattern with the c_r summing to zero over the ranks:
          // the ranks' mean is the case's gradient.
          for (size_t k = 0; k < g.size(); ++k)
            g[k] += (rank - (worldSize - 1) / 2.0f) * 0.25f *
                    (static_cast<float>(k % 7) - 3.0f) * std::fabs(g[k]);
        std::copy(g.begin(), g.end(), grads[i].begin());
      }
      auto start = std::chrono::steady_clock::now();
      stepper->step();
      auto end = std::chrono::steady_clock::now();
      double timed = stepper->lastStepMs();
      stepMs.push_back(
          timed >= 0
              ? timed
              : std::chrono::duration<double, std::milli>(end - start).count());
    }
    bytesSent = stepper->bytesSent();
    bytesReceived = stepper->bytesReceived();
    if (!options.saveStatePath.empty() && r + 1 == options.repeat)
      stepper->saveState(options.saveStatePath);
  }

  // Every rank ends with the same parameters; rank 0 reports them.
  if (rank != 0)
    return;
  JsonObject report;
  report.emplace_back("target", options.target);
  report.emplace_back("case", options.casePath);
  report.emplace_back("steps", steps);
  report.emplace_back("repeat", options.repeat);
  report.emplace_back("world_size", worldSize);
  if (stateBytes >= 0)
    report.emplace_back("state_bytes_rank0", stateBytes);
  if (worldSize > 1 || bytesSent > 0) {
    report.emplace_back("sent_bytes_rank0", bytesSent);
    report.emplace_back("received_bytes_rank0", bytesReceived);
  }
  report.emplace_back("step_ms_median", median(stepMs));
  report.emplace_back("step_ms_min",
                      *std::min_element(stepMs.begin(), stepMs.end()));
  JsonObject errors;
  std::printf("%-32s %14s\n", "parameter", "update error");
  for (size_t i = 0; i < names.size(); ++i) {
    std::string expect = "expect/" + names[i];
    if (!file.has(expect))
      continue;
    double rel = updateError(initial[i], params[i],
                             toFloatVector(file.view(expect)));
    JsonObject entry;
    entry.emplace_back("rel", rel);
    JsonArray shape;
    for (int64_t d : shapes[i])
      shape.push_back(d);
    entry.emplace_back("shape", std::move(shape));
    errors.emplace_back(names[i], std::move(entry));
    std::printf("%-32s %14.3e\n", names[i].c_str(), rel);
  }
  if (!errors.empty())
    report.emplace_back("params", std::move(errors));
  std::printf("%s: %lld steps x %d, median %.3f ms per step (%s)\n",
              options.casePath.c_str(), static_cast<long long>(steps),
              options.repeat, median(stepMs), options.target.c_str());

  if (!options.outPath.empty()) {
    SafetensorsWriter writer;
    writer.setMetadata("steps", std::to_string(steps));
    writer.setMetadata("target", options.target);
    for (size_t i = 0; i < names.size(); ++i) {
      std::vector<unsigned char> bytes(params[i].size() * sizeof(float));
      if (!bytes.empty())
        std::memcpy(bytes.data(), params[i].data(), bytes.size());
      writer.add("param/" + names[i], DType::F32, shapes[i], std::move(bytes));
    }
    writer.write(options.outPath);
  }
  if (!options.reportPath.empty()) {
    std::ofstream out(options.reportPath);
    out << writeJson(JsonValue(std::move(report)), 2) << "\n";
    if (!out)
      throw Error("cannot write the report " + options.reportPath);
  }
}

} // namespace

int runCase(const std::function<std::unique_ptr<Stepper>()> &makeStepper,
            const CaseOptions &options) {
  try {
    replay(makeStepper, options);
    return 0;
  } catch (const std::exception &error) {
    std::fflush(stdout);
    std::fprintf(stderr, "optgen: error: %s\n", error.what());
    return 1;
  }
}

} // namespace optgen::runtime
