//===- MeanKernel.h - A sum of ranks made their mean ------------*- C++ -*-===//
//
// NCCL sums; the Communicator interface averages, dividing the sum once and
// rounding once. This kernel does the dividing, on the communication
// stream after the sum.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_NCCL_MEANKERNEL_H
#define OPTGEN_RUNTIME_NCCL_MEANKERNEL_H

#include "optgen/runtime/Tensor.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace optgen::runtime {

/// Enqueues data[i] = data[i] / ranks for `count` elements of `dtype` (F32,
/// or BF16 divided in f32 and rounded to nearest even, as Float16.h rounds).
/// Returns the launch's error (cudaSuccess when there is nothing to do).
cudaError_t launchMeanOfSum(void *data, int64_t count, int ranks, DType dtype,
                            cudaStream_t stream);

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_NCCL_MEANKERNEL_H
