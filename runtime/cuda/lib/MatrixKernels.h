//===- MatrixKernels.h - Elementwise maps over matrices ---------*- C++ -*-===//
//
// The one kernel behind deviceCopy, deviceRound (DeviceGemm.h) and the
// products deviceGemm computes without cuBLASLt (no inner dimension): a map
// over `batch` members of `count` floats, members a stride apart, which
// enqueues one launch and nothing else, so that a graph can capture it.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_CUDA_MATRIXKERNELS_H
#define OPTGEN_RUNTIME_CUDA_MATRIXKERNELS_H

#include <cuda_runtime.h>

#include <cstdint>

namespace optgen::runtime {

/// Enqueues dst = factor * src for `batch` members of `count` floats
/// (dst's members dstStride floats apart, src's srcStride), or dst = 0
/// where src is null: a product with no inner dimension, whose result is
/// beta * c or 0. dst may be src's memory (the same stride). Returns the
/// launch's error (cudaSuccess when there is nothing to do).
cudaError_t launchScaled(float *dst, int64_t dstStride, const float *src,
                         int64_t srcStride, float factor, int64_t count,
                         int batch, cudaStream_t stream);

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_CUDA_MATRIXKERNELS_H
