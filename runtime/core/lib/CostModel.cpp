//===- CostModel.cpp - A small model of a distributed step's time ---------===//

#include "optgen/runtime/CostModel.h"

#include <algorithm>
#include <map>

namespace optgen::runtime {

const std::vector<Machine> &machinePresets() {
  // Assumed sustained rates, not peaks and not measurements (see
  // docs/DISTRIBUTED.md): H100 and H200 SXM have the same tensor cores
  // (989 TFLOP/s dense bf16 peak, 67 TFLOP/s f32 without tensor cores) and
  // NVLink 4 (450 GB/s a direction); HBM3 3.35 TB/s, HBM3e 4.8 TB/s; an
  // InfiniBand NDR NIC per GPU, 400 Gb/s. The CPU preset is the machine of
  // bench/RESULTS.md: sgemm 164-188 GFLOP/s on Polar Express's products on
  // its two cores, ssyrk about 0.6 of sgemm's time for the same flops,
  // 46-63 GB/s for the AdamW loop.
  static const std::vector<Machine> presets = [] {
    Machine h100;
    h100.gemm16 = 600e12;
    h100.gemm32 = 50e12;
    h100.symmetricCost = 1; // the CUDA target multiplies in full
    h100.memory = 2.8e12;
    h100.launchOverhead = 2e-6;
    h100.linkBandwidth = 360e9;
    h100.linkLatency = 2e-6;
    h100.netBandwidth = 360e9;
    h100.netLatency = 2e-6;
    h100.ranksPerNode = 0;

    Machine h100nvlink = h100;
    h100nvlink.name = "h100-nvlink";
    h100nvlink.description =
        "H100 SXM, every rank on one NVLink fabric (NVLink Switch)";
    Machine h100ib = h100;
    h100ib.name = "h100-ib";
    h100ib.description = "H100 SXM, nodes of 8 on NVLink, InfiniBand NDR "
                         "(400 Gb/s a GPU) between nodes";
    h100ib.ranksPerNode = 8;
    h100ib.netBandwidth = 45e9;
    h100ib.netLatency = 5e-6;
    Machine h200nvlink = h100nvlink;
    h200nvlink.name = "h200-nvlink";
    h200nvlink.description =
        "H200 SXM, every rank on one NVLink fabric (NVLink Switch)";
    h200nvlink.memory = 4.0e12;
    Machine h200ib = h100ib;
    h200ib.name = "h200-ib";
    h200ib.description = "H200 SXM, nodes of 8 on NVLink, InfiniBand NDR "
                         "(400 Gb/s a GPU) between nodes";
    h200ib.memory = 4.0e12;

    Machine cpu;
    cpu.name = "cpu";
    cpu.description = "the CPU benchmark machine of bench/RESULTS.md (2 "
                      "vCPUs, OpenBLAS), a rank a machine, on a 10 GB/s "
                      "network";
    cpu.gemm16 = 180e9; // bf16 compute rounds around sgemm on the CPU
    cpu.gemm32 = 180e9;
    cpu.symmetricCost = 0.6;
    cpu.memory = 50e9;
    cpu.launchOverhead = 2e-6;
    cpu.linkBandwidth = cpu.netBandwidth = 10e9;
    cpu.linkLatency = cpu.netLatency = 5e-6;
    cpu.ranksPerNode = 0;
    return std::vector<Machine>{h100nvlink, h100ib, h200nvlink, h200ib, cpu};
  }();
  return presets;
}

const Machine *findMachine(const std::string &name) {
  for (const Machine &machine : machinePresets())
    if (machine.name == name)
      return &machine;
  return nullptr;
}

Work &Work::operator+=(const Work &other) {
  flops16 += other.flops16;
  flops32 += other.flops32;
  symmetricFlops16 += other.symmetricFlops16;
  symmetricFlops32 += other.symmetricFlops32;
  bytes += other.bytes;
  launches += other.launches;
  return *this;
}

Work Work::scaled(double fraction) const {
  Work work = *this;
  work.flops16 *= fraction;
  work.flops32 *= fraction;
  work.symmetricFlops16 *= fraction;
  work.symmetricFlops32 *= fraction;
  work.bytes *= fraction;
  return work;
}

double computeSeconds(const Machine &machine, const Work &work) {
  auto rate = [](double amount, double perSecond) {
    return amount > 0 && perSecond > 0 ? amount / perSecond : 0.0;
  };
  return rate(work.flops16 + machine.symmetricCost * work.symmetricFlops16,
              machine.gemm16) +
         rate(work.flops32 + machine.symmetricCost * work.symmetricFlops32,
              machine.gemm32) +
         rate(work.bytes, machine.memory) +
         work.launches * machine.launchOverhead;
}

double collectiveSeconds(const Machine &machine, CollectiveKind kind,
                         const std::vector<int> &ranks, int64_t bytes) {
  size_t p = ranks.size();
  if (p <= 1)
    return 0;
  bool oneNode = true;
  if (machine.ranksPerNode > 0) {
    auto [lo, hi] = std::minmax_element(ranks.begin(), ranks.end());
    oneNode = *lo / machine.ranksPerNode == *hi / machine.ranksPerNode;
  }
  double bandwidth = oneNode ? machine.linkBandwidth : machine.netBandwidth;
  double latency = oneNode ? machine.linkLatency : machine.netLatency;
  double steps = static_cast<double>(p - 1);
  double seconds = steps * latency;
  if (bandwidth > 0)
    seconds += steps / static_cast<double>(p) * static_cast<double>(bytes) /
               bandwidth;
  return kind == CollectiveKind::AllReduce ? 2 * seconds : seconds;
}

namespace {

/// Intervals of busy time on one stream, in order and not overlapping.
using Intervals = std::vector<std::pair<double, double>>;

/// The length of the union of `a` and `b`'s intervals within [0, end].
double unionLength(Intervals a, const Intervals &b) {
  a.insert(a.end(), b.begin(), b.end());
  std::sort(a.begin(), a.end());
  double total = 0, from = 0, to = 0;
  bool open = false;
  for (auto [s, e] : a) {
    if (e <= s)
      continue;
    if (open && s <= to) {
      to = std::max(to, e);
      continue;
    }
    if (open)
      total += to - from;
    from = s;
    to = e;
    open = true;
  }
  if (open)
    total += to - from;
  return total;
}

} // namespace

SimResult simulateStep(const SimStep &step, const Machine &machine) {
  int world = step.worldSize;
  SimResult result;
  if (world < 1)
    return result;
  std::vector<double> computeFree(world, 0), commFree(world, 0);
  std::vector<Intervals> computeBusy(world), commBusy(world);
  // Per collective and rank: when its instance ends there (-1: not
  // launched; the rank takes no part: ends at once).
  size_t collectives = step.collectives.size();
  std::vector<std::vector<double>> endsAt(collectives);
  std::vector<double> launchAt(world);
  for (const SimStep::Op &op : step.program) {
    switch (op.kind) {
    case SimStep::Op::Launch: {
      if (op.index < 0 || static_cast<size_t>(op.index) >= collectives ||
          !endsAt[op.index].empty())
        return {};
      const SimStep::Collective &collective = step.collectives[op.index];
      std::vector<double> &ends = endsAt[op.index];
      // A rank in no instance is done with it when it launches it.
      ends = computeFree;
      for (const auto &instance : collective.instances) {
        double start = 0;
        for (int r : instance.ranks)
          start = std::max({start, computeFree[r], commFree[r]});
        double end = start + collectiveSeconds(machine, collective.kind,
                                               instance.ranks, instance.bytes);
        for (int r : instance.ranks) {
          commFree[r] = end;
          ends[r] = end;
          if (end > start)
            commBusy[r].push_back({start, end});
        }
      }
      break;
    }
    case SimStep::Op::Wait:
      if (op.index < 0 || static_cast<size_t>(op.index) >= collectives ||
          endsAt[op.index].empty())
        return {};
      for (int r = 0; r < world; ++r)
        computeFree[r] = std::max(computeFree[r], endsAt[op.index][r]);
      break;
    case SimStep::Op::Compute:
      if (op.index < 0 || static_cast<size_t>(op.index) >= step.compute.size())
        return {};
      for (int r = 0; r < world; ++r) {
        double seconds = step.compute[op.index][r];
        if (seconds > 0)
          computeBusy[r].push_back({computeFree[r], computeFree[r] + seconds});
        computeFree[r] += seconds;
      }
      break;
    }
  }

  result.ranks.resize(world);
  for (int r = 0; r < world; ++r)
    result.stepSeconds = std::max(result.stepSeconds, computeFree[r]);
  for (int r = 0; r < world; ++r) {
    RankTime &rank = result.ranks[r];
    rank.end = computeFree[r];
    for (auto [s, e] : computeBusy[r])
      rank.compute += e - s;
    double busy = unionLength(computeBusy[r], commBusy[r]);
    rank.exposed = busy - rank.compute;
    rank.idle = std::max(0.0, result.stepSeconds - busy);
    result.maxCompute = std::max(result.maxCompute, rank.compute);
    result.meanCompute += rank.compute / world;
    result.maxExposed = std::max(result.maxExposed, rank.exposed);
    result.meanExposed += rank.exposed / world;
    result.maxIdle = std::max(result.maxIdle, rank.idle);
    result.meanIdle += rank.idle / world;
  }
  result.imbalance =
      result.meanCompute > 0 ? result.maxCompute / result.meanCompute : 1;
  return result;
}

} // namespace optgen::runtime
