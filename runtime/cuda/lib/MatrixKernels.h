//===- MatrixKernels.h - Elementwise maps over matrices ---------*- C++ -*-===//
//
// The one kernel behind deviceCopy, deviceRound (DeviceGemm.h) and the
// products deviceGemm computes without cuBLASLt (no inner dimension): a map
// over `batch` members of `count` elements, members a stride apart, which
// enqueues one launch and nothing else, so that a graph can capture it.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_CUDA_MATRIXKERNELS_H
#define OPTGEN_RUNTIME_CUDA_MATRIXKERNELS_H

#include "optgen/runtime/Tensor.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace optgen::runtime {

/// Enqueues dst = factor * src for `batch` members of `count` elements of
/// `dtype` (F32, BF16 or F16; computed in f32, rounded to nearest even into
/// a 16-bit dtype), dst's members dstStride elements apart, src's
/// srcStride; or dst = 0 where src is null: a product with no inner
/// dimension, whose result is beta * c or 0. dst may be src's memory (the
/// same stride). Returns the launch's error (cudaSuccess when there is
/// nothing to do).
cudaError_t launchScaled(void *dst, int64_t dstStride, const void *src,
                         int64_t srcStride, float factor, int64_t count,
                         int batch, DType dtype, cudaStream_t stream);

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_CUDA_MATRIXKERNELS_H
