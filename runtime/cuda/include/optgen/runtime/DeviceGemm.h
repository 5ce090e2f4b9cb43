//===- DeviceGemm.h - Matrix products on a CUDA device ----------*- C++ -*-===//
//
// What generated CUDA launch functions call for a rule's matrix products
// (Muon's Newton-Schulz iterations, ...): the device peer of Kernels.h's
// gemm, with its semantics. A unit of a rule that is not elementwise steps
// members of one shape, so one product for every member is one strided
// batch, one cuBLASLt call on the launch's stream. Operands are row-major
// matrices in device memory the host can name: a launch first gathers its
// members' parameters and gradients (whose pointer tables are device
// memory) into its workspace, where member m's slices are
// DeviceCall::workspacePerMember floats apart. Matrices hold f32, or bf16
// or f16 where the IR stores a value in its own 16-bit type (the
// workspace slots optgen-assign-buffers makes for device targets): then
// cuBLASLt reads 16-bit inputs on the tensor cores and writes a 16-bit
// result rounded to nearest even, as PyTorch's bf16 matmul does. Products
// accumulate in f32 (CUBLAS_COMPUTE_32F, never TF32), so they match the
// host's sgemm of the same rounded inputs to rounding, not bit for bit:
// cuBLASLt sums in an order of its own.
//
// Everything here may be captured in a CUDA graph (DeviceCall.h): nothing
// allocates, synchronises or copies between host and device. What is
// decided on the host is frozen in a captured graph: shapes, pointers, and
// the scalars alpha and beta. A launch passes constants there, or values
// derived from integer hyperparameters (DeviceCall::hostHypers, whose
// changes make the executor capture again), never a float hyperparameter,
// which changes without a new capture: it scales in a kernel instead.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_DEVICEGEMM_H
#define OPTGEN_RUNTIME_DEVICEGEMM_H

#include "optgen/runtime/Tensor.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace optgen::runtime {

/// cuBLASLt's handle and the device workspace its products use, on the
/// device current when made. It owns both (movable, not copyable); one made
/// empty (default-constructed, or moved from) holds neither, and products
/// with more than zero multiply-adds fail on it. The CUDA executor makes one
/// at prepare() when a rule of the optimizer is not elementwise, and gives
/// it to every launch (DeviceCall::blas): its products run one after
/// another on its stream, so they share the workspace; products that may
/// run at the same time need a DeviceBlas each.
class DeviceBlas {
public:
  /// cuBLASLt's recommended workspace for Hopper and later GPUs (older ones
  /// use less of it).
  static constexpr size_t kWorkspaceBytes = size_t(32) << 20;

  DeviceBlas() = default;
  /// A handle and `workspaceBytes` of workspace on the current device.
  /// Throws Error when either cannot be had.
  static DeviceBlas create(size_t workspaceBytes = kWorkspaceBytes);

  DeviceBlas(DeviceBlas &&other) noexcept;
  DeviceBlas &operator=(DeviceBlas &&other) noexcept;
  DeviceBlas(const DeviceBlas &) = delete;
  DeviceBlas &operator=(const DeviceBlas &) = delete;
  /// Frees both, on the device current then: the owner makes the device
  /// current, and no product may still be running.
  ~DeviceBlas();

  cublasLtHandle_t handle() const { return handle_; }
  void *workspace() const { return workspace_; }
  size_t workspaceBytes() const { return workspaceBytes_; }

private:
  void release() noexcept;

  cublasLtHandle_t handle_ = nullptr;
  void *workspace_ = nullptr;
  size_t workspaceBytes_ = 0;
};

/// A batch of same-shape row-major matrices in device memory: member m is
/// rows x cols elements of `dtype` (F32, BF16 or F16) at data + m * stride
/// elements (its rows cols elements apart).
struct DeviceMatrices {
  void *data = nullptr;
  int64_t rows = 0, cols = 0;
  /// Elements from one member's first element to the next one's.
  int64_t stride = 0;
  DType dtype = DType::F32;
};

/// Enqueues on `stream`, for each of `batch` members, out = alpha * op(a) @
/// op(b) + beta * c, op transposing when asked (Kernels.h's gemm on every
/// member), accumulated in f32. a and b hold one dtype; out holds theirs or
/// F32, and c out's. Without `c` (null) beta is unused and out's earlier
/// contents are never read. `out` may be c's memory (the same data and
/// stride) and must share no element with a, b or, otherwise, c; its
/// members must not overlap. With no inner dimension (op(a) has no columns)
/// out = beta * c, or 0 without c. Throws Error naming `what`, the shapes
/// and the cause (cuBLASLt's status): shapes or dtypes that do not
/// multiply, operands that alias the result, before any CUDA call.
void deviceGemm(const DeviceBlas &blas, const DeviceMatrices &a,
                bool transposeA, const DeviceMatrices &b, bool transposeB,
                float alpha, const DeviceMatrices *c, float beta,
                const DeviceMatrices &out, int batch, cudaStream_t stream,
                std::string_view what);

/// Enqueues a copy of `batch` members of `from` into `to` (device memory,
/// not overlapping), bit for bit: the two have one shape and dtype, each
/// its own stride. Throws Error for matrices that differ in shape or
/// dtype, a negative size or batch, or members that overlap (a stride
/// below rows * cols).
void deviceCopy(const DeviceMatrices &from, const DeviceMatrices &to,
                int batch, cudaStream_t stream);

/// Enqueues the rounding of `batch` members of `count` floats at `data`,
/// `stride` floats apart, in place to `to` (BF16 or F16) and back to f32,
/// as Float16.h's roundToBF16 and roundToF16 round on the host. Throws
/// Error for another dtype, and as deviceCopy does.
void deviceRound(float *data, int64_t count, int64_t stride, int batch,
                 DType to, cudaStream_t stream);

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_DEVICEGEMM_H
