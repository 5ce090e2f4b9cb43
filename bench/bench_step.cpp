//===- bench_step.cpp - CPU benchmark of the generated nanochat step ------===//
//
// Times the optimizer optgen generates from examples/nanochat.opt on
// nanochat-shaped parameter sets, and puts the times next to what this
// machine can do at best:
//
//  - the AdamW part (embeddings, lm_head, scalars) is elementwise and
//    memory-bound, so it is compared with the measured memory bandwidth:
//    a pure-traffic kernel over the same bytes, on the same OpenMP threads,
//    timed next to every step (STREAM-like figures are printed for context);
//  - the whole step is dominated by Muon's Polar Express matrix products, so
//    it is compared with the measured BLAS sgemm rate on the very products
//    one step performs.
//
// Usage: optgen-bench [--depths 2,4,6] [--steps N] [--warmup W]
// Besides the human-readable tables it prints one "RESULT key=value ..."
// line per depth, which bench/run.sh reads.
//
//===----------------------------------------------------------------------===//

#include "deterministic_data.h"
#include "nanochat_muon_adamw.h"
#include "stream_kernels.h"

#include "optgen/runtime/Tensor.h"

#include <cblas.h>
#include <sys/resource.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#ifndef OPTGEN_BENCH_COMPUTE
#define OPTGEN_BENCH_COMPUTE "f32" // the spec's compute dtype, for the banner
#endif

namespace {

using optgen::runtime::DType;
using namespace optgen_bench;
using optgen::runtime::TensorView;
using Clock = std::chrono::steady_clock;

constexpr int64_t kVocab = 8192;
constexpr int kPolarIterations = 5; // ns_steps' default in the spec

//===----------------------------------------------------------------------===//
// Timing helpers
//===----------------------------------------------------------------------===//

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

/// Runs `body` `warmup` times untimed, then `reps` times timed; returns every
/// timed duration in seconds. The machine is shared, so callers take the
/// median (or, for the hardware ceilings, the best) rather than the mean.
std::vector<double> timeRuns(int warmup, int reps,
                             const std::function<void()> &body) {
  for (int i = 0; i < warmup; ++i)
    body();
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    Clock::time_point start = Clock::now();
    body();
    times.push_back(secondsSince(start));
  }
  return times;
}

/// Lets idle worker threads go to sleep before a measurement: OpenBLAS's
/// threads busy-wait for a while (~0.1 s) after each call, and libgomp's
/// after each parallel loop, and either slows the other pool down while it
/// spins (2 cores here).
void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(300)); }

int threadCount() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

/// What the machine's CPUs did, to tell a clean measurement from one that
/// shared the cores with somebody else's build: busy time of all CPUs
/// (/proc/stat, steal included) and this process's own CPU time.
struct CpuSample {
  Clock::time_point wall;
  double machineBusy = 0; // seconds, all CPUs
  double self = 0;        // seconds, this process (all its threads)
};

CpuSample sampleCpu() {
  CpuSample sample;
  sample.wall = Clock::now();
  std::ifstream stat("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0,
         softirq = 0, steal = 0;
  stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >>
      steal;
  double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  sample.machineBusy = (user + nice + system + irq + softirq + steal) / tick;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  sample.self = usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
                1e-6 * (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
  return sample;
}

/// The share of the machine's CPU capacity other processes used between two
/// samples, in percent (0 on a quiet machine; /proc/stat counts in ticks of
/// 10 ms, so short intervals are coarse).
double othersPercent(const CpuSample &from, const CpuSample &to) {
  double wall = std::chrono::duration<double>(to.wall - from.wall).count();
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  double others = (to.machineBusy - from.machineBusy) - (to.self - from.self);
  return std::max(0.0, 100.0 * others / (wall * static_cast<double>(cpus)));
}

//===----------------------------------------------------------------------===//
// nanochat's parameters
//===----------------------------------------------------------------------===//

enum class Kind { AdamW, Muon };

struct ParamDef {
  std::string name;
  std::vector<int64_t> shape;
  Kind kind;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

/// The parameters of nanochat's GPT at `depth` (n_embd = 64 * depth, vocab
/// 8192), named as nanochat names them so that the spec's groups bind them:
/// "transformer.h.*" matrices to Muon, "transformer.wte.*" and
/// "value_embeds.*" to the embeddings group, "lm_head.*" and "*lambdas" to
/// their AdamW groups. Value embeddings sit on alternate layers, the last one
/// always included (nanochat's has_ve). The attention's small ve_gate
/// matrices ([n_kv_head, 12]) are left out, as the brief's shape list does.
std::vector<ParamDef> nanochatParams(int depth) {
  int64_t n = 64 * depth;
  std::vector<ParamDef> defs;
  defs.push_back({"transformer.wte.weight", {kVocab, n}, Kind::AdamW});
  for (int i = 0; i < depth; ++i) {
    std::string h = "transformer.h." + std::to_string(i) + ".";
    for (const char *m : {"attn.c_q", "attn.c_k", "attn.c_v", "attn.c_proj"})
      defs.push_back({h + m + ".weight", {n, n}, Kind::Muon});
    defs.push_back({h + "mlp.c_fc.weight", {4 * n, n}, Kind::Muon});
    defs.push_back({h + "mlp.c_proj.weight", {n, 4 * n}, Kind::Muon});
  }
  for (int i = 0; i < depth; ++i)
    if (i % 2 == (depth - 1) % 2)
      defs.push_back({"value_embeds." + std::to_string(i) + ".weight",
                      {kVocab, n},
                      Kind::AdamW});
  defs.push_back({"lm_head.weight", {kVocab, n}, Kind::AdamW});
  defs.push_back({"resid_lambdas", {depth}, Kind::AdamW});
  defs.push_back({"x0_lambdas", {depth}, Kind::AdamW});
  return defs;
}

/// A parameter set with its memory, and an optimizer over it.
struct Model {
  std::vector<ParamDef> defs;
  std::vector<std::vector<float>> params, grads;
  std::unique_ptr<optgen_generated::nanochat_muon_adamw> optimizer;

  int64_t numel() const {
    int64_t n = 0;
    for (const ParamDef &d : defs)
      n += d.numel();
    return n;
  }
};

/// Builds the parameters of `defs` with deterministic data (parameter i uses
/// streams 2i and 2i+1) and a finalized optimizer over them.
std::unique_ptr<Model> makeModel(std::vector<ParamDef> defs) {
  auto model = std::make_unique<Model>();
  model->defs = std::move(defs);
  model->optimizer =
      std::make_unique<optgen_generated::nanochat_muon_adamw>();
  for (size_t i = 0; i < model->defs.size(); ++i) {
    const ParamDef &d = model->defs[i];
    std::vector<float> p(static_cast<size_t>(d.numel()));
    std::vector<float> g(p.size());
    fillUniform(p, 2 * i, 0.02f);
    fillUniform(g, 2 * i + 1, 1.0f);
    model->params.push_back(std::move(p));
    model->grads.push_back(std::move(g));
  }
  // Views after every vector is in place: their data pointers are stable.
  for (size_t i = 0; i < model->defs.size(); ++i) {
    const ParamDef &d = model->defs[i];
    model->optimizer->addParameter(
        d.name, TensorView{model->params[i].data(), DType::F32, d.shape},
        TensorView{model->grads[i].data(), DType::F32, d.shape});
  }
  model->optimizer->finalize();
  return model;
}

//===----------------------------------------------------------------------===//
// Work models: bytes and flops of one step
//===----------------------------------------------------------------------===//

/// AdamW reads p, g, m, v and writes p, m, v: 7 floats per element, the
/// least any implementation must move (the tensors are far larger than the
/// caches, and each is touched once when the elementwise chain is fused).
int64_t adamwBytes(const std::vector<ParamDef> &defs) {
  int64_t bytes = 0;
  for (const ParamDef &d : defs)
    if (d.kind == Kind::AdamW)
      bytes += 7 * 4 * d.numel();
  return bytes;
}

/// Muon's compulsory memory traffic per m x n matrix: read g, read and write
/// the momentum buffer and p (5 floats per element), plus the factored second
/// moment (negligible). The Polar Express iterates (X, A = X^T X, A A, B)
/// are at most 4n x n = 2.4 MB at depth 6 and live in L2/L3, so their
/// traffic is not DRAM traffic; a per-element count of the working copies a
/// straightforward implementation makes is in the report instead.
int64_t muonBytes(const std::vector<ParamDef> &defs) {
  int64_t bytes = 0;
  for (const ParamDef &d : defs)
    if (d.kind == Kind::Muon)
      bytes += 5 * 4 * d.numel();
  return bytes;
}

/// Bytes Polar Express moves through the caches on one m x n matrix (s x s
/// Gram matrices, s = min(m, n), l = max(m, n)), as the generated code runs
/// it, per iteration: the Gram product reads X and writes A; A A reads A and
/// writes A^2; b A + c A^2 reads both and writes B; the product with X reads
/// X and B and writes l x s; a X + that reads both and writes the result;
/// the loop then copies the result twice (into `chosen`, back into `u`).
/// That is 10 l s + 5 s^2 floats per iteration, 5 iterations. At these
/// sizes (at most 1536 x 384 = 2.4 MB) it stays in L2/L3: an estimate of
/// cache traffic, not of DRAM traffic.
double polarCacheBytes(int64_t m, int64_t n) {
  double s = static_cast<double>(std::min(m, n));
  double l = static_cast<double>(std::max(m, n));
  return kPolarIterations * 4.0 * (10.0 * l * s + 5.0 * s * s);
}

/// Matrix-product flops of Polar Express on one m x n matrix. With
/// s = min(m, n) and l = max(m, n), an iteration forms the s x s Gram matrix
/// A (X^T X or X X^T: 2 l s^2), A A (2 s^3) and the product with X
/// (X B or B X: 2 l s^2): 4 l s^2 + 2 s^3 flops; 5 iterations.
double polarFlops(int64_t m, int64_t n) {
  double s = static_cast<double>(std::min(m, n));
  double l = static_cast<double>(std::max(m, n));
  return kPolarIterations * (4.0 * l * s * s + 2.0 * s * s * s);
}

/// The elementwise flops of the Muon rule, counted from examples/nanochat.opt
/// per element of p: two lerps (6), MuonEq's norms and scaling (5), the
/// normalisation (3), per iteration a*X + (..) (2, so 10), Muon+ (3), the
/// NorMuon statistics and scaling (3), the cautious update (7): ~37; plus
/// b*A + c*(A A) on the s x s matrices (3 per element and iteration).
double muonElementwiseFlops(int64_t m, int64_t n) {
  double s = static_cast<double>(std::min(m, n));
  return 37.0 * static_cast<double>(m * n) + kPolarIterations * 3.0 * s * s;
}

/// AdamW: decay (2), two lerps (3 + 4), bias corrections, sqrt, +eps,
/// divide, scale, subtract (5): ~14 flops per element.
constexpr double kAdamwFlopsPerElement = 14.0;

//===----------------------------------------------------------------------===//
// Machine ceilings
//===----------------------------------------------------------------------===//

struct Bandwidth {
  double copy, triad, update, adamwLike; // GB/s, best of the repetitions
  double best() const { return std::max({copy, triad, update, adamwLike}); }
};

/// Four arrays of n floats in one allocation, each starting one page and
/// one cache line after a multiple of the previous one's size: separate
/// allocations of a power-of-two size start at addresses with the same low
/// bits, so their streams collide in cache sets and memory channels, which
/// cost a third of the bandwidth here (STREAM staggers its arrays likewise).
struct StreamArrays {
  static constexpr int64_t kStagger = 1040; // floats: 4096 + 64 bytes
  explicit StreamArrays(int64_t n)
      : n(n), block(static_cast<size_t>(4 * (n + kStagger))) {
    kernelFill(n, at(0), at(1), at(2), at(3));
  }
  float *at(int k) { return block.data() + k * (n + kStagger); }
  int64_t n;
  std::vector<float> block;
};

/// The STREAM-like kernels (stream_kernels.h) over arrays far larger than
/// the caches (L3 is 32 MB here; each array is 128 MB), best of `reps`.
/// Bytes are counted the STREAM way (what the kernel reads and writes, not
/// the write-allocate reads of a separate destination), which understates
/// copy and triad: hence also the two in-place kernels, which have no hidden
/// traffic and match AdamW's access pattern (every written array was read
/// first).
Bandwidth measureBandwidth(int reps) {
  settle();
  StreamArrays arrays(int64_t(1) << 25); // 32 Mi floats = 128 MB per array
  float *a = arrays.at(0), *b = arrays.at(1), *c = arrays.at(2),
        *d = arrays.at(3);
  const int64_t n = arrays.n;
  auto best = [&](double bytes, const std::function<void()> &kernel) {
    std::vector<double> t = timeRuns(1, reps, kernel);
    return bytes / *std::min_element(t.begin(), t.end()) / 1e9;
  };
  Bandwidth bw{};
  bw.copy = best(2.0 * 4 * n, [&] { kernelCopy(n, a, b); });
  bw.triad = best(3.0 * 4 * n, [&] { kernelTriad(n, a, b, c); });
  bw.update = best(3.0 * 4 * n, [&] { kernelUpdate(n, a, b); });
  bw.adamwLike = best(7.0 * 4 * n, [&] { kernelAdamwLike(n, a, b, c, d); });
  return bw;
}

/// The AdamW part timed in pairs with its pure-traffic bound: before every
/// timed step, kernelAdamwLike over four staggered arrays as large as the
/// AdamW parameters together (the same bytes, and the same help, if any,
/// from the caches). The memory bandwidth this virtual machine gets varies
/// by tens of percent from one minute to the next (its neighbours on the
/// host share it, invisibly to /proc/stat), so the fraction of the bound is
/// taken pair by pair: each step against the bound measured just before it.
struct PairedAdamw {
  std::vector<double> stepTimes; ///< seconds
  double boundGBs = 0;           ///< median of the bound's rates
  double fraction = 0;           ///< median of bound time / step time
};

PairedAdamw timeAdamwPaired(Model &model, int64_t numel, int warmup,
                            int reps) {
  StreamArrays arrays(numel);
  auto bound = [&] {
    kernelAdamwLike(numel, arrays.at(0), arrays.at(1), arrays.at(2),
                    arrays.at(3));
  };
  auto step = [&] { model.optimizer->step(); };
  for (int i = 0; i < warmup; ++i) {
    bound();
    step();
  }
  PairedAdamw result;
  std::vector<double> rates, fractions;
  for (int i = 0; i < reps; ++i) {
    double boundTime = timeRuns(0, 1, bound)[0];
    double stepTime = timeRuns(0, 1, step)[0];
    result.stepTimes.push_back(stepTime);
    rates.push_back(7.0 * 4 * numel / boundTime / 1e9);
    fractions.push_back(boundTime / stepTime);
  }
  result.boundGBs = median(rates);
  result.fraction = median(fractions);
  return result;
}

/// One row-major sgemm C = op(A) op(B) through CBLAS, as the runtime calls it.
struct Gemm {
  int64_t m, n, k;
  bool transA, transB;
};

/// How the products of a step are spread over the cores.
enum class GemmThreads {
  Blas,     ///< one product at a time, on OpenBLAS's own threads
  PerThread ///< one product per OpenMP thread, each single-threaded BLAS
};

/// The BLAS rate (GFLOP/s, best of `reps`) of the sequence of products
/// `gemms`, each on its own buffers (filled with small values so that nothing
/// overflows or goes subnormal). The matrices here are small (at most
/// 1536 x 384), where OpenBLAS's threading can pay less than running
/// independent products side by side; a step has many independent matrices,
/// so both ways are ceilings an implementation could reach, and the caller
/// takes the better.
double gemmRate(const std::vector<Gemm> &gemms, int reps, GemmThreads how) {
  struct Buffers {
    std::vector<float> a, b, c;
  };
  std::vector<Buffers> buffers;
  double flops = 0;
  for (const Gemm &g : gemms) {
    Buffers buf{std::vector<float>(g.m * g.k), std::vector<float>(g.k * g.n),
                std::vector<float>(g.m * g.n)};
    fillUniform(buf.a, 1000 + buffers.size(), 0.01f);
    fillUniform(buf.b, 2000 + buffers.size(), 0.01f);
    buffers.push_back(std::move(buf));
    flops += 2.0 * g.m * g.n * g.k;
  }
  auto one = [&](size_t i) {
    const Gemm &g = gemms[i];
    Buffers &buf = buffers[i];
    // Leading dimensions of the stored (untransposed) operands.
    int lda = static_cast<int>(g.transA ? g.m : g.k);
    int ldb = static_cast<int>(g.transB ? g.k : g.n);
    cblas_sgemm(CblasRowMajor, g.transA ? CblasTrans : CblasNoTrans,
                g.transB ? CblasTrans : CblasNoTrans, static_cast<int>(g.m),
                static_cast<int>(g.n), static_cast<int>(g.k), 1.0f,
                buf.a.data(), lda, buf.b.data(), ldb, 0.0f, buf.c.data(),
                static_cast<int>(g.n));
  };
  int64_t count = static_cast<int64_t>(gemms.size());
  auto run = [&] {
    if (how == GemmThreads::Blas) {
      for (int64_t i = 0; i < count; ++i)
        one(static_cast<size_t>(i));
    } else {
#pragma omp parallel for schedule(dynamic, 1)
      for (int64_t i = 0; i < count; ++i)
        one(static_cast<size_t>(i));
    }
  };
#ifdef OPENBLAS_VERSION
  // The pthread build must be told to stay on the calling thread. The
  // OpenMP build does so by itself inside a parallel region, and there
  // openblas_set_num_threads() would set OpenMP's own thread count, shrinking
  // the team that runs the products to one thread.
  int blasThreads = openblas_get_num_threads();
  bool openmpBuild = openblas_get_parallel() == 2;
  if (how == GemmThreads::PerThread && !openmpBuild)
    openblas_set_num_threads(1);
#endif
  settle();
  // The best repetition, as STREAM reports: a ceiling, and this machine's
  // neighbours only ever make a repetition slower.
  std::vector<double> times = timeRuns(2, reps, run);
  double rate = flops / *std::min_element(times.begin(), times.end()) / 1e9;
#ifdef OPENBLAS_VERSION
  if (how == GemmThreads::PerThread && !openmpBuild)
    openblas_set_num_threads(blasThreads);
#endif
  return rate;
}

/// The products Polar Express performs on one m x n matrix in one
/// iteration, as the generated code issues them (examples/nanochat.opt:
/// tall: A = X^T X, A A, X B; otherwise A = X X^T, A A, B X).
std::vector<Gemm> polarGemms(int64_t m, int64_t n) {
  if (m > n)
    return {{n, n, m, true, false}, {n, n, n, false, false},
            {m, n, n, false, false}};
  return {{m, m, n, false, true}, {m, m, m, false, false},
          {m, n, m, false, false}};
}

//===----------------------------------------------------------------------===//
// The benchmark
//===----------------------------------------------------------------------===//

struct Options {
  std::vector<int> depths = {2, 4, 6};
  int steps = 0;  ///< timed steps; 0: chosen per depth
  int warmup = 2; ///< untimed steps after the two checked ones
  /// --quick: only the step (no ceilings, no separate AdamW timing), for
  /// iterating on the compiler and for profilers.
  bool quick = false;
  /// --part muon|adamw: with --quick, only that kind's parameters.
  std::string part = "all";
  /// --only A,B: with --quick, only the parameters whose names contain one
  /// of these (bench/sim_check.py times one bucket at a time).
  std::vector<std::string> only;
};

Options parseOptions(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "optgen-bench: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--depths") {
      options.depths.clear();
      std::stringstream list(value());
      for (std::string item; std::getline(list, item, ',');)
        options.depths.push_back(std::stoi(item));
    } else if (arg == "--steps") {
      options.steps = std::stoi(value());
    } else if (arg == "--warmup") {
      options.warmup = std::stoi(value());
    } else if (arg == "--quick") {
      options.quick = true;
    } else if (arg == "--only") {
      std::stringstream list(value());
      for (std::string item; std::getline(list, item, ',');)
        options.only.push_back(item);
    } else if (arg == "--part") {
      options.part = value();
      if (options.part != "all" && options.part != "muon" &&
          options.part != "adamw") {
        std::fprintf(stderr, "optgen-bench: --part is all, muon or adamw\n");
        std::exit(2);
      }
    } else {
      std::fprintf(stderr,
                   "usage: optgen-bench [--depths 2,4,6] [--steps N] "
                   "[--warmup W] [--quick [--part all|muon|adamw] "
                   "[--only NAME,...]]\n");
      std::exit(arg == "--help" || arg == "-h" ? 0 : 2);
    }
  }
  return options;
}

/// Sum and sum of absolute values of p_after - p_before over the parameters
/// of one kind: a fingerprint of the step's result that the PyTorch baseline
/// prints too (same data, same math), so a wrong baseline shows.
struct Fingerprint {
  double sum = 0, abs = 0;
};

Fingerprint fingerprint(const Model &model,
                        const std::vector<std::vector<float>> &before,
                        Kind kind) {
  Fingerprint f;
  for (size_t i = 0; i < model.defs.size(); ++i) {
    if (model.defs[i].kind != kind)
      continue;
    for (size_t k = 0; k < before[i].size(); ++k) {
      double delta = double(model.params[i][k]) - double(before[i][k]);
      f.sum += delta;
      f.abs += std::fabs(delta);
    }
  }
  return f;
}

bool allFinite(const Model &model) {
  for (const std::vector<float> &p : model.params)
    for (float x : p)
      if (!std::isfinite(x))
        return false;
  return true;
}

/// --quick: times the step of `part`'s parameters only, per depth.
int quickRun(const Options &options) {
  for (int depth : options.depths) {
    std::vector<ParamDef> defs;
    for (const ParamDef &d : nanochatParams(depth)) {
      bool named = options.only.empty();
      for (const std::string &part : options.only)
        named = named || d.name.find(part) != std::string::npos;
      if (named && (options.part == "all" ||
                    (options.part == "muon") == (d.kind == Kind::Muon)))
        defs.push_back(d);
    }
    int steps = options.steps > 0 ? options.steps
                                  : (depth <= 2 ? 21 : depth <= 4 ? 11 : 7);
    std::unique_ptr<Model> model = makeModel(defs);
    std::vector<std::vector<float>> before = model->params;
    model->optimizer->step();
    model->optimizer->step();
    Fingerprint fa = fingerprint(*model, before, Kind::AdamW);
    Fingerprint fm = fingerprint(*model, before, Kind::Muon);
    before.clear();
    settle();
    for (int i = 0; i < options.warmup; ++i)
      model->optimizer->step();
    CpuSample start = sampleCpu();
    std::vector<double> times = timeRuns(0, steps, [&] {
      model->optimizer->step();
    });
    CpuSample end = sampleCpu();
    double others = othersPercent(start, end);
    // This process's CPU time per step: with one thread (OMP_NUM_THREADS=1)
    // a measure of the work that other processes' load disturbs less than
    // the wall time.
    double cpuMs = 1e3 * (end.self - start.self) / steps;
    std::printf("QUICK depth=%d part=%s median_ms=%.2f min_ms=%.2f "
                "max_ms=%.2f cpu_ms_per_step=%.2f others_pct=%.0f "
                "adamw_abs=%.9e muon_abs=%.9e\n",
                depth, options.part.c_str(), 1e3 * median(times),
                1e3 * *std::min_element(times.begin(), times.end()),
                1e3 * *std::max_element(times.begin(), times.end()), cpuMs,
                others, fa.abs, fm.abs);
    std::fflush(stdout);
  }
  return 0;
}

struct Row {
  int depth;
  int64_t params, adamwParams, muonParams;
  double adamwMs, fullMs;
  double adamwGBs, adamwBoundGBs, adamwPct;
  double matmulGFlop, gflops, blasRate, blasPct;
  double muonMs, muonGflops;
  double othersPct; ///< CPU share other processes took while timing
};

} // namespace

int main(int argc, char **argv) {
  Options options = parseOptions(argc, argv);
  if (options.quick)
    return quickRun(options);
  int threads = threadCount();
#ifdef OPENBLAS_VERSION
  const char *blas = openblas_get_config();
#else
  const char *blas = "a CBLAS other than OpenBLAS";
#endif
  std::printf("optgen-bench: examples/nanochat.opt, compute=%s, "
              "%d OpenMP thread(s); BLAS: %s\n",
              OPTGEN_BENCH_COMPUTE, threads, blas);
  // The knobs that change the result, as this run saw them.
  for (const char *name : {"OMP_NUM_THREADS", "OMP_WAIT_POLICY",
                           "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE",
                           "OPENBLAS_L2_SIZE"}) {
    const char *value = std::getenv(name);
    std::printf("  %s=%s\n", name, value ? value : "(unset)");
  }
  std::printf("(the CPU runtime has no bf16 GEMM: compute=bf16 rounds to "
              "bf16 around f32 sgemm)\n\n");

  // The BLAS ceilings first, before any OpenMP region has run: OpenMP
  // workers keep spinning for a while after a parallel loop (libgomp's
  // default wait policy) and slow OpenBLAS's own threads down, which would
  // understate the ceiling. The reference for a depth is the better of two
  // ways to spread its products over the cores (see gemmRate).
  CpuSample ceilingStart = sampleCpu();
  double sgemm1024 =
      gemmRate({{1024, 1024, 1024, false, false}}, 10, GemmThreads::Blas);
  std::printf("cblas_sgemm 1024^3: %.1f GFLOP/s (best of 10)\n", sgemm1024);
  std::map<int, std::vector<Gemm>> depthGemms;
  for (int depth : options.depths)
    for (const ParamDef &d : nanochatParams(depth))
      if (d.kind == Kind::Muon) {
        std::vector<Gemm> g = polarGemms(d.shape[0], d.shape[1]);
        depthGemms[depth].insert(depthGemms[depth].end(), g.begin(), g.end());
      }
  // OpenBLAS-threaded first, then the OpenMP ones (see above).
  std::map<int, double> blasThreaded, blasPerThread, blasRates;
  for (int depth : options.depths)
    blasThreaded[depth] = gemmRate(depthGemms[depth], 7, GemmThreads::Blas);
  for (int depth : options.depths) {
    blasPerThread[depth] =
        gemmRate(depthGemms[depth], 7, GemmThreads::PerThread);
    blasRates[depth] = std::max(blasThreaded[depth], blasPerThread[depth]);
    std::printf("cblas_sgemm on depth %d's Polar Express products: %.1f "
                "GFLOP/s on OpenBLAS's threads, %.1f one product per "
                "thread (best of 7)\n",
                depth, blasThreaded[depth], blasPerThread[depth]);
  }

  Bandwidth bw = measureBandwidth(20);
  std::printf("memory bandwidth (best of 20, 128 MB arrays, %d threads):\n"
              "  copy %.1f  triad %.1f  in-place update %.1f  "
              "AdamW-like (4 reads, 3 writes) %.1f GB/s\n",
              threads, bw.copy, bw.triad, bw.update, bw.adamwLike);
  double bwBest = bw.best();
  std::printf("  best %.1f GB/s (for context: the %% of bandwidth below is "
              "against the AdamW-like kernel measured next to each step)\n",
              bwBest);
  double ceilingOthers = othersPercent(ceilingStart, sampleCpu());
  std::printf("other processes used %.0f%% of the CPUs while measuring "
              "these%s\n\n",
              ceilingOthers,
              ceilingOthers > 10 ? " (noisy: rerun on a quiet machine)" : "");

  std::vector<Row> rows;
  for (int depth : options.depths) {
    std::vector<ParamDef> defs = nanochatParams(depth);
    std::vector<ParamDef> adamwDefs;
    for (const ParamDef &d : defs)
      if (d.kind == Kind::AdamW)
        adamwDefs.push_back(d);

    Row row{};
    row.depth = depth;

    double matmulFlops = 0, elementwiseFlops = 0, cacheBytes = 0;
    for (const ParamDef &d : defs) {
      if (d.kind == Kind::Muon) {
        matmulFlops += polarFlops(d.shape[0], d.shape[1]);
        cacheBytes += polarCacheBytes(d.shape[0], d.shape[1]);
        elementwiseFlops += muonElementwiseFlops(d.shape[0], d.shape[1]);
        row.muonParams += d.numel();
      } else {
        elementwiseFlops += kAdamwFlopsPerElement * d.numel();
        row.adamwParams += d.numel();
      }
    }
    row.params = row.adamwParams + row.muonParams;
    row.blasRate = blasRates[depth];

    // Fewer timed steps where a step is long; at least 7 for a median.
    int steps = options.steps > 0 ? options.steps : (depth <= 2 ? 21 : depth <= 4 ? 11 : 7);

    // The full step.
    std::unique_ptr<Model> full = makeModel(defs);
    std::vector<std::vector<float>> before = full->params;
    full->optimizer->step(); // two checked steps: state is exercised
    full->optimizer->step();
    Fingerprint fa = fingerprint(*full, before, Kind::AdamW);
    Fingerprint fm = fingerprint(*full, before, Kind::Muon);
    before.clear();
    CpuSample start = sampleCpu();
    std::vector<double> fullTimes =
        timeRuns(options.warmup, steps, [&] { full->optimizer->step(); });
    if (!allFinite(*full)) {
      std::fprintf(stderr, "optgen-bench: non-finite parameters at depth %d\n",
                   depth);
      return 1;
    }
    full.reset(); // free its memory before the next instance

    // The AdamW part alone: a second optimizer with only those parameters.
    std::unique_ptr<Model> adamw = makeModel(adamwDefs);
    PairedAdamw paired = timeAdamwPaired(*adamw, row.adamwParams,
                                         options.warmup + 2, 3 * steps);
    const std::vector<double> &adamwTimes = paired.stepTimes;
    adamw.reset();
    row.othersPct = othersPercent(start, sampleCpu());

    row.fullMs = 1e3 * median(fullTimes);
    row.adamwMs = 1e3 * median(adamwTimes);
    row.adamwGBs = adamwBytes(defs) / (row.adamwMs * 1e-3) / 1e9;
    row.adamwBoundGBs = paired.boundGBs;
    row.adamwPct = 100.0 * paired.fraction;
    row.matmulGFlop = matmulFlops / 1e9;
    row.gflops = matmulFlops / (row.fullMs * 1e-3) / 1e9;
    row.blasPct = 100.0 * row.gflops / row.blasRate;
    row.muonMs = row.fullMs - row.adamwMs;
    row.muonGflops = matmulFlops / (row.muonMs * 1e-3) / 1e9;
    rows.push_back(row);

    std::printf("depth %d: %zu tensors (%zu AdamW), %lld params; %d timed "
                "steps (full), %d (AdamW)\n",
                depth, defs.size(), adamwDefs.size(),
                static_cast<long long>(row.params), steps, 3 * steps);
    std::printf("  full step ms: median %.2f, min %.2f, max %.2f\n",
                row.fullMs, 1e3 * *std::min_element(fullTimes.begin(), fullTimes.end()),
                1e3 * *std::max_element(fullTimes.begin(), fullTimes.end()));
    std::printf("  AdamW ms:     median %.2f, min %.2f, max %.2f\n",
                row.adamwMs,
                1e3 * *std::min_element(adamwTimes.begin(), adamwTimes.end()),
                1e3 * *std::max_element(adamwTimes.begin(), adamwTimes.end()));
    std::printf("  AdamW-like bound over the same bytes, paired with each "
                "step: median %.1f GB/s; step/bound median %.0f%%\n",
                row.adamwBoundGBs, row.adamwPct);
    std::printf("  other processes used %.0f%% of the CPUs meanwhile%s\n",
                row.othersPct,
                row.othersPct > 10 ? " (noisy: rerun on a quiet machine)"
                                   : "");
    std::printf("  work: AdamW %.1f MB moved; Muon %.1f MB compulsory (DRAM) "
                "+ ~%.0f MB through the caches in Polar Express; "
                "matmul %.3f GFLOP, elementwise %.3f GFLOP\n",
                adamwBytes(defs) / 1e6, muonBytes(defs) / 1e6,
                cacheBytes / 1e6, matmulFlops / 1e9, elementwiseFlops / 1e9);
    std::printf("  fingerprint after 2 steps: adamw sum %.9e abs %.9e; "
                "muon sum %.9e abs %.9e\n\n",
                fa.sum, fa.abs, fm.sum, fm.abs);
    std::printf("RESULT side=optgen-%s depth=%d params=%lld full_ms=%.3f "
                "adamw_ms=%.3f adamw_sum=%.9e adamw_abs=%.9e muon_sum=%.9e "
                "muon_abs=%.9e others_pct=%.0f adamw_bound_pct=%.0f "
                "blas_pct=%.0f muon_gflops=%.1f blas_gflops=%.1f "
                "muon_blas_pct=%.0f\n\n",
                OPTGEN_BENCH_COMPUTE, depth,
                static_cast<long long>(row.params), row.fullMs, row.adamwMs,
                fa.sum, fa.abs, fm.sum, fm.abs, row.othersPct, row.adamwPct,
                row.blasPct, row.muonGflops, row.blasRate,
                100.0 * row.muonGflops / row.blasRate);
    std::fflush(stdout);
  }

  std::printf("memory bandwidth (128 MB arrays) best %.1f GB/s; sgemm "
              "1024^3 %.1f GFLOP/s; %d threads\n",
              bwBest, sgemm1024, threads);
  std::printf("| depth | params | AdamW ms | AdamW GB/s | bound GB/s | %% of "
              "bound | full step ms | matmul GFLOP | GFLOP/s | BLAS GFLOP/s "
              "(shapes) | %% of BLAS | Muon ms (full-AdamW) | Muon GFLOP/s | "
              "others' CPU |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Row &r : rows)
    std::printf("| %d | %lld | %.2f | %.1f | %.1f | %.0f%% | %.1f | %.2f | "
                "%.1f | %.1f | %.0f%% | %.1f | %.1f | %.0f%% |\n",
                r.depth, static_cast<long long>(r.params), r.adamwMs,
                r.adamwGBs, r.adamwBoundGBs, r.adamwPct, r.fullMs,
                r.matmulGFlop, r.gflops, r.blasRate, r.blasPct, r.muonMs,
                r.muonGflops, r.othersPct);
  return 0;
}
