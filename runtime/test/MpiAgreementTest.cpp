//===- MpiAgreementTest.cpp - Ranks that fail together, on 1..N ranks -----===//
//
// Run under mpirun (docs/RELIABILITY.md): ranks whose parameters differ (one
// more, a transposed shape, another order) or whose finalize() fails on one
// rank get the same AgreedError on every rank, naming the rank and the
// first difference, and so do ranks of other math or another non-finite
// policy (at finalize()), and of other hyperparameters or memory that
// overlaps (at a step, before it changes anything); a non-finite gradient on one rank skips the step on
// every rank (NonFinitePolicy::Skip); a checkpoint saved into a
// missing folder, or loaded from a file one rank lacks, fails on every rank
// and leaves the state as it was; a checkpoint saved on N ranks loads back.
// Prints "N passed, M failed" on rank 0.
//
// `optgen-mpi-agreement abort-in-step`: the last rank's rule throws in the
// second step, while the others wait in its collectives: every rank must
// end within seconds, rank N-1 saying why (its test matches the message).
//
//===----------------------------------------------------------------------===//

#include "MpiTestReport.h"

#include "optgen/runtime/Agreement.h"
#include "optgen/runtime/MpiCommunicator.h"
#include "optgen/runtime/Optimizer.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using namespace optgen::runtime;
using optgen::runtime::test::expect;
using optgen::runtime::test::report;

namespace {

int failingRank = -1; ///< abort-in-step: the rank whose rule throws

void stepSgd(const RuleCall &call) {
  if (call.step == 2 && failingRank >= 0) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == failingRank)
      throw Error("a rule that fails on one rank");
  }
  float lr = static_cast<float>(call.hypers[0]);
  for (int64_t i = 0; i < call.rows * call.cols; ++i) {
    call.states[0][i] = 0.5f * call.states[0][i] + call.grad[i];
    call.param[i] -= lr * call.states[0][i];
  }
}

void statesLikeParam(const int64_t *shape, int rank, int64_t *rows,
                     int64_t *cols) {
  int64_t numel = 1;
  for (int d = 0; d < rank; ++d)
    numel *= shape[d];
  rows[0] = 1;
  cols[0] = numel;
}

OptimizerSpec spec() {
  OptimizerSpec spec;
  spec.name = "agree";
  spec.rules.push_back({"sgd",
                        -1,
                        {{"lr", 1, 0, false, true, {0.25}}},
                        {"m"},
                        statesLikeParam,
                        stepSgd,
                        true});
  spec.groups.push_back({"weights", 0, {"w*"}, nullptr, {}});
  spec.groups.push_back({"rest", 0, {"b*", "extra"}, nullptr, {}});
  spec.distribution = Distribution::Zero2;
  spec.smallNumel = 4;
  return spec;
}

struct Param {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::F32;
  std::vector<float> value, grad;
};

std::vector<Param> model() {
  std::vector<Param> params;
  for (auto [name, shape] :
       std::vector<std::pair<std::string, std::vector<int64_t>>>{
           {"w0", {8, 4}}, {"w1", {6, 5}}, {"bias", {7}}}) {
    Param p{name, shape, DType::F32, {}, {}};
    int64_t numel = 1;
    for (int64_t d : shape)
      numel *= d;
    for (int64_t i = 0; i < numel; ++i) {
      p.value.push_back(static_cast<float>(i % 9) / 8.0f);
      p.grad.push_back(static_cast<float>(i % 5) / 16.0f - 0.125f);
    }
    params.push_back(std::move(p));
  }
  return params;
}

void addAll(OptimizerFront &opt, std::vector<Param> &params) {
  for (Param &p : params)
    opt.addParameter(p.name, {p.value.data(), p.dtype, p.shape},
                     {p.grad.data(), p.dtype, p.shape});
}

/// What `f` throws: "agreed: MESSAGE", "error: MESSAGE" or "".
template <typename F> std::string thrown(F &&f) {
  try {
    f();
  } catch (const AgreedError &error) {
    return std::string("agreed: ") + error.what();
  } catch (const std::exception &error) {
    return std::string("error: ") + error.what();
  }
  return "";
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

} // namespace

int main(int argc, char **argv) {
  std::unique_ptr<Communicator> comm = makeMpiCommunicator();
  int rank = comm->rank(), size = comm->size(), last = size - 1;
  std::string lastRank = "rank " + std::to_string(last);

  if (argc > 1 && std::string(argv[1]) == "abort-in-step") {
    failingRank = last;
    std::vector<Param> params = model();
    Optimizer opt(spec());
    opt.setCommunicator(makeMpiCommunicator());
    addAll(opt, params);
    opt.finalize();
    for (int s = 0; s < 3; ++s)
      opt.step();
    std::printf("rank %d: the steps returned, which they must not\n", rank);
    return 1;
  }

  // What the ranks hold: `change` edits the last rank's parameters.
  auto finalizeWith = [&](auto change) {
    std::vector<Param> params = model();
    if (rank == last && size > 1)
      change(params);
    Optimizer opt(spec());
    opt.setCommunicator(makeMpiCommunicator());
    addAll(opt, params);
    return thrown([&] { opt.finalize(); });
  };
  expect(finalizeWith([](std::vector<Param> &) {}).empty(),
         "equal ranks finalize", rank);
  if (size > 1) {
    std::string got = finalizeWith([](std::vector<Param> &params) {
      Param extra = params.back();
      extra.name = "extra";
      params.push_back(extra);
    });
    expect(got == "agreed: " + lastRank +
                      " has parameter 'extra', which rank 0 does not have",
           "one more parameter: " + got, rank);
    got = finalizeWith(
        [](std::vector<Param> &params) { params[0].shape = {4, 8}; });
    expect(got == "agreed: " + lastRank +
                      ": parameter 'w0' has shape [4, 8], rank 0 has [8, 4]",
           "a transposed parameter: " + got, rank);
    got = finalizeWith([](std::vector<Param> &params) {
      std::swap(params[0], params[1]);
    });
    expect(got == "agreed: " + lastRank +
                      " registers the parameters in another order than rank "
                      "0: its parameter 0 is 'w1', rank 0's is 'w0'",
           "another order: " + got, rank);
    got = finalizeWith([](std::vector<Param> &params) {
      params[2].name = "unmatched";
    });
    expect(got == "agreed: " + lastRank +
                      ": parameter 'unmatched' matches no group of optimizer "
                      "'agree'" ||
               got.rfind("agreed: " + lastRank + ": ", 0) == 0,
           "finalize() fails on one rank: " + got, rank);
  }

  if (size > 1) {
    // More than the parameters: the math (the same optimizer from another
    // spec, or other -D values) and the non-finite policy, at finalize().
    auto finalizeAs = [&](const char *math, bool skip) {
      std::vector<Param> params = model();
      OptimizerSpec differs = spec();
      if (rank == last)
        differs.math = math;
      Optimizer opt(differs);
      opt.setCommunicator(makeMpiCommunicator());
      if (rank == last && skip)
        opt.setNonFinitePolicy(NonFinitePolicy::Skip);
      addAll(opt, params);
      return thrown([&] { opt.finalize(); });
    };
    std::string got = finalizeAs("00000000000000bf", false);
    expect(got == "agreed: " + lastRank +
                      "'s optimizer 'agree' computes other math than rank "
                      "0's: it was generated from another spec, or with "
                      "other -D values (math fingerprints '00000000000000bf' "
                      "and '')",
           "other math: " + got, rank);
    got = finalizeAs("", true);
    expect(got == "agreed: " + lastRank +
                      " skips steps with non-finite gradients, rank 0 does "
                      "not: the ranks set the same policy "
                      "(setNonFinitePolicy, skip_nonfinite, "
                      "--skip-nonfinite), or one skips a step the others "
                      "take",
           "another non-finite policy: " + got, rank);

    // Every step: the hyperparameters (a learning rate set on one rank
    // alone), and memory that overlaps on one rank, are refused on every
    // rank before anything changes; set alike again, the ranks step on.
    std::vector<Param> params = model();
    Optimizer opt(spec());
    opt.setCommunicator(makeMpiCommunicator());
    addAll(opt, params);
    opt.finalize();
    opt.step();
    std::vector<Param> afterOne = params;
    if (rank == last)
      opt.setHyper("weights", "lr", 0.5);
    got = thrown([&] { opt.step(); });
    expect(got == "agreed: " + lastRank +
                      " steps with hyperparameter 'lr' of group 'weights' = "
                      "0.5, rank 0 with 0.25: every rank steps with the same "
                      "hyperparameters (set them alike on every rank), or "
                      "the ranks' parameters drift apart",
           "another lr on one rank: " + got, rank);
    bool unchanged = opt.stepCount("w0") == 1;
    for (size_t p = 0; p < params.size(); ++p)
      unchanged &= params[p].value == afterOne[p].value;
    expect(unchanged, "a refused step changes nothing", rank);
    if (rank == last) {
      opt.setHyper("weights", "lr", 0.25);
      opt.rebind("bias", {params[0].value.data(), DType::F32, {7}},
                 {params[2].grad.data(), DType::F32, {7}});
    }
    got = thrown([&] { opt.step(); });
    expect(got.rfind("agreed: " + lastRank + ": ", 0) == 0 &&
               got.find("share memory") != std::string::npos,
           "memory that overlaps on one rank: " + got, rank);
    if (rank == last)
      opt.rebind("bias", {params[2].value.data(), DType::F32, {7}},
                 {params[2].grad.data(), DType::F32, {7}});
    got = thrown([&] { opt.step(); });
    expect(got.empty() && opt.stepCount("w0") == 2,
           "the ranks alike again step on: " + got, rank);
  }

  // NonFinitePolicy::Skip: a NaN or an infinity in the last rank's
  // gradient alone skips the step on every rank; the others end as one
  // optimizer alone that never took that step.
  for (std::string bad : {"w0", "bias"}) {
    std::vector<Param> shared = model(), alone = model();
    Optimizer distributed(spec()), reference(spec());
    distributed.setCommunicator(makeMpiCommunicator());
    distributed.setNonFinitePolicy(NonFinitePolicy::Skip);
    addAll(distributed, shared);
    addAll(reference, alone);
    distributed.finalize();
    reference.finalize();
    for (int s = 1; s <= 3; ++s) {
      std::vector<Param> clean = model();
      for (size_t p = 0; p < shared.size(); ++p)
        shared[p].grad = clean[p].grad;
      if (s == 2 && rank == last)
        for (Param &p : shared)
          if (p.name == bad)
            p.grad[p.grad.size() / 2] = bad == "w0" ? NAN : -INFINITY;
      distributed.step();
      if (s != 2)
        reference.step();
    }
    expect(distributed.skippedSteps() == 1,
           "a non-finite '" + bad + "' on the last rank skips one step",
           rank);
    expect(distributed.stepCount("w1") == 2, "skipped steps do not count",
           rank);
    for (size_t p = 0; p < shared.size(); ++p)
      expect(shared[p].value == alone[p].value,
             "'" + shared[p].name + "' as without the skipped step (bad '" +
                 bad + "')",
             rank);
  }

  // Checkpoints: saved into a missing folder, loaded from a file one rank
  // lacks: every rank fails, nothing changes.
  std::string dir = "optgen-mpi-agreement-" + std::to_string(size);
  if (rank == 0)
    std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str());
  MPI_Barrier(MPI_COMM_WORLD);
  std::vector<Param> params = model();
  Optimizer opt(spec());
  opt.setCommunicator(makeMpiCommunicator());
  addAll(opt, params);
  opt.finalize();
  opt.step();
  std::vector<Param> afterOne = params;
  std::string got = thrown([&] { opt.saveState(dir + "/no/state"); });
  expect(got == "agreed: " + std::string(size > 1 ? "rank 0: " : "") + "'" +
                    dir + "/no/state': cannot write: the folder '" + dir +
                    "/no' does not exist",
         "saving into a missing folder: " + got, rank);
  opt.saveState(dir + "/one");
  std::string saved = readFile(dir + "/one");
  got = thrown([&] {
    opt.loadState(rank == last ? dir + "/absent" : dir + "/one");
  });
  expect(got.rfind("agreed: " + std::string(size > 1 ? lastRank + ": " : "") +
                       "'" + dir + "/absent': cannot open",
                   0) == 0,
         "loading a file one rank lacks: " + got, rank);
  opt.step();
  opt.saveState(dir + "/two");
  // The refused load changed nothing: the same as stepping on without it.
  std::vector<Param> again = afterOne;
  Optimizer reference(spec());
  reference.setCommunicator(makeMpiCommunicator());
  addAll(reference, again);
  reference.finalize();
  reference.loadState(dir + "/one");
  reference.step();
  reference.saveState(dir + "/three");
  expect(readFile(dir + "/two") == readFile(dir + "/three"),
         "a refused load changes nothing", rank);
  for (size_t p = 0; p < params.size(); ++p)
    expect(params[p].value == again[p].value,
           "'" + params[p].name + "' after load and step", rank);
  return report(rank);
}
