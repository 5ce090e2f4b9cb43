//===- Executor.cpp - What runs a step ------------------------------------===//

#include "optgen/runtime/Executor.h"

#include "optgen/runtime/Error.h"

#include <string>

namespace optgen::runtime {

Executor::~Executor() = default;

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
    }
  }
}

} // namespace optgen::runtime
