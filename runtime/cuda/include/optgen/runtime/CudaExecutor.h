//===- CudaExecutor.h - Steps on one CUDA GPU -------------------*- C++ -*-===//
//
// The executor of generated CUDA code: the peer of the host executor
// (HostExecutor.h) on the GPU that is current when the optimizer is
// finalized. Everything a step needs lives in device memory from cudaMalloc,
// allocated once at prepare(), never inside a step:
//
// - per unit, each state as one [K, stateRows, stateCols] array (zeroed);
// - f32 staging of bf16 parameters and gradients (one unit's worth, as
//   units run one after another on one stream);
// - the rules' workspace (RuleSpec::workspaceElements per member, 256-byte
//   aligned per member; one unit's worth);
// - every unit's DeviceCall tables (pointers per member, element counts)
//   and conversion lists;
// - on N ranks, each distributed unit's collective buffers (its packed
//   gradients and updates, and this rank's part);
// - one buffer of every group's hyperparameters and every parameter's step
//   count, refreshed by one host-to-device copy at the start of each step;
// - when a rule is not elementwise (it may multiply matrices), a cuBLASLt
//   handle and its workspace (DeviceGemm.h's DeviceBlas), which every
//   unit's launch is given.
//
// A step: beginStep() enqueues that copy; compute(unit) enqueues the unit's
// bf16 widening, the rule's launch (RuleSpec::launch, with the unit's
// DeviceCall) and the narrowing of the updated bf16 parameters into the
// caller's memory; endStep() checks that every unit was computed. Nothing
// in a step waits for the GPU.
//
// CUDA graphs. The first step's device work is captured as a CUDA graph
// (stream capture from after the hyperparameter copy to endStep()), which
// endStep() then launches; later steps check the primitives' order against
// the captured one and launch the graph in endStep(). The hyperparameter
// copy stays outside the graph, so setHyper() and loadState() take effect
// without a new capture, but for integer hyperparameters: a launch may
// decide on the host from them (a loop count, from DeviceCall::hostHypers),
// which the graph replays as it was decided. So the executor keeps every
// integer hyperparameter's value (of every group) as it was at the
// capture, compares at beginStep(), and when one differs drops the graph
// and captures that step anew (captures() counts them). Float
// hyperparameters never cause a capture: launches read them on the device.
// Every pointer the graph holds is fixed at prepare(), the caller's
// parameters and gradients included: they must not move while the
// optimizer lives. Graphs are on unless the environment variable
// OPTGEN_CUDA_GRAPHS is "0" when the executor is made, or setGraphs(false)
// is called; without them every step launches its kernels itself, which,
// with CUDA_LAUNCH_BLOCKING=1, makes a faulting kernel's error name its
// unit (a fault inside a graph surfaces at a later CUDA call).
//
// Streams. A step runs on the caller's stream (setStream()), ordered after
// the work the caller enqueued there before step() and before what it
// enqueues after. Without one (or with the legacy default stream), the
// executor runs on a non-blocking stream of its own, which waits, through
// events, for the legacy default stream's earlier work and which that
// stream's later work waits for: step() behaves as work on the default
// stream would, and can still be captured. readState() and writeState()
// synchronise the stream.
//
// The distributed step. On one rank (or without `distribute zero2`) a step
// is all Local units. On N ranks the ZeRO-2 units run as the host
// executor's do, on the device: a Small unit's gradients are packed (in
// its payload dtype) into a buffer of the unit's and all-reduced in place;
// a Flat or Owned unit's are packed and reduce-scattered into this rank's
// part, which the rank's launches step (the parts of a Flat unit's
// members, the matrices an Owned unit gives this rank), writing the
// updates back into the part, which the all-gather shares and wait()
// unpacks into every member. A Small or Flat unit packs several rules and
// groups: one launch each. The collectives are the communicator's
// (NcclCommunicator.h, or CudaInProcessCommunicator.h for ranks as threads
// on one GPU), bound to the step's stream: they overlap the compute on a
// stream of their own, ordered by events, and a step with them is captured
// as one graph like any other (replayed steps check the primitives' order,
// collectives included). Each rank holds only the state of what it steps.
//
// Globals (OptimizerSpec::globals). Their phase runs on the stream too,
// inside the graph: beginStep() starts the step's partials at their
// identities; accumulatePartials(unit) widens the unit's bf16 as compute
// would and enqueues, per launch, the generated contribution
// (GlobalsSpec::launchContribution, each member's partials) and their fold
// into the step's partials in member order (a small unit only on rank 0:
// every rank steps it); launchPartialsGather() all-gathers every rank's
// partials (as F32 words); finishGlobals() folds them in rank order and
// enqueues the generated finish, which writes the globals every launch
// reads (DeviceCall::globals). globalValues() waits for the stream.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_CUDAEXECUTOR_H
#define OPTGEN_RUNTIME_CUDAEXECUTOR_H

#include "optgen/runtime/Executor.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>

namespace optgen::runtime {

class CudaExecutor : public Executor {
public:
  /// The stream later steps run on (null: the executor's own, see the file
  /// comment); called between steps. Work already enqueued on the previous
  /// stream is ordered before the next step. The stream must outlive the
  /// executor, or be replaced before it is destroyed (which waits for it).
  virtual void setStream(cudaStream_t stream) = 0;
  /// Whether steps run as a CUDA graph (the default unless
  /// OPTGEN_CUDA_GRAPHS=0); called between steps. Turning graphs off drops
  /// the captured graph; turning them on captures the next step.
  virtual void setGraphs(bool enabled) = 0;
  /// How many steps were captured as a CUDA graph: the first (with graphs
  /// on), then one after each change of an integer hyperparameter and each
  /// setGraphs(true) that followed setGraphs(false).
  virtual int64_t captures() const = 0;
};

/// An executor for the current CUDA device. Touches no device until
/// prepare().
std::unique_ptr<CudaExecutor> makeCudaExecutor();

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_CUDAEXECUTOR_H
