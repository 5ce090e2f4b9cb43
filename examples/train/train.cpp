//===- train.cpp - A character model trained by a generated optimizer -----===//
//
// Trains a character-level language model on data.txt with the optimizer
// optgen generates from examples/nanochat.opt: AdamW for the embedding, the
// head and the scalar lambdas, Muon for the block matrices. The model and its
// backward pass are written out by hand so that the example needs nothing but
// the standard library and the BLAS the optgen runtime links already.
//
// The model sees the kContext characters before the one it predicts:
//
//   ctx  = the kContext embeddings, each RMS-normalised      [B, kContext*d]
//   x0   = x = the last character's normalised embedding     [B, d]
//   per block i:
//     x  = resid_lambdas[i] * x + x0_lambdas[i] * x0
//     x += ctx @ mix_i^T          (attention-free: fixed weights per position)
//     x += relu(norm(x) @ c_fc_i^T)^2 @ c_proj_i^T
//   logits = norm(x) @ lm_head^T                              [B, vocab]
//
// Parameter names follow nanochat's, so that the spec's groups bind them.
//
//===----------------------------------------------------------------------===//

#include "nanochat_muon_adamw.h"

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using optgen::runtime::DType;
using optgen::runtime::TensorView;

constexpr int kContext = 8;   // characters seen before the predicted one
constexpr int kModelDim = 64; // width of the residual stream
constexpr int kHiddenDim = 4 * kModelDim;
constexpr int kLayers = 2;
constexpr int kBatch = 256; // windows per step
constexpr float kNormEps = 1e-6f;

//===----------------------------------------------------------------------===//
// Dense helpers
//===----------------------------------------------------------------------===//

/// C[M, N] = op(A) @ op(B) + beta * C, row-major; op(A) is [M, K], op(B) is
/// [K, N], and a flag transposes the stored matrix.
void gemm(bool transA, bool transB, int M, int N, int K, const float *A,
          const float *B, float beta, float *C) {
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, M, N, K, 1.0f, A,
              transA ? M : K, B, transB ? K : N, beta, C, N);
}

/// y = x / rms(x) for one row of `dim`; returns the rms, which the backward
/// pass needs.
float rmsNorm(const float *x, float *y, int dim) {
  double sumSquares = 0;
  for (int k = 0; k < dim; ++k)
    sumSquares += double(x[k]) * x[k];
  float rms = std::sqrt(float(sumSquares / dim) + kNormEps);
  for (int k = 0; k < dim; ++k)
    y[k] = x[k] / rms;
  return rms;
}

/// dx += the gradient through y = rmsNorm(x), from dy, y and the rms:
/// dx = (dy - y * mean(dy * y)) / rms.
void rmsNormBackward(const float *dy, const float *y, float rms, float *dx,
                     int dim) {
  double dot = 0;
  for (int k = 0; k < dim; ++k)
    dot += double(dy[k]) * y[k];
  float mean = float(dot / dim);
  for (int k = 0; k < dim; ++k)
    dx[k] += (dy[k] - y[k] * mean) / rms;
}

//===----------------------------------------------------------------------===//
// The model
//===----------------------------------------------------------------------===//

/// A parameter and its gradient, both owned here; the optimizer sees them
/// through TensorViews, so neither buffer may move once registered.
struct Weight {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> value, grad;

  Weight(std::string weightName, std::vector<int64_t> weightShape)
      : name(std::move(weightName)), shape(std::move(weightShape)) {
    int64_t numel = 1;
    for (int64_t d : shape)
      numel *= d;
    value.assign(size_t(numel), 0.0f);
    grad.assign(size_t(numel), 0.0f);
  }
  TensorView valueView() { return {value.data(), DType::F32, shape}; }
  TensorView gradView() { return {grad.data(), DType::F32, shape}; }
};

struct Block {
  Weight mix, fc, proj;
};

struct Model {
  int vocab;
  Weight wte, lmHead, residLambdas, x0Lambdas;
  std::vector<Block> blocks;

  explicit Model(int vocabSize)
      : vocab(vocabSize), wte("transformer.wte.weight", {vocabSize, kModelDim}),
        lmHead("lm_head.weight", {vocabSize, kModelDim}),
        residLambdas("resid_lambdas", {kLayers}),
        x0Lambdas("x0_lambdas", {kLayers}) {
    for (int i = 0; i < kLayers; ++i) {
      std::string prefix = "transformer.h." + std::to_string(i) + ".";
      blocks.push_back(
          {Weight(prefix + "mix.weight", {kModelDim, kContext * kModelDim}),
           Weight(prefix + "mlp.c_fc.weight", {kHiddenDim, kModelDim}),
           Weight(prefix + "mlp.c_proj.weight", {kModelDim, kHiddenDim})});
    }
  }

  std::vector<Weight *> weights() {
    std::vector<Weight *> all = {&wte, &lmHead, &residLambdas, &x0Lambdas};
    for (Block &block : blocks)
      for (Weight *w : {&block.mix, &block.fc, &block.proj})
        all.push_back(w);
    return all;
  }

  /// nanochat's initialisation: unit embeddings, a near-zero head, input
  /// projections uniform with unit output variance, output projections zero
  /// (so every block starts as the identity).
  void initialize(std::mt19937 &rng) {
    std::normal_distribution<float> unit(0.0f, 1.0f);
    for (float &v : wte.value)
      v = unit(rng);
    for (float &v : lmHead.value)
      v = 0.001f * unit(rng);
    std::fill(residLambdas.value.begin(), residLambdas.value.end(), 1.0f);
    std::fill(x0Lambdas.value.begin(), x0Lambdas.value.end(), 0.1f);
    auto uniform = [&](Weight &w) {
      float bound = std::sqrt(3.0f / float(w.shape[1]));
      std::uniform_real_distribution<float> dist(-bound, bound);
      for (float &v : w.value)
        v = dist(rng);
    };
    for (Block &block : blocks) {
      uniform(block.mix);
      uniform(block.fc);
      std::fill(block.proj.value.begin(), block.proj.value.end(), 0.0f);
    }
  }
};

/// Activations kept from the forward pass for the backward pass, sized for
/// the largest batch seen.
struct Workspace {
  std::vector<float> ctx, ctxRms, x0, x, finalNorm, finalRms, logits;
  struct Layer {
    std::vector<float> in, norm, rms, pre, act;
  };
  std::vector<Layer> layers{kLayers};
  // Backward only.
  std::vector<float> dx, dx0, dnorm, dact, dctx, dembedding;

  void resize(int B, int vocab) {
    const size_t b = size_t(B), d = kModelDim, h = kHiddenDim;
    ctx.resize(b * kContext * d);
    ctxRms.resize(b * kContext);
    x0.resize(b * d);
    x.resize(b * d);
    finalNorm.resize(b * d);
    finalRms.resize(b);
    logits.resize(b * size_t(vocab));
    for (Layer &layer : layers) {
      layer.in.resize(b * d);
      layer.norm.resize(b * d);
      layer.rms.resize(b);
      layer.pre.resize(b * h);
      layer.act.resize(b * h);
    }
    dx.resize(b * d);
    dx0.resize(b * d);
    dnorm.resize(b * d);
    dact.resize(b * h);
    dctx.resize(b * kContext * d);
    dembedding.resize(d);
  }
};

/// The mean cross-entropy of predicting each window's last token from the
/// kContext before it; `windows` holds B windows of kContext + 1 tokens.
/// With `backward`, also writes every parameter's gradient.
double forward(Model &model, Workspace &ws, const std::vector<int> &windows,
               bool backward) {
  const int B = int(windows.size() / (kContext + 1));
  const int d = kModelDim, H = kHiddenDim, V = model.vocab;
  const int ctxDim = kContext * d;
  ws.resize(B, V);
  auto token = [&](int b, int j) {
    return windows[size_t(b) * (kContext + 1) + size_t(j)];
  };

  for (int b = 0; b < B; ++b)
    for (int j = 0; j < kContext; ++j)
      ws.ctxRms[size_t(b) * kContext + size_t(j)] =
          rmsNorm(&model.wte.value[size_t(token(b, j)) * d],
                  &ws.ctx[size_t(b) * ctxDim + size_t(j) * d], d);
  for (int b = 0; b < B; ++b)
    std::copy_n(&ws.ctx[size_t(b) * ctxDim + size_t(kContext - 1) * d], d,
                &ws.x0[size_t(b) * d]);
  ws.x = ws.x0;

  for (int i = 0; i < kLayers; ++i) {
    Block &block = model.blocks[size_t(i)];
    Workspace::Layer &layer = ws.layers[size_t(i)];
    const float resid = model.residLambdas.value[size_t(i)];
    const float skip = model.x0Lambdas.value[size_t(i)];
    layer.in = ws.x;
    for (size_t k = 0; k < size_t(B) * d; ++k)
      ws.x[k] = resid * layer.in[k] + skip * ws.x0[k];
    gemm(false, true, B, d, ctxDim, ws.ctx.data(), block.mix.value.data(), 1.0f,
         ws.x.data());
    for (int b = 0; b < B; ++b)
      layer.rms[size_t(b)] =
          rmsNorm(&ws.x[size_t(b) * d], &layer.norm[size_t(b) * d], d);
    gemm(false, true, B, H, d, layer.norm.data(), block.fc.value.data(), 0.0f,
         layer.pre.data());
    for (size_t k = 0; k < size_t(B) * H; ++k) {
      float r = std::max(layer.pre[k], 0.0f);
      layer.act[k] = r * r;
    }
    gemm(false, true, B, d, H, layer.act.data(), block.proj.value.data(), 1.0f,
         ws.x.data());
  }

  for (int b = 0; b < B; ++b)
    ws.finalRms[size_t(b)] =
        rmsNorm(&ws.x[size_t(b) * d], &ws.finalNorm[size_t(b) * d], d);
  gemm(false, true, B, V, d, ws.finalNorm.data(), model.lmHead.value.data(),
       0.0f, ws.logits.data());

  // Cross-entropy; with `backward` the logits become their gradient,
  // (softmax - onehot) / B.
  double loss = 0;
  for (int b = 0; b < B; ++b) {
    float *row = &ws.logits[size_t(b) * V];
    const int target = token(b, kContext);
    const float max = *std::max_element(row, row + V);
    double sum = 0;
    for (int v = 0; v < V; ++v)
      sum += std::exp(double(row[v] - max));
    loss += std::log(sum) + max - row[target];
    if (backward) {
      for (int v = 0; v < V; ++v)
        row[v] = float(std::exp(double(row[v] - max)) / sum) / float(B);
      row[target] -= 1.0f / float(B);
    }
  }
  loss /= B;
  if (!backward)
    return loss;

  const float *dlogits = ws.logits.data();
  gemm(true, false, V, d, B, dlogits, ws.finalNorm.data(), 0.0f,
       model.lmHead.grad.data());
  gemm(false, false, B, d, V, dlogits, model.lmHead.value.data(), 0.0f,
       ws.dnorm.data());
  std::fill(ws.dx.begin(), ws.dx.end(), 0.0f);
  for (int b = 0; b < B; ++b)
    rmsNormBackward(&ws.dnorm[size_t(b) * d], &ws.finalNorm[size_t(b) * d],
                    ws.finalRms[size_t(b)], &ws.dx[size_t(b) * d], d);

  std::fill(ws.dx0.begin(), ws.dx0.end(), 0.0f);
  std::fill(ws.dctx.begin(), ws.dctx.end(), 0.0f);
  for (int i = kLayers - 1; i >= 0; --i) {
    Block &block = model.blocks[size_t(i)];
    Workspace::Layer &layer = ws.layers[size_t(i)];
    // ws.dx is the gradient of the block's output: through the MLP ...
    gemm(true, false, d, H, B, ws.dx.data(), layer.act.data(), 0.0f,
         block.proj.grad.data());
    gemm(false, false, B, H, d, ws.dx.data(), block.proj.value.data(), 0.0f,
         ws.dact.data());
    for (size_t k = 0; k < size_t(B) * H; ++k)
      ws.dact[k] *= 2.0f * std::max(layer.pre[k], 0.0f);
    gemm(true, false, H, d, B, ws.dact.data(), layer.norm.data(), 0.0f,
         block.fc.grad.data());
    gemm(false, false, B, d, H, ws.dact.data(), block.fc.value.data(), 0.0f,
         ws.dnorm.data());
    for (int b = 0; b < B; ++b)
      rmsNormBackward(&ws.dnorm[size_t(b) * d], &layer.norm[size_t(b) * d],
                      layer.rms[size_t(b)], &ws.dx[size_t(b) * d], d);
    // ... then through the context mix and the lambdas.
    gemm(true, false, d, ctxDim, B, ws.dx.data(), ws.ctx.data(), 0.0f,
         block.mix.grad.data());
    gemm(false, false, B, ctxDim, d, ws.dx.data(), block.mix.value.data(), 1.0f,
         ws.dctx.data());
    const float resid = model.residLambdas.value[size_t(i)];
    const float skip = model.x0Lambdas.value[size_t(i)];
    double dresid = 0, dskip = 0;
    for (size_t k = 0; k < size_t(B) * d; ++k) {
      dresid += double(ws.dx[k]) * layer.in[k];
      dskip += double(ws.dx[k]) * ws.x0[k];
      ws.dx0[k] += skip * ws.dx[k];
      ws.dx[k] *= resid;
    }
    model.residLambdas.grad[size_t(i)] = float(dresid);
    model.x0Lambdas.grad[size_t(i)] = float(dskip);
  }

  // The stream started as x0, which is the last context slot.
  for (int b = 0; b < B; ++b)
    for (int k = 0; k < d; ++k)
      ws.dctx[size_t(b) * ctxDim + size_t(kContext - 1) * d + size_t(k)] +=
          ws.dx0[size_t(b) * d + size_t(k)] + ws.dx[size_t(b) * d + size_t(k)];
  std::fill(model.wte.grad.begin(), model.wte.grad.end(), 0.0f);
  for (int b = 0; b < B; ++b)
    for (int j = 0; j < kContext; ++j) {
      size_t slot = size_t(b) * ctxDim + size_t(j) * d;
      std::fill(ws.dembedding.begin(), ws.dembedding.end(), 0.0f);
      rmsNormBackward(&ws.dctx[slot], &ws.ctx[slot],
                      ws.ctxRms[size_t(b) * kContext + size_t(j)],
                      ws.dembedding.data(), d);
      float *row = &model.wte.grad[size_t(token(b, j)) * d];
      for (int k = 0; k < d; ++k)
        row[k] += ws.dembedding[size_t(k)];
    }
  return loss;
}

//===----------------------------------------------------------------------===//
// Data
//===----------------------------------------------------------------------===//

struct Corpus {
  std::vector<int> tokens;      // the text as vocabulary ids
  std::vector<char> characters; // id -> character
  size_t trainEnd = 0;          // tokens[0, trainEnd) train, the rest validate
};

Corpus loadCorpus(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    throw std::runtime_error("cannot read " + path);
  std::stringstream buffer;
  buffer << file.rdbuf();
  const std::string text = buffer.str();
  if (text.size() < 20 * (kContext + 1))
    throw std::runtime_error(path + " is too short to train on");

  Corpus corpus;
  std::array<int, 256> id;
  id.fill(-1);
  for (unsigned char c : text)
    id[c] = 0;
  for (int c = 0; c < 256; ++c)
    if (id[size_t(c)] == 0) {
      id[size_t(c)] = int(corpus.characters.size());
      corpus.characters.push_back(char(c));
    }
  for (unsigned char c : text)
    corpus.tokens.push_back(id[c]);
  corpus.trainEnd = corpus.tokens.size() * 9 / 10;
  return corpus;
}

/// The window of kContext + 1 tokens starting at `start`, appended to `out`.
void appendWindow(const Corpus &corpus, size_t start, std::vector<int> &out) {
  out.insert(out.end(), corpus.tokens.begin() + long(start),
             corpus.tokens.begin() + long(start + kContext + 1));
}

/// The mean loss over every window that ends in [begin, end).
double evaluate(Model &model, Workspace &ws, const Corpus &corpus, size_t begin,
                size_t end) {
  double total = 0;
  size_t count = 0;
  std::vector<int> windows;
  for (size_t start = begin; start + kContext < end;) {
    windows.clear();
    size_t batch = 0;
    for (; batch < kBatch && start + kContext < end; ++batch, ++start)
      appendWindow(corpus, start, windows);
    total += forward(model, ws, windows, false) * double(batch);
    count += batch;
  }
  return total / double(count);
}

/// `length` characters sampled after `prompt`, at temperature 0.8.
std::string sample(Model &model, Workspace &ws, const Corpus &corpus,
                   const std::string &prompt, int length, std::mt19937 &rng) {
  // Pad a short prompt with spaces, as if it followed a word.
  auto space =
      std::find(corpus.characters.begin(), corpus.characters.end(), ' ');
  std::vector<int> context(kContext,
                           space == corpus.characters.end()
                               ? corpus.tokens[0]
                               : int(space - corpus.characters.begin()));
  for (char c : prompt) {
    auto found =
        std::find(corpus.characters.begin(), corpus.characters.end(), c);
    if (found != corpus.characters.end()) {
      context.erase(context.begin());
      context.push_back(int(found - corpus.characters.begin()));
    }
  }
  std::string out = prompt;
  for (int n = 0; n < length; ++n) {
    std::vector<int> window = context;
    window.push_back(0); // the target is not used without backward
    forward(model, ws, window, false);
    std::vector<double> weights(size_t(model.vocab));
    const float max =
        *std::max_element(ws.logits.begin(), ws.logits.begin() + model.vocab);
    for (int v = 0; v < model.vocab; ++v)
      weights[size_t(v)] = std::exp((ws.logits[size_t(v)] - max) / 0.8);
    std::discrete_distribution<int> pick(weights.begin(), weights.end());
    int next = pick(rng);
    out += corpus.characters[size_t(next)];
    context.erase(context.begin());
    context.push_back(next);
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Checks and progress
//===----------------------------------------------------------------------===//

/// Compares the analytic gradient of a few entries of every parameter with
/// central differences of the loss; returns whether all agree.
bool checkGradients(Model &model, const Corpus &corpus, std::mt19937 &rng) {
  Workspace ws;
  std::vector<int> windows;
  std::uniform_int_distribution<size_t> startDist(0, corpus.trainEnd -
                                                         kContext - 2);
  for (int b = 0; b < 16; ++b)
    appendWindow(corpus, startDist(rng), windows);
  // Nonzero output projections, or their inputs' gradients are all zero.
  for (Block &block : model.blocks)
    for (float &v : block.proj.value)
      v = 0.05f * std::normal_distribution<float>(0, 1)(rng);
  forward(model, ws, windows, true);

  bool ok = true;
  for (Weight *w : model.weights()) {
    const std::vector<float> analytic = w->grad;
    // The largest entries: their relative error is not lost in rounding.
    std::vector<size_t> order(analytic.size());
    for (size_t k = 0; k < order.size(); ++k)
      order[k] = k;
    size_t count = std::min<size_t>(4, order.size());
    std::partial_sort(order.begin(), order.begin() + long(count), order.end(),
                      [&](size_t a, size_t b) {
                        return std::abs(analytic[a]) > std::abs(analytic[b]);
                      });
    double worst = 0;
    for (size_t n = 0; n < count; ++n) {
      size_t k = order[n];
      const float saved = w->value[k];
      const float h = 1e-2f * std::max(1.0f, std::abs(saved));
      w->value[k] = saved + h;
      double up = forward(model, ws, windows, false);
      w->value[k] = saved - h;
      double down = forward(model, ws, windows, false);
      w->value[k] = saved;
      double numeric = (up - down) / (2.0 * double(h));
      double error = std::abs(numeric - analytic[k]) /
                     std::max(1e-3, std::abs(numeric) + std::abs(analytic[k]));
      worst = std::max(worst, error);
    }
    bool good = worst < 2e-2;
    ok = ok && good;
    std::printf("  %-34s relative error %.1e %s\n", w->name.c_str(), worst,
                good ? "ok" : "WRONG");
  }
  return ok;
}

/// A bar updated in place on a terminal; a plain line every tenth of the run
/// otherwise (logs, ctest).
class Progress {
public:
  explicit Progress(int total)
      : total_(total), interactive_(isatty(STDOUT_FILENO) != 0),
        every_(std::max(1, total / 10)) {}

  void update(int step, double loss) {
    if (interactive_) {
      constexpr int kWidth = 30;
      int filled = int(double(kWidth) * step / total_);
      std::printf("\r[%s%s] step %d/%d  loss %.3f",
                  std::string(size_t(filled), '#').c_str(),
                  std::string(size_t(kWidth - filled), '.').c_str(), step,
                  total_, loss);
      if (step == total_)
        std::printf("\n");
      std::fflush(stdout);
    } else if (step % every_ == 0 || step == total_) {
      std::printf("step %d/%d  loss %.3f\n", step, total_, loss);
    }
  }

private:
  int total_;
  bool interactive_;
  int every_;
};

struct Options {
  int steps = 300;
  unsigned seed = 42;
  std::string data = OPTGEN_TRAIN_DATA;
  bool checkGradients = false;
};

const char *kUsage =
    "usage: optgen-train [--steps N] [--seed N] [--data FILE] "
    "[--check-gradients]\n"
    "Trains a tiny character model on FILE (default: examples/train/data.txt)\n"
    "with the optimizer optgen generates from examples/nanochat.opt; exits 1\n"
    "when the loss does not fall below 0.8 of its initial value.\n";

Options parseOptions(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        throw std::runtime_error(arg + " needs a value\n" + kUsage);
      return argv[++i];
    };
    if (arg == "--steps") {
      options.steps = std::atoi(value().c_str());
      if (options.steps < 10)
        throw std::runtime_error("--steps takes at least 10");
    } else if (arg == "--seed") {
      options.seed = unsigned(std::strtoul(value().c_str(), nullptr, 10));
    } else if (arg == "--data") {
      options.data = value();
    } else if (arg == "--check-gradients") {
      options.checkGradients = true;
    } else if (arg == "--help" || arg == "-h") {
      std::printf("%s", kUsage);
      std::exit(0);
    } else {
      throw std::runtime_error("unknown argument '" + arg + "'\n" + kUsage);
    }
  }
  return options;
}

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

/// nanochat's schedule: a multiplier on every learning rate, constant, then
/// falling linearly to a tenth over the last 40% of the run; a short warmup
/// keeps Adam's first, noisiest steps small.
double learningRateScale(int step, int steps) {
  const double warmup = 0.05 * steps, warmdownStart = 0.6 * steps;
  if (step < warmup)
    return (step + 1) / warmup;
  if (step < warmdownStart)
    return 1.0;
  double progress = (step - warmdownStart) / (steps - warmdownStart);
  return 1.0 - 0.9 * progress;
}

/// nanochat warms Muon's momentum up from 0.85 to 0.95 (over the first 300
/// of its steps; here over the first 30% of the run).
double muonMomentum(int step, int steps) {
  double progress = std::min(1.0, step / (0.3 * steps));
  return 0.85 + 0.10 * progress;
}

int run(const Options &options) {
  std::mt19937 rng(options.seed);
  const Corpus corpus = loadCorpus(options.data);
  Model model(int(corpus.characters.size()));
  model.initialize(rng);
  if (options.checkGradients) {
    std::printf("gradient check against central differences:\n");
    return checkGradients(model, corpus, rng) ? 0 : 1;
  }

  optgen_generated::nanochat_muon_adamw optimizer;
  for (Weight *w : model.weights())
    optimizer.addParameter(w->name, w->valueView(), w->gradView());
  optimizer.finalize(); // binds every parameter to its group, allocates state

  int64_t parameterCount = 0;
  for (Weight *w : model.weights())
    parameterCount += int64_t(w->value.size());
  std::printf("%s: %zu characters, vocabulary %d; %lld parameters, %lld bytes "
              "of optimizer state\n",
              options.data.c_str(), corpus.tokens.size(), model.vocab,
              (long long)parameterCount, (long long)optimizer.stateBytes());
  for (Weight *w : model.weights())
    std::printf("  %-34s %-10s -> %s\n", w->name.c_str(),
                optgen::runtime::formatShape(w->shape).c_str(),
                optimizer.groupOf(w->name).c_str());

  // The schedule scales the spec's learning rates, so keep them: setHyper
  // overwrites. They suit nanochat's width (768); like nanochat, scale the
  // embedding's and the head's by (width / 768)^-0.5 for this narrow model.
  std::map<std::string, double> baseLearningRate;
  for (const auto &group : optimizer.spec().groups)
    baseLearningRate[group.name] = optimizer.hyper(group.name, "lr");
  for (const char *group : {"embeddings", "lm_head"})
    baseLearningRate[group] *= std::sqrt(768.0 / kModelDim);

  Workspace ws;
  const double initialTrain = evaluate(model, ws, corpus, 0, corpus.trainEnd);
  const double initialValidation = evaluate(
      model, ws, corpus, corpus.trainEnd - kContext, corpus.tokens.size());

  std::uniform_int_distribution<size_t> startDist(0, corpus.trainEnd -
                                                         kContext - 1);
  std::vector<int> windows;
  Progress progress(options.steps);
  double smoothed = 0;
  const auto started = std::chrono::steady_clock::now();
  for (int step = 0; step < options.steps; ++step) {
    const double scale = learningRateScale(step, options.steps);
    for (const auto &[group, lr] : baseLearningRate)
      optimizer.setHyper(group, "lr", lr * scale);
    optimizer.setHyper("matrices", "momentum",
                       muonMomentum(step, options.steps));

    windows.clear();
    for (int b = 0; b < kBatch; ++b)
      appendWindow(corpus, startDist(rng), windows);
    const double loss = forward(model, ws, windows, true);
    if (!std::isfinite(loss)) {
      std::fprintf(stderr, "\nerror: the loss is %f at step %d\n", loss,
                   step + 1);
      return 1;
    }
    optimizer.step();

    // Debiased moving average, as nanochat logs it: one batch is noisy.
    smoothed = 0.9 * smoothed + 0.1 * loss;
    progress.update(step + 1, smoothed / (1 - std::pow(0.9, step + 1)));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();

  const double finalTrain = evaluate(model, ws, corpus, 0, corpus.trainEnd);
  const double finalValidation = evaluate(
      model, ws, corpus, corpus.trainEnd - kContext, corpus.tokens.size());
  std::printf("%d steps in %.1f s (%.1f ms/step)\n", options.steps, seconds,
              1000 * seconds / options.steps);
  std::printf("train loss       %.3f -> %.3f  (uniform guess: %.3f)\n",
              initialTrain, finalTrain, std::log(double(model.vocab)));
  std::printf("validation loss  %.3f -> %.3f\n", initialValidation,
              finalValidation);
  std::printf("sample: %s\n",
              sample(model, ws, corpus, "The ", 120, rng).c_str());

  if (!(finalTrain < 0.8 * initialTrain)) {
    std::fprintf(stderr,
                 "error: the train loss fell from %.3f only to %.3f "
                 "(wanted below %.3f)\n",
                 initialTrain, finalTrain, 0.8 * initialTrain);
    return 1;
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return run(parseOptions(argc, argv));
  } catch (const std::exception &error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 2;
  }
}
