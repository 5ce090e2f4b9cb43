//===- PartialsKernel.h - The globals' partials combined on a device -*- C++ -*-===//
//
// The CUDA executor's one combination of the globals' partials (as
// combinePartials does on the host, Executor.h): each unit's members'
// partials folded into the step's, member by member, and the ranks'
// gathered partials rank by rank, in a fixed order, on the step's stream
// (a CUDA graph replays it).
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_CUDA_PARTIALSKERNEL_H
#define OPTGEN_RUNTIME_CUDA_PARTIALSKERNEL_H

#include <cuda_runtime.h>

#include <cstdint>

namespace optgen::runtime {

/// Enqueues, for every partial k of `width`: partials[k] (or, with
/// `fromIdentity`, 0 for a sum and -infinity for a max) combined with
/// rows[r * width + k] for r = 0 .. rows - 1 in order, by kinds[k] (0: a
/// sum, 1: a max that keeps the larger, as std::max); device memory.
/// Returns the launch's error.
cudaError_t launchFoldPartials(double *partials, const double *rows,
                               int rowCount, int width, const int32_t *kinds,
                               bool fromIdentity, cudaStream_t stream);

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_CUDA_PARTIALSKERNEL_H
