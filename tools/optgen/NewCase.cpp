//===- NewCase.cpp - optgen case new: a case to fill in -------------------===//

#include "NewCase.h"

#include "optgen/runtime/ExitCodes.h"
#include "optgen/runtime/Json.h"
#include "optgen/runtime/Safetensors.h"
#include "optgen/runtime/Tensor.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

using namespace mlir;
using namespace optgen;
namespace rt = optgen::runtime;

namespace {

/// The shortest decimal that reads back as the f32 `value` holds (the
/// compiler keeps an f32 hyperparameter's 0.9 as 0.899999976...), so that
/// the case says 0.9 and replays the same f32.
double shortestF32(double value) {
  char text[32];
  std::to_chars_result written =
      std::to_chars(text, text + sizeof text - 1, static_cast<float>(value));
  *written.ptr = '\0';
  return std::strtod(text, nullptr);
}

/// A hyperparameter's value as a case's group writes it: an integer, a
/// number, or a list of numbers for a tuple.
rt::JsonValue caseValue(Attribute attr) {
  if (auto integer = dyn_cast<IntegerAttr>(attr))
    return rt::JsonValue(integer.getValue().getSExtValue());
  if (auto number = dyn_cast<FloatAttr>(attr))
    return rt::JsonValue(number.getType().isF32()
                             ? shortestF32(number.getValueAsDouble())
                             : number.getValueAsDouble());
  rt::JsonArray members;
  for (Attribute member : cast<ArrayAttr>(attr))
    members.push_back(caseValue(member));
  return rt::JsonValue(std::move(members));
}

/// Draws from N(0, 1) by Box-Muller over a 64-bit Mersenne Twister: the same
/// numbers from every standard library (std::normal_distribution's are the
/// implementation's).
class Normal {
public:
  explicit Normal(uint64_t seed) : bits(seed) {}
  float operator()(double scale) {
    if (spare) {
      spare = false;
      return static_cast<float>(scale * second);
    }
    // u1 in (0, 1]: its log is finite.
    double u1 = (static_cast<double>(bits() >> 11) + 1) * 0x1p-53;
    double u2 = static_cast<double>(bits() >> 11) * 0x1p-53;
    double radius = std::sqrt(-2 * std::log(u1));
    double angle = 2 * M_PI * u2;
    second = radius * std::sin(angle);
    spare = true;
    return static_cast<float>(scale * radius * std::cos(angle));
  }

private:
  std::mt19937_64 bits;
  double second = 0;
  bool spare = false;
};

std::vector<unsigned char> randomF32(Normal &normal, int64_t numel,
                                     double scale) {
  std::vector<unsigned char> bytes(static_cast<size_t>(numel) * sizeof(float));
  for (int64_t i = 0; i < numel; ++i) {
    float value = normal(scale);
    std::memcpy(bytes.data() + i * sizeof(float), &value, sizeof value);
  }
  return bytes;
}

} // namespace

int optgen::writeNewCase(OptimizerOp optimizer, const NewCaseOptions &options) {
  // The groups in the spec's order, each with the parameters bound to it.
  rt::JsonArray groups;
  for (GroupOp group : optimizer.getBlock().getOps<GroupOp>()) {
    rt::JsonArray params;
    for (ParamOp param : optimizer.getBlock().getOps<ParamOp>())
      if (param.getGroup() == group.getSymName())
        params.push_back(rt::JsonValue(param.getName().str()));
    if (params.empty())
      continue;
    auto rule = SymbolTable::lookupNearestSymbolFrom<RuleOp>(
        group, group.getRuleAttr());
    rt::JsonObject entry{{"kind", rt::JsonValue(rule.getSymName().str())},
                         {"params", rt::JsonValue(std::move(params))}};
    // The group's verifier saw that every hyperparameter has a value.
    for (HyperOp hyper : rule.getBlock().getOps<HyperOp>()) {
      Attribute value = group.getSettings().get(hyper.getName());
      entry.emplace_back(hyper.getName().str(),
                         caseValue(value ? value : hyper.getDefaultValueAttr()));
    }
    groups.push_back(rt::JsonValue(std::move(entry)));
  }

  // The case is made in memory (and the file from it, as large again):
  // one that could not be is refused before any of it is.
  uint64_t bytes = 0;
  bool fits = true;
  for (ParamOp param : optimizer.getBlock().getOps<ParamOp>()) {
    std::optional<int64_t> size = rt::checkedByteSize(
        rt::DType::F32,
        std::vector<int64_t>(param.getShape().begin(), param.getShape().end()));
    uint64_t tensors = static_cast<uint64_t>(options.steps) + 1;
    fits &= size && static_cast<uint64_t>(*size) <= UINT64_MAX / 4 / tensors &&
            bytes <= UINT64_MAX / 4 - static_cast<uint64_t>(*size) * tensors;
    if (fits)
      bytes += static_cast<uint64_t>(*size) * tensors;
  }
  uint64_t memory = static_cast<uint64_t>(::sysconf(_SC_PHYS_PAGES)) *
                    static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  if (!fits || 2 * bytes > memory) {
    std::fprintf(stderr,
                 "optgen: error: the case of these parameters and %lld steps "
                 "would be %s bytes, and optgen case new makes it in memory "
                 "(twice: its tensors, then the file), more than this "
                 "machine's %llu bytes: give fewer steps or smaller shapes\n",
                 static_cast<long long>(options.steps),
                 fits ? std::to_string(bytes).c_str() : "more than 2^62",
                 static_cast<unsigned long long>(memory));
    return rt::ExitUsage;
  }

  try {
    rt::SafetensorsWriter writer;
    Normal normal(options.seed);
    for (ParamOp param : optimizer.getBlock().getOps<ParamOp>()) {
      std::vector<int64_t> shape(param.getShape().begin(),
                                 param.getShape().end());
      int64_t numel = 1;
      for (int64_t d : shape)
        numel *= d;
      std::string name = param.getName().str();
      writer.add("param/" + name, rt::DType::F32, shape,
                 randomF32(normal, numel, 1.0));
      for (int64_t step = 1; step <= options.steps; ++step)
        writer.add("grad/" + std::to_string(step) + "/" + name,
                   rt::DType::F32, shape,
                   randomF32(normal, numel, options.gradScale));
    }
    writer.setMetadata("steps", std::to_string(options.steps));
    writer.setMetadata("groups", rt::writeJson(rt::JsonValue(std::move(groups))));
    writer.write(options.outPath);
  } catch (const std::exception &error) {
    std::fprintf(stderr, "optgen: error: %s\n", error.what());
    return rt::ExitFailure;
  }
  return rt::ExitSuccess;
}
