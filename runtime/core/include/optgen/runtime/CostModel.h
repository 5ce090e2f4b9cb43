//===- CostModel.h - A small model of a distributed step's time -*- C++ -*-===//
//
// What `optgen explain --simulate` predicts a step from: a machine (how
// fast a rank multiplies matrices and moves memory, how fast and how soon
// its links carry a collective), the work of each update (counted from the
// compiled IR by the driver: flops of its matrix products, bytes of its
// elementwise kernels, its launches), and a step program (launch a
// collective, wait for it, compute a unit), which simulateStep plays on
// every rank at once. docs/DISTRIBUTED.md explains the model and its
// presets; every figure here is a parameter, none is measured.
//
// - Compute: a rank's part of a unit takes
//     flops16 / gemm16 + flops32 / gemm32
//       + symmetric (the same, times symmetricCost)
//       + bytes / memory + launches * launchOverhead.
// - A collective over P ranks of a buffer of B bytes runs as a ring:
//   reduce-scatter and all-gather (P - 1) * latency + (P - 1) / P * B / bw,
//   all-reduce twice that; bw and latency those of the link within a node
//   when every rank of it is on one node, else those between nodes.
// - Each rank has one compute stream and one communication stream. A
//   collective starts when every rank taking part has launched it and its
//   stream is free (collectives run in the order they are launched), and
//   ends for all of them at once.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_COSTMODEL_H
#define OPTGEN_RUNTIME_COSTMODEL_H

#include <cstdint>
#include <string>
#include <vector>

namespace optgen::runtime {

/// A machine, as the model sees it; rates in units per second, times in
/// seconds. Every field is set by a preset and may be overridden.
struct Machine {
  std::string name;
  std::string description;
  /// Matrix products with 16-bit inputs (bf16, f16), flop/s.
  double gemm16 = 0;
  /// Matrix products with f32 (or wider) inputs, flop/s.
  double gemm32 = 0;
  /// A symmetric product's time over a full product's of the same flops:
  /// 1 where the target multiplies in full, about 0.5-0.6 where it computes
  /// one triangle (syrk).
  double symmetricCost = 1;
  /// What elementwise kernels stream through memory, bytes/s.
  double memory = 0;
  /// The fixed cost of each kernel launch or product call, per call.
  double launchOverhead = 0;
  /// The link between ranks of one node: bandwidth (bytes/s per rank, as
  /// a ring collective sees it) and latency (per ring step).
  double linkBandwidth = 0, linkLatency = 0;
  /// The network between nodes: the same figures.
  double netBandwidth = 0, netLatency = 0;
  /// Ranks per node, consecutive; 0: every rank on one node.
  int ranksPerNode = 0;
};

/// The presets: h100-nvlink, h100-ib, h200-nvlink, h200-ib, cpu (this
/// project's CPU benchmark machine).
const std::vector<Machine> &machinePresets();

/// The preset called `name`, or null.
const Machine *findMachine(const std::string &name);

/// The work of an update, counted from its IR.
struct Work {
  /// Multiply-add flops (2 m n k per product) of products whose inputs are
  /// 16-bit or f32, not symmetric and symmetric.
  double flops16 = 0, flops32 = 0, symmetricFlops16 = 0, symmetricFlops32 = 0;
  /// Bytes elementwise kernels read and write.
  double bytes = 0;
  /// Kernel launches and product calls.
  double launches = 0;

  Work &operator+=(const Work &other);
  /// The work of a `fraction` of the elements: flops and bytes scale,
  /// launches do not (one call covers any part).
  Work scaled(double fraction) const;
};

/// Seconds `machine` takes for `work`.
double computeSeconds(const Machine &machine, const Work &work);

enum class CollectiveKind { AllReduce, ReduceScatter, AllGather };

/// Seconds a ring collective of `kind` takes over `ranks` (rank numbers;
/// their node is rank / ranksPerNode) on a buffer of `bytes` (the whole
/// buffer: what an all-gather ends with).
double collectiveSeconds(const Machine &machine, CollectiveKind kind,
                         const std::vector<int> &ranks, int64_t bytes);

/// A step for simulateStep.
struct SimStep {
  int worldSize = 1;
  struct Collective {
    CollectiveKind kind = CollectiveKind::AllReduce;
    /// Disjoint sets of ranks, each running its own instance on its own
    /// buffer; a rank in none takes no part.
    struct Instance {
      std::vector<int> ranks;
      int64_t bytes = 0;
    };
    std::vector<Instance> instances;
  };
  std::vector<Collective> collectives;
  /// [unit][rank]: seconds of the rank's part of the unit.
  std::vector<std::vector<double>> compute;
  /// What every rank runs, in order.
  struct Op {
    enum Kind { Launch, Wait, Compute } kind;
    int index; ///< the collective (Launch, Wait) or the unit (Compute)
  };
  std::vector<Op> program;
};

/// One rank's step, simulated. Over the step's time: compute + exposed +
/// idle = step time.
struct RankTime {
  /// Its compute stream busy.
  double compute = 0;
  /// Not computing while a collective it takes part in runs: the
  /// communication that its compute does not hide.
  double exposed = 0;
  /// Neither: waiting for other ranks (to launch a collective it needs, or
  /// to finish theirs) or with nothing left to do.
  double idle = 0;
  /// When its last op is done.
  double end = 0;
};

struct SimResult {
  /// When the last rank is done.
  double stepSeconds = 0;
  std::vector<RankTime> ranks;
  /// The busiest rank's compute over the mean (1 without compute).
  double imbalance = 1;
  double maxCompute = 0, meanCompute = 0;
  double maxExposed = 0, meanExposed = 0;
  double maxIdle = 0, meanIdle = 0;
};

/// Plays `step` on `machine`. A program that waits for a collective it has
/// not launched, or launches one twice, is not a step: the result is then
/// empty (no ranks).
SimResult simulateStep(const SimStep &step, const Machine &machine);

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_COSTMODEL_H
