//===- CudaOptimizer.h - What generated CUDA code includes ------*- C++ -*-===//
//
// Generated CUDA code includes this one header: the optimizer its class
// derives from (the device-agnostic front on the CUDA executor), what its
// launch functions receive (DeviceCall.h), launch kernels with (Launch.h),
// check their launches with (CudaCheck.h) and compute matrix products with (DeviceGemm.h), the
// element math and bf16 rounding its kernels call (ElementMath.h,
// Float16.h), so that a device computes what the host does, their
// fixed-order reductions (DeviceReduce.h), the 16-bit types of their
// workspace slots (cuda_bf16.h, cuda_fp16.h) and the host code's Tile.
// The cpu component's Optimizer.h is its host peer.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_CUDAOPTIMIZER_H
#define OPTGEN_RUNTIME_CUDAOPTIMIZER_H

#include "optgen/runtime/CudaCheck.h"
#include "optgen/runtime/CudaExecutor.h"
#include "optgen/runtime/DeviceCall.h"
#include "optgen/runtime/DeviceGemm.h"
#include "optgen/runtime/ElementMath.h"
#include "optgen/runtime/Float16.h"
#include "optgen/runtime/OptimizerFront.h"
#include "optgen/runtime/Tile.h"

#include <memory>
#include <utility>

// Device code only: a runner's host code includes this header too (on the
// emulated device, device code is host code).
#if defined(__CUDACC__) || defined(OPTGEN_CUDA_EMULATED)
#include "optgen/runtime/DeviceReduce.h"
#include "optgen/runtime/Launch.h"

// The 16-bit types of workspace slots that hold bf16 and f16 tensors.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace optgen::runtime {

/// An optimizer stepping on the CUDA device current at finalize(), whose
/// parameters and gradients are memory of that device (TensorView::device
/// Device::Cuda).
class CudaOptimizer : public OptimizerFront {
public:
  explicit CudaOptimizer(OptimizerSpec spec)
      : CudaOptimizer(std::move(spec), makeCudaExecutor().release()) {}

  /// The stream steps run on (null: the executor's own, ordered with the
  /// legacy default stream); see CudaExecutor.h. The stream must outlive
  /// the optimizer, or be replaced before it is destroyed.
  void setStream(cudaStream_t stream) { executor_->setStream(stream); }
  /// Steps as a CUDA graph (the default unless OPTGEN_CUDA_GRAPHS=0), or
  /// launching every kernel at every step, for debugging.
  void setGraphs(bool enabled) { executor_->setGraphs(enabled); }
  /// How many steps were captured as a CUDA graph (CudaExecutor::captures):
  /// a count that grows at every step means an integer hyperparameter
  /// changes at every step, and every step pays a capture.
  int64_t captures() const { return executor_->captures(); }

private:
  /// The front owns `executor`; this class keeps a pointer to set streams.
  CudaOptimizer(OptimizerSpec spec, CudaExecutor *executor)
      : OptimizerFront(std::move(spec), std::unique_ptr<Executor>(executor)),
        executor_(executor) {}

  CudaExecutor *executor_;
};

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_CUDAOPTIMIZER_H
