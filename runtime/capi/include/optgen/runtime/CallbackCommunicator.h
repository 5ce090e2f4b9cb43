//===- CallbackCommunicator.h - Collectives through C callbacks -*- C++ -*-===//
//
// A Communicator whose collectives are the caller's, through the C ABI's
// table of function pointers (CApi.h, optgen_collectives): how a program in
// another language makes its own communication library (torch.distributed)
// the distributed step's. A host communicator: wait() returns when the
// collective is complete. No shard groups (split() throws).
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_CALLBACKCOMMUNICATOR_H
#define OPTGEN_RUNTIME_CALLBACKCOMMUNICATOR_H

#include "optgen/runtime/CApi.h"
#include "optgen/runtime/Communicator.h"

#include <memory>

namespace optgen::runtime {

/// Throws Error for a table that lacks a function or whose rank and size
/// do not make sense.
std::unique_ptr<Communicator>
makeCallbackCommunicator(const optgen_collectives &collectives);

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_CALLBACKCOMMUNICATOR_H
