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
// What a launch function may do, so that a graph captured from its first
// call replays it correctly: enqueue kernels (any number) and matrix
// products (DeviceGemm.h) on `stream` and nothing else; decide them from
// the host fields below alone, which never change but for the stream
// (setStream() may replace it) and the integer hyperparameters of
// `hostHypers` (when one changes, the executor captures the step again);
// read the float hyperparameters and the step counts only in device code.
// It must not synchronise, allocate or free memory, copy to or from the
// host, or use another stream (during capture these fail, or escape the
// graph). Where the host's arithmetic must be matched bit for bit, kernels
// compute in f32 without contraction into fused multiply-adds (nvcc
// contracts a * b + c by default; __fmul_rn and __fadd_rn never are), and
// round to bf16 with Float16.h. A member with no elements is stepped with
// the others; a unit whose members all have none is not launched.
//
// Alignment: the executor's memory (f32 staging of bf16 parameters and
// gradients, each state's [K, rows, cols] array, each member's workspace)
// starts 256-byte aligned, but a member's slice of a state is at m * rows
// * cols floats, and an f32 parameter or gradient is the caller's memory,
// aligned to 4 bytes only: test a pointer before loading it as float4.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_DEVICECALL_H
#define OPTGEN_RUNTIME_DEVICECALL_H

#include <cuda_runtime.h>

#include <cstdint>

namespace optgen::runtime {

class DeviceBlas; // DeviceGemm.h

struct DeviceCall {
  // --- Host values, the same at every step ---------------------------------
  /// The parameters stepped by this call (K).
  int members = 0;
  /// The largest member's elements: a launch's grid covers it.
  int64_t maxNumel = 0;
  /// A rule that is not elementwise steps members of one shape: that shape
  /// (rank values in host memory, null when rank is 0), seen as rows x cols
  /// as RuleCall does (asRowsCols). An elementwise rule's members may differ
  /// in shape: then shape is null, rank 0 and rows = cols = 0, and numels
  /// says (a unit of scalars has rank 0 too, but rows = cols = 1).
  const int64_t *shape = nullptr;
  int rank = 0;
  int64_t rows = 0, cols = 0;
  /// Where to enqueue: the executor's stream (the caller's, or its own).
  /// A replayed graph runs on whatever stream is current then.
  cudaStream_t stream = nullptr;
  /// The group's hyperparameter values in host memory, laid out as `hypers`
  /// (HyperSpec::offset), as they are at this call: for what a launch
  /// decides on the host from an integer hyperparameter, such as a loop
  /// count (the number of products it enqueues). A float one may change
  /// without a new capture: read it in device code, from `hypers`.
  const double *hostHypers = nullptr;
  /// cuBLASLt and its workspace for the launch's matrix products
  /// (deviceGemm): the executor's one, given to every unit when a rule of
  /// the optimizer is not elementwise (only those multiply matrices); null
  /// otherwise.
  const DeviceBlas *blas = nullptr;

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
  /// RuleSpec::workspaceElements(shape, rank) f32 per member (the largest
  /// member's, for members of several shapes): member m's at workspace + m
  /// * workspacePerMember, that stride a multiple of 64 floats (256 bytes).
  /// Contents undefined at every call (units share it); null, and the
  /// stride 0, when the rule needs none.
  float *workspace = nullptr;
  int64_t workspacePerMember = 0;
  /// The step's globals (OptimizerSpec::globals, in its order), finished on
  /// the device before any launch; null when the spec has none.
  const float *globals = nullptr;
};

/// What the globals' launches receive (GlobalsSpec::launchContribution and
/// launchFinish), enqueued on `stream` as a DeviceCall's are, under the
/// same rules (a CUDA graph replays them).
struct DeviceGlobals {
  cudaStream_t stream = nullptr;
  // --- launchContribution: the members of one launch of a unit (this
  // rank's part of each), as its DeviceCall gives them ----------------------
  int members = 0;
  int64_t maxNumel = 0;
  /// Device arrays of `members` entries: each member's parameter and
  /// gradient in f32 (the gradient as the step's update reads it), and its
  /// elements.
  float *const *params = nullptr;
  const float *const *grads = nullptr;
  const int64_t *numels = nullptr;
  /// GlobalsSpec::deviceScratch floats per member, contents undefined.
  float *scratch = nullptr;
  /// [member][partial]: what the launch writes, each member's partials.
  double *memberPartials = nullptr;
  // --- launchFinish -------------------------------------------------------
  /// The step's partials, combined over every member and rank.
  const double *partials = nullptr;
  /// Where the globals go (DeviceCall::globals).
  float *globals = nullptr;
};

/// The grid of a launch of `blocks` blocks per member over `members`
/// members (at least 1): y holds the members up to its limit, 65535, and z
/// the slabs of members beyond, so that a kernel's member is blockIdx.z *
/// gridDim.y + blockIdx.y (the last slab's blocks past `members` return).
inline dim3 memberGrid(unsigned blocks, int members) {
  constexpr int kMaxY = 65535;
  int y = members < 1 ? 1 : (members < kMaxY ? members : kMaxY);
  int z = (members + y - 1) / y;
  return dim3(blocks, static_cast<unsigned>(y),
              static_cast<unsigned>(z < 1 ? 1 : z));
}

/// The blocks per member of a grid-stride launch over `elements` elements,
/// `perBlock` per block and pass (threads x elements per thread): as many
/// as the elements fill, at least one, at most `maxBlocks`. The host sizes
/// a grid with it and a finishing kernel counts the partial sums that grid
/// left (#optgen.launch_shape's `elements` grid).
__host__ __device__ inline int64_t strideBlocks(int64_t elements,
                                                int64_t perBlock,
                                                int64_t maxBlocks) {
  const int64_t filled = (elements + perBlock - 1) / perBlock;
  return filled < 1 ? 1 : (filled < maxBlocks ? filled : maxBlocks);
}

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_DEVICECALL_H
