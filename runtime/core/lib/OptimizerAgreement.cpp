//===- OptimizerAgreement.cpp - What an optimizer's ranks compare ---------===//
//
// The OptimizerFront members that say what its ranks must hold alike, and
// how a rank differs when it does not: at finalize(), the spec, the
// parameters in registration order and the plan (agreementDescription,
// explainDifference); before each step, the hyperparameters' values
// (stepDescription, explainStepDifference). agree() (Agreement.h) is what
// compares them.
//
//===----------------------------------------------------------------------===//

#include "optgen/runtime/OptimizerFront.h"

#include "OptimizerFrontInternal.h"
#include "optgen/runtime/Error.h"
#include "optgen/runtime/Hash.h"
#include "optgen/runtime/Json.h"

#include <cstring>
#include <string>
#include <vector>

namespace optgen::runtime {

std::string OptimizerFront::agreementDescription() const {
  std::vector<const Param *> registered(params_.size());
  for (size_t i = 0; i < params_.size(); ++i)
    registered[params_[i].registered] = &params_[i];
  JsonArray params;
  for (const Param *p : registered) {
    size_t i = static_cast<size_t>(p - params_.data());
    params.push_back(JsonArray{p->name, dtypeName(p->param.dtype),
                               shapeJson(p->param.shape),
                               spec_.groups[schedule_.params[i].group].name,
                               ruleOf(i).name});
  }
  Hasher units;
  for (const StepUnit &unit : schedule_.units) {
    units.updateInt(static_cast<int64_t>(unit.kind));
    units.updateInt(unit.rule);
    units.updateInt(static_cast<int64_t>(unit.payload));
    for (size_t member : unit.params)
      units.updateString(schedule_.params[member].name);
    for (int owner : unit.owners)
      units.updateInt(owner);
    for (int64_t count : unit.counts)
      units.updateInt(count);
  }
  return writeJson(JsonObject{
      {"optimizer", spec_.name},
      {"math", spec_.math},
      {"spec", hex64(hash64(specJson()))},
      {"nonfinite",
       onNonFinite_ == NonFinitePolicy::Skip ? "skip" : "propagate"},
      {"params", std::move(params)},
      {"schedule", hex64(units.digest())}});
}

std::string OptimizerFront::explainDifference(const std::string &first,
                                              const std::string &theirs,
                                              int rank) {
  JsonValue a = parseJson(first, "rank 0's description");
  JsonValue b = parseJson(theirs, "a rank's description");
  std::string r = "rank " + std::to_string(rank);
  if (a.at("optimizer") != b.at("optimizer"))
    return r + " runs optimizer '" + b.at("optimizer").asString() +
           "', rank 0 runs '" + a.at("optimizer").asString() + "'";
  if (a.at("math") != b.at("math"))
    return r + "'s optimizer '" + a.at("optimizer").asString() +
           "' computes other math than rank 0's: it was generated from "
           "another spec, or with other -D values (math fingerprints '" +
           b.at("math").asString() + "' and '" + a.at("math").asString() +
           "')";
  if (a.at("spec") != b.at("spec"))
    return r + "'s optimizer '" + a.at("optimizer").asString() +
           "' has other rules, states, hyperparameters or groups than rank "
           "0's (spec fingerprints " +
           b.at("spec").asString() + " and " + a.at("spec").asString() + ")";
  if (a.at("nonfinite") != b.at("nonfinite"))
    return r + (b.at("nonfinite").asString() == "skip" ? " skips" : " does not skip") +
           " steps with non-finite gradients, rank 0 " +
           (a.at("nonfinite").asString() == "skip" ? "does" : "does not") +
           ": the ranks set the same policy (setNonFinitePolicy, "
           "skip_nonfinite, --skip-nonfinite), or one skips a step the "
           "others take";
  const JsonArray &pa = a.at("params").asArray(), &pb = b.at("params").asArray();
  auto find = [](const JsonArray &list, const JsonValue &name) {
    for (size_t i = 0; i < list.size(); ++i)
      if (list[i].at(size_t{0}) == name)
        return static_cast<int>(i);
    return -1;
  };
  auto shape = [](const JsonValue &dims) {
    std::vector<int64_t> s;
    for (const JsonValue &d : dims.asArray())
      s.push_back(d.asInt64());
    return formatShape(s);
  };
  for (const JsonValue &p : pa)
    if (find(pb, p.at(size_t{0})) < 0)
      return r + " has no parameter " + quoteForMessage(p.at(size_t{0}).asString()) +
             ", which rank 0 has";
  for (const JsonValue &p : pb)
    if (find(pa, p.at(size_t{0})) < 0)
      return r + " has parameter " + quoteForMessage(p.at(size_t{0}).asString()) +
             ", which rank 0 does not have";
  for (const JsonValue &p : pa) {
    const JsonValue &q = pb[find(pb, p.at(size_t{0}))];
    std::string name = quoteForMessage(p.at(size_t{0}).asString());
    if (p.at(2) != q.at(2))
      return r + ": parameter " + name + " has shape " + shape(q.at(2)) +
             ", rank 0 has " + shape(p.at(2));
    if (p.at(1) != q.at(1))
      return r + ": parameter " + name + " is " + q.at(1).asString() +
             ", on rank 0 " + p.at(1).asString();
    if (p.at(3) != q.at(3) || p.at(4) != q.at(4))
      return r + ": parameter " + name + " is in group '" +
             q.at(3).asString() + "' (rule '" + q.at(4).asString() +
             "'), on rank 0 in group '" + p.at(3).asString() + "' (rule '" +
             p.at(4).asString() + "')";
  }
  for (size_t i = 0; i < pa.size(); ++i)
    if (pa[i].at(size_t{0}) != pb[i].at(size_t{0}))
      return r + " registers the parameters in another order than rank 0: "
                 "its parameter " +
             std::to_string(i) + " is " +
             quoteForMessage(pb[i].at(size_t{0}).asString()) + ", rank 0's is " +
             quoteForMessage(pa[i].at(size_t{0}).asString());
  if (a.at("schedule") != b.at("schedule"))
    return r + " planned another step than rank 0 (schedule fingerprints " +
           b.at("schedule").asString() + " and " +
           a.at("schedule").asString() + ")";
  return "";
}

std::string OptimizerFront::stepDescription() const {
  std::string bytes;
  for (const std::vector<double> &values : hypers_)
    bytes.append(reinterpret_cast<const char *>(values.data()),
                 values.size() * sizeof(double));
  return bytes;
}

std::string OptimizerFront::explainStepDifference(const std::string &first,
                                                  const std::string &theirs,
                                                  int rank) const {
  // The same spec on every rank (finalize() agreed on it): the same layout.
  if (first.size() != theirs.size())
    return "";
  size_t at = 0;
  for (size_t g = 0; g < hypers_.size(); ++g) {
    for (const HyperSpec &hyper : spec_.rules[spec_.groups[g].rule].hypers)
      for (int k = 0; k < hyper.size; ++k) {
        size_t byte = (at + static_cast<size_t>(hyper.offset + k)) *
                      sizeof(double);
        double mine = 0, other = 0;
        std::memcpy(&mine, first.data() + byte, sizeof mine);
        std::memcpy(&other, theirs.data() + byte, sizeof other);
        if (std::memcmp(&mine, &other, sizeof mine) != 0)
          return "rank " + std::to_string(rank) + " steps with hyperparameter '" +
                 hyper.name + "'" +
                 (hyper.size > 1 ? "[" + std::to_string(k) + "]" : "") +
                 " of group '" + spec_.groups[g].name + "' = " +
                 formatDouble(other) + ", rank 0 with " + formatDouble(mine) +
                 ": every rank steps with the same hyperparameters (set them "
                 "alike on every rank), or the ranks' parameters drift apart";
      }
    at += hypers_[g].size();
  }
  return "";
}

} // namespace optgen::runtime
