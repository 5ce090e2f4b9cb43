//===- Staging.h - bf16 parameters and gradients as f32 ---------*- C++ -*-===//
//
// Rules step f32: the CUDA executor widens a unit's bf16 parameters and
// gradients into f32 staging before the rule's launch and narrows the
// updated parameters back after it, and the distributed step packs
// gradients into collective buffers and unpacks updates from them, with
// this kernel. One launch covers
// every copy of a unit, listed in device memory (fixed at prepare(), so
// that a captured graph replays them).
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_CUDA_STAGING_H
#define OPTGEN_RUNTIME_CUDA_STAGING_H

#include "optgen/runtime/Tensor.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace optgen::runtime {

/// `count` elements from `from` to `to` (device memory, not overlapping).
struct StagingCopy {
  const void *from;
  void *to;
  int64_t count;
};

/// Enqueues on `stream` the copies copies[0, copyCount) (device memory;
/// the largest `maxCount` elements) from elements of `from` to elements of
/// `to`, each F32 or BF16: bf16 widened to f32 exactly, f32 narrowed to
/// bf16 to nearest, ties to even, as Float16.h rounds on the host, and a
/// dtype to itself bit for bit. Returns the launch's error (cudaSuccess
/// when there is nothing to copy).
cudaError_t launchStagingCopies(const StagingCopy *copies, int copyCount,
                                int64_t maxCount, DType from, DType to,
                                cudaStream_t stream);

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_CUDA_STAGING_H
