//===- DeviceCall.h - A rule's step on a CUDA device ------------*- C++ -*-===//
//
// What generated CUDA code receives: one launch of a rule for every
// parameter of a unit this rank computes (a bucket's same-shape matrices, or
// an elementwise rule's tensors of any shapes), enqueued on `stream` without
// waiting for it. The CUDA executor (CudaExecutor.h) builds one per unit at
// finalize(): every pointer in it, and every pointer array it points to,
// stays the same from step to step, so a whole step can be captured once as
// a CUDA graph and replayed; what changes between steps (hyperparameters,
// step counts) is read from device memory that the executor refreshes before
// each step.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_DEVICECALL_H
#define OPTGEN_RUNTIME_DEVICECALL_H

#include <cuda_runtime.h>

#include <cstdint>

namespace optgen::runtime {

struct DeviceCall {
  // --- Host values, the same at every step ---------------------------------
  /// The parameters stepped by this call (K).
  int members = 0;
  /// The largest member's elements: a launch's grid covers it.
  int64_t maxNumel = 0;
  /// A rule that is not elementwise steps members of one shape: that shape
  /// (rank values), seen as rows x cols as RuleCall does. An elementwise
  /// rule's members may differ in shape: rank is 0 then and numels says.
  const int64_t *shape = nullptr;
  int rank = 0;
  int64_t rows = 0, cols = 0;
  cudaStream_t stream = nullptr;

  // --- Device memory: arrays of `members` entries (states: of
  // `members` x the rule's state count, state s of member m at
  // s * members + m) ----------------------------------------------------------
  /// Each member's parameter as f32 (the caller's memory, or an f32 copy
  /// the executor keeps when the caller's is bf16) and its gradient as f32.
  float *const *params = nullptr;
  const float *const *grads = nullptr;
  float *const *states = nullptr;
  /// Each member's elements (an elementwise rule's members may differ).
  const int64_t *numels = nullptr;
  /// Each member's step count, 1 at the first step.
  const int64_t *steps = nullptr;
  /// The group's hyperparameter values, laid out by HyperSpec::offset.
  const double *hypers = nullptr;
  /// RuleSpec::workspaceElements(shape, rank) f32 per member, contiguous,
  /// 256-byte aligned per member; contents undefined at every call.
  float *workspace = nullptr;
  int64_t workspacePerMember = 0;
};

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_DEVICECALL_H
