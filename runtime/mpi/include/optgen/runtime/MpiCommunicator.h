//===- MpiCommunicator.h - Collectives over MPI -----------------*- C++ -*-===//
//
// The CPU target's communicator: MPI's non-blocking collectives over
// MPI_COMM_WORLD (Open MPI from Debian), on the host (no streams). MPI has
// no bf16: bf16 data travels as 16-bit integers and is summed by a
// user-defined operation that adds in f32 and rounds each partial sum once.
// Built when CMake finds MPI.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_MPICOMMUNICATOR_H
#define OPTGEN_RUNTIME_MPICOMMUNICATOR_H

#include "optgen/runtime/Communicator.h"

namespace optgen::runtime {

/// A communicator over all ranks of MPI_COMM_WORLD. Initialises MPI (with
/// MPI_THREAD_FUNNELED) if nobody has, and finalises it at exit in that case.
std::unique_ptr<Communicator> makeMpiCommunicator();

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_MPICOMMUNICATOR_H
