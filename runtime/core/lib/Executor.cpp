//===- Executor.cpp - What runs a step ------------------------------------===//

#include "optgen/runtime/Executor.h"

#include "optgen/runtime/Error.h"

#include <algorithm>
#include <limits>
#include <string>

namespace optgen::runtime {

Executor::~Executor() = default;

void Executor::rebind(size_t, const TensorView &, const TensorView &) {
  throw Error("this executor cannot move a parameter's memory after "
              "finalize()");
}

static Error noGlobals(const char *primitive) {
  return Error(std::string(primitive) +
               ": this executor does not run steps with globals");
}

void Executor::accumulatePartials(int) {
  throw noGlobals("accumulatePartials");
}

Token Executor::launchPartialsGather() {
  throw noGlobals("launchPartialsGather");
}

void Executor::finishGlobals() { throw noGlobals("finishGlobals"); }

void resetPartials(const GlobalsSpec &globals, double *partials) {
  for (size_t k = 0; k < globals.partials.size(); ++k)
    partials[k] = globals.partials[k] == PartialKind::Max
                      ? -std::numeric_limits<double>::infinity()
                      : 0.0;
}

void combinePartials(const GlobalsSpec &globals, double *partials,
                     const double *more) {
  for (size_t k = 0; k < globals.partials.size(); ++k)
    partials[k] = globals.partials[k] == PartialKind::Max
                      ? std::max(partials[k], more[k])
                      : partials[k] + more[k];
}

UnitPhase finalPhase(UnitKind kind) {
  return kind == UnitKind::Flat || kind == UnitKind::Owned ? UnitPhase::Done
                                                           : UnitPhase::Computed;
}

std::string outOfOrder(const std::string &unit, const char *primitive,
                       UnitPhase phase) {
  static const char *const said[] = {"before its reduction was launched",
                                     "while its reduction is in flight",
                                     "before it was computed",
                                     "after it was computed",
                                     "while its all-gather is in flight",
                                     "after its all-gather"};
  return unit + ": " + primitive + " " + said[static_cast<int>(phase)];
}

std::string incompleteUnit(const std::string &unit, UnitKind kind,
                           UnitPhase phase) {
  static const char *const missing[] = {
      "its reduction (or compute) was not launched",
      "its reduction was not waited for",
      "it was not computed",
      "its all-gather was not launched",
      "its all-gather was not waited for",
      ""};
  return "the step left " + unit + " incomplete: " +
         (kind == UnitKind::Local && phase == UnitPhase::Idle
              ? "it was not computed"
              : missing[static_cast<int>(phase)]);
}

void runProgram(const StepSchedule &schedule, Executor &executor) {
  std::vector<Token> tokens(static_cast<size_t>(schedule.tokenCount));
  auto token = [&](int t) -> Token & {
    if (t < 0 || t >= schedule.tokenCount)
      throw Error("the schedule's program names token " + std::to_string(t) +
                  " of " + std::to_string(schedule.tokenCount));
    return tokens[static_cast<size_t>(t)];
  };
  for (const ScheduleOp &op : schedule.program) {
    switch (op.kind) {
    case ScheduleOp::Kind::AllReduce:
      token(op.token) = executor.launchAllReduce(op.unit);
      break;
    case ScheduleOp::Kind::ReduceScatter:
      token(op.token) = executor.launchReduceScatter(op.unit);
      break;
    case ScheduleOp::Kind::AllGather:
      token(op.token) = executor.launchAllGather(op.unit);
      break;
    case ScheduleOp::Kind::Wait:
      executor.wait(token(op.token));
      break;
    case ScheduleOp::Kind::Compute:
      executor.compute(op.unit);
      break;
    case ScheduleOp::Kind::Partials:
      executor.accumulatePartials(op.unit);
      break;
    case ScheduleOp::Kind::GatherPartials:
      token(op.token) = executor.launchPartialsGather();
      break;
    case ScheduleOp::Kind::FinishGlobals:
      executor.finishGlobals();
      break;
    }
  }
}

} // namespace optgen::runtime
