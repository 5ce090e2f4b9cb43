//===- Agreement.h - Ranks that fail together -------------------*- C++ -*-===//
//
// A distributed optimizer must never leave a rank waiting for the others:
// after every phase that can fail on some ranks and not on others (setting
// up, loading a checkpoint, saving one), and before the first step (do the
// ranks hold the same parameters, plan and spec?), every rank calls agree()
// with its own outcome. It is one small collective (32 bytes per rank) when
// everything went well; otherwise a second one carries the errors or the
// descriptions, and every rank throws AgreedError with the same message:
// the failing rank's error, or the first difference between the ranks.
//
// Inside a step, agreement is impossible (the other ranks wait inside the
// step's collectives): a rank that fails there reports and calls
// Communicator::abort() (see OptimizerFront::step and docs/RELIABILITY.md).
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_AGREEMENT_H
#define OPTGEN_RUNTIME_AGREEMENT_H

#include "optgen/runtime/Communicator.h"
#include "optgen/runtime/Error.h"

#include <functional>
#include <string>

namespace optgen::runtime {

/// What agree() throws on every rank: all the ranks know of the failure, so
/// each may simply return (none is left inside a collective).
class AgreedError : public Error {
public:
  using Error::Error;
};

/// Explains how `theirs` (rank `rank`'s description) differs from `first`
/// (rank 0's): "rank 1: parameter 'w' has shape [4, 8], rank 0 has [8, 4]".
using DifferenceFn = std::function<std::string(
    const std::string &first, const std::string &theirs, int rank)>;

/// Every rank calls it with `error` (empty when its part succeeded) and
/// `description` (what must be the same on every rank). Returns when every
/// rank succeeded with equal descriptions; otherwise throws AgreedError on
/// every rank, with one message: "rank R: ERROR" for the lowest failing rank
/// (on one rank alone, ERROR itself), else `explain`'s account of the first
/// rank that differs from rank 0 (a generic one without `explain`).
void agree(Communicator &communicator, const std::string &error,
           const std::string &description = "",
           const DifferenceFn &explain = nullptr);

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_AGREEMENT_H
