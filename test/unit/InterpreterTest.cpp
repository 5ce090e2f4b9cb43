//===- InterpreterTest.cpp - The fp64 reference interpreter ---------------===//
//
// Each test compiles a spec to the optgen dialect, runs its rule with the
// interpreter and compares with straightforward double code written here,
// independently of the compiler, from the optimizer's published math
// (examples/*.opt, and MATH.md for nanochat's Muon).
//
//===----------------------------------------------------------------------===//

#include "optgen/Interpreter/Interpreter.h"

#include "dialect/OptgenDialect.h"
#include "optgen/Frontend/MLIRGen.h"
#include "optgen/Frontend/Parser.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace optgen;
using interp::HyperMap;
using interp::ParamState;
using Vec = std::vector<double>;

namespace {

class InterpreterTest : public ::testing::Test {
protected:
  InterpreterTest() {
    context.getOrLoadDialect<OptgenDialect>();
    context.getDiagEngine().registerHandler([this](mlir::Diagnostic &d) {
      llvm::raw_string_ostream os(diagnostics);
      os << d.getLocation() << ": " << d.str() << "\n";
      return mlir::success();
    });
  }

  /// Compiles `text`; on failure the test fails with the diagnostics.
  mlir::ModuleOp compile(llvm::StringRef text) {
    unsigned id = sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(text, "spec.opt"), llvm::SMLoc());
    std::unique_ptr<ast::Module> spec =
        parseSpec(sourceMgr, id, [&](llvm::SMLoc, const llvm::Twine &message) {
          diagnostics += message.str() + "\n";
        });
    if (!spec) {
      ADD_FAILURE() << "syntax error:\n" << diagnostics;
      return {};
    }
    modules.push_back(mlirGen(context, sourceMgr, *spec));
    if (!modules.back())
      ADD_FAILURE() << "spec does not compile:\n" << diagnostics;
    return modules.back().get();
  }

  RuleOp rule(mlir::ModuleOp module, llvm::StringRef name) {
    RuleOp found;
    if (module)
      module.walk([&](RuleOp r) {
        if (r.getSymName() == name)
          found = r;
      });
    EXPECT_TRUE(found) << "no rule " << name.str();
    return found;
  }

  GroupOp group(mlir::ModuleOp module, llvm::StringRef name) {
    GroupOp found;
    module.walk([&](GroupOp g) {
      if (g.getSymName() == name)
        found = g;
    });
    EXPECT_TRUE(found) << "no group " << name.str();
    return found;
  }

  mlir::MLIRContext context;
  llvm::SourceMgr sourceMgr;
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> modules;
  std::string diagnostics;
  std::mt19937_64 rng{20240611};

  Vec random(size_t n, double scale = 1.0) {
    std::uniform_real_distribution<double> dist(-scale, scale);
    Vec v(n);
    for (double &x : v)
      x = dist(rng);
    return v;
  }
};

/// |got - want| <= tol * max(1, |want|) elementwise.
void expectClose(const Vec &got, const Vec &want, double tol,
                 const char *what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::fabs(want[i])))
        << what << " element " << i;
}

double lerp(double a, double b, double w) { return a + w * (b - a); }

/// What a literal like 0.9 becomes as an f32 attribute.
double f32(double x) { return static_cast<float>(x); }

// Row-major matrix helpers for the hand-written references.
struct Mat {
  int64_t rows, cols;
  Vec data;
  double &at(int64_t i, int64_t j) { return data[i * cols + j]; }
  double at(int64_t i, int64_t j) const { return data[i * cols + j]; }
};

Mat matmul(const Mat &a, const Mat &b) {
  Mat c{a.rows, b.cols, Vec(a.rows * b.cols, 0.0)};
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < b.cols; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < a.cols; ++k)
        acc += a.at(i, k) * b.at(k, j);
      c.at(i, j) = acc;
    }
  return c;
}

Mat transpose(const Mat &a) {
  Mat t{a.cols, a.rows, Vec(a.data.size())};
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < a.cols; ++j)
      t.at(j, i) = a.at(i, j);
  return t;
}

double frobenius(const Vec &v) {
  double s = 0;
  for (double x : v)
    s += x * x;
  return std::sqrt(s);
}

//===----------------------------------------------------------------------===//
// Whole optimizers against their math
//===----------------------------------------------------------------------===//

constexpr const char *kAdamW = R"spec(
optimizer adamw
rule adamw(p, g) {
  hyper lr = 1e-3, betas = (0.9, 0.999), eps = 1e-8, weight_decay = 0.01
  state m = zeros_like(p), v = zeros_like(p)
  p = p * (1 - lr * weight_decay)
  m = lerp(m, g, 1 - betas[0])
  v = lerp(v, g * g, 1 - betas[1])
  let step_size = lr / (1 - betas[0] ^ step)
  let bias2 = 1 - betas[1] ^ step
  p = p - step_size * m / (sqrt(v / bias2) + eps)
}
group all = adamw { match "*" }
)spec";

/// AdamW as torch.optim.AdamW documents it, in double.
struct AdamWReference {
  double lr, beta1, beta2, eps, wd;
  Vec p, m, v;
  int64_t t = 0;
  void step(const Vec &g) {
    ++t;
    for (size_t i = 0; i < p.size(); ++i) {
      p[i] *= 1 - lr * wd;
      m[i] = beta1 * m[i] + (1 - beta1) * g[i];
      v[i] = beta2 * v[i] + (1 - beta2) * g[i] * g[i];
      double mhat = m[i] / (1 - std::pow(beta1, t));
      double vhat = v[i] / (1 - std::pow(beta2, t));
      p[i] -= lr * mhat / (std::sqrt(vhat) + eps);
    }
  }
};

TEST_F(InterpreterTest, AdamWThreeSteps) {
  RuleOp adamw = rule(compile(kAdamW), "adamw");
  ASSERT_TRUE(adamw);
  HyperMap hypers;
  hypers["lr"] = 1e-2;
  hypers["betas"] = Vec{0.9, 0.999};
  hypers["eps"] = 1e-8;
  hypers["weight_decay"] = 0.01;

  ParamState state{{3, 5}, random(15), {}, 0};
  AdamWReference ref{1e-2, 0.9, 0.999, 1e-8, 0.01, state.param, Vec(15, 0.0),
                     Vec(15, 0.0)};
  for (int i = 0; i < 3; ++i) {
    Vec g = random(15);
    ASSERT_TRUE(succeeded(interp::stepRule(adamw, state, g, hypers)))
        << diagnostics;
    ref.step(g);
  }
  EXPECT_EQ(state.step, 3);
  ASSERT_EQ(state.states.size(), 2u);
  EXPECT_EQ(state.states[0].shape, (std::vector<int64_t>{3, 5}));
  expectClose(state.param, ref.p, 1e-13, "p");
  expectClose(state.states[0].data, ref.m, 1e-13, "m");
  expectClose(state.states[1].data, ref.v, 1e-13, "v");
}

// The IR holds defaults (and group settings) as f32 attributes, so a default
// of 0.9 is 0.899999976...: the reference sees exactly that.
TEST_F(InterpreterTest, AdamWDefaultsAreF32) {
  RuleOp adamw = rule(compile(kAdamW), "adamw");
  ASSERT_TRUE(adamw);
  ParamState state{{4}, random(4), {}, 0};
  AdamWReference ref{f32(1e-3), f32(0.9),  f32(0.999),  f32(1e-8),
                     f32(0.01), state.param, Vec(4, 0.0), Vec(4, 0.0)};
  for (int i = 0; i < 2; ++i) {
    Vec g = random(4);
    ASSERT_TRUE(succeeded(interp::stepRule(adamw, state, g, {})))
        << diagnostics;
    ref.step(g);
  }
  expectClose(state.param, ref.p, 1e-14, "p");
}

TEST_F(InterpreterTest, SGDNesterov) {
  RuleOp sgd = rule(compile(R"spec(
optimizer sgd_nesterov
rule sgd(p, g) {
  hyper lr = 0.1, momentum = 0.9, dampening = 0.0, weight_decay = 0.0
  state buf = zeros_like(p)
  let d = g + weight_decay * p
  buf = step == 1 ? d : momentum * buf + (1 - dampening) * d
  p = p - lr * (d + momentum * buf)
}
group all = sgd { match "*"; weight_decay = 5e-4 }
)spec"),
                    "sgd");
  ASSERT_TRUE(sgd);
  const double lr = 0.05, momentum = 0.9, dampening = 0.1, wd = 5e-4;
  HyperMap hypers;
  hypers["lr"] = lr;
  hypers["momentum"] = momentum;
  hypers["dampening"] = dampening;
  hypers["weight_decay"] = wd;

  ParamState state{{2, 3}, random(6), {}, 0};
  Vec p = state.param, buf(6, 0.0);
  for (int t = 1; t <= 3; ++t) {
    Vec g = random(6);
    ASSERT_TRUE(succeeded(interp::stepRule(sgd, state, g, hypers)))
        << diagnostics;
    for (size_t i = 0; i < p.size(); ++i) {
      double d = g[i] + wd * p[i];
      buf[i] = t == 1 ? d : momentum * buf[i] + (1 - dampening) * d;
      p[i] -= lr * (d + momentum * buf[i]);
    }
  }
  expectClose(state.param, p, 1e-14, "p");
  expectClose(state.states[0].data, buf, 1e-14, "buf");
}

TEST_F(InterpreterTest, Lion) {
  RuleOp lion = rule(compile(R"spec(
optimizer lion
rule lion(p, g) {
  hyper lr = 1e-4, betas = (0.9, 0.99), weight_decay = 0.0
  state m = zeros_like(p)
  let update = sign(lerp(g, m, betas[0]))
  p = p * (1 - lr * weight_decay) - lr * update
  m = lerp(g, m, betas[1])
}
)spec"),
                     "lion");
  ASSERT_TRUE(lion);
  const double lr = 0.01, beta1 = 0.9, beta2 = 0.99, wd = 0.1;
  HyperMap hypers;
  hypers["lr"] = lr;
  hypers["betas"] = Vec{beta1, beta2};
  hypers["weight_decay"] = wd;

  ParamState state{{7}, random(7), {}, 0};
  Vec p = state.param, m(7, 0.0);
  for (int t = 1; t <= 3; ++t) {
    Vec g = random(7);
    ASSERT_TRUE(succeeded(interp::stepRule(lion, state, g, hypers)))
        << diagnostics;
    for (size_t i = 0; i < p.size(); ++i) {
      double c = beta1 * m[i] + (1 - beta1) * g[i];
      double update = c > 0 ? 1.0 : (c < 0 ? -1.0 : 0.0);
      p[i] = p[i] * (1 - lr * wd) - lr * update;
      m[i] = beta2 * m[i] + (1 - beta2) * g[i];
    }
  }
  expectClose(state.param, p, 1e-14, "p");
  expectClose(state.states[0].data, m, 1e-14, "m");
}

//===----------------------------------------------------------------------===//
// Dtypes
//===----------------------------------------------------------------------===//

TEST(InterpreterRounding, RoundToType) {
  mlir::MLIRContext context;
  mlir::Builder b(&context);
  EXPECT_EQ(interp::roundToType(0.9, b.getBF16Type()), 0.8984375);
  // Ties go to even: 1 + 2^-8 lies halfway between 1 and 1 + 2^-7.
  EXPECT_EQ(interp::roundToType(1 + std::ldexp(1, -8), b.getBF16Type()), 1.0);
  EXPECT_EQ(interp::roundToType(1 + 3 * std::ldexp(1, -8), b.getBF16Type()),
            1 + std::ldexp(1, -6));
  EXPECT_EQ(interp::roundToType(0.1, b.getF16Type()), 0.0999755859375);
  EXPECT_EQ(interp::roundToType(0.1, b.getF32Type()), 0.1); // stays double
  EXPECT_EQ(interp::roundToType(-2.5, b.getI1Type()), 1.0);
}

TEST_F(InterpreterTest, BF16RoundsAfterEveryOp) {
  RuleOp r = rule(compile(R"spec(
optimizer casts
rule r(p, g) {
  state s: bf16 = zeros_like(p), h: f16 = zeros_like(p)
  let x: bf16 = g
  s = g
  h = g
  p = f32(x * 3)
}
)spec"),
                  "r");
  ASSERT_TRUE(r);
  ParamState state{{1}, {0.0}, {}, 0};
  ASSERT_TRUE(succeeded(interp::stepRule(r, state, {0.9}, {}))) << diagnostics;
  // bf16(0.9) = 0.8984375; times 3 is 2.6953125, halfway between the bf16
  // neighbours 2.6875 and 2.703125: it rounds to the even one.
  EXPECT_EQ(state.param[0], 2.6875);
  EXPECT_EQ(state.states[0].data[0], 0.8984375);
  EXPECT_TRUE(state.states[0].type.isBF16());
  EXPECT_EQ(state.states[1].data[0], 0.89990234375);
  EXPECT_TRUE(state.states[1].type.isF16());
}

//===----------------------------------------------------------------------===//
// Shapes: broadcasting, reductions, matrix products, compile-time choices
//===----------------------------------------------------------------------===//

TEST_F(InterpreterTest, BroadcastColumnTimesRow) {
  RuleOp r = rule(compile(R"spec(
optimizer b
rule r(p: matrix, g: matrix) { p = p + mean(g, 1) * mean(g, 0) }
)spec"),
                  "r");
  ASSERT_TRUE(r);
  const int64_t m = 3, n = 4;
  ParamState state{{m, n}, random(m * n), {}, 0};
  Mat g{m, n, random(m * n)};
  Vec want = state.param;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double row = 0, col = 0;
      for (int64_t k = 0; k < n; ++k)
        row += g.at(i, k) / n;
      for (int64_t k = 0; k < m; ++k)
        col += g.at(k, j) / m;
      want[i * n + j] += row * col;
    }
  ASSERT_TRUE(succeeded(interp::stepRule(r, state, g.data, {})))
      << diagnostics;
  expectClose(state.param, want, 1e-15);
}

TEST_F(InterpreterTest, ReductionsAlongAxes) {
  RuleOp r = rule(compile(R"spec(
optimizer reductions
rule r(p: matrix, g: matrix) {
  state cols_sum = zeros(reduced(p, 0)), rows_norm = zeros(reduced(p, 1))
  state rows_max = zeros(reduced(p, -1)), whole = zeros(), biggest = zeros()
  cols_sum = sum(g, 0)
  rows_norm = norm(g, 1)
  rows_max = amax(g, -1)
  whole = mean(g) + norm(g) * 1000
  biggest = amax(g)
}
)spec"),
                  "r");
  ASSERT_TRUE(r);
  const int64_t m = 3, n = 5;
  ParamState state{{m, n}, Vec(m * n, 0.0), {}, 0};
  Mat g{m, n, random(m * n)};
  ASSERT_TRUE(succeeded(interp::stepRule(r, state, g.data, {})))
      << diagnostics;
  ASSERT_EQ(state.states.size(), 5u);

  Vec colsSum(n, 0.0), rowsNorm(m, 0.0), rowsMax(m, -INFINITY);
  double sum = 0, squares = 0, biggest = -INFINITY;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double x = g.at(i, j);
      colsSum[j] += x;
      rowsNorm[i] += x * x;
      rowsMax[i] = std::max(rowsMax[i], x);
      sum += x;
      squares += x * x;
      biggest = std::max(biggest, x);
    }
  for (double &x : rowsNorm)
    x = std::sqrt(x);

  EXPECT_EQ(state.states[0].shape, (std::vector<int64_t>{1, n}));
  EXPECT_EQ(state.states[1].shape, (std::vector<int64_t>{m, 1}));
  EXPECT_EQ(state.states[2].shape, (std::vector<int64_t>{m, 1}));
  EXPECT_FALSE(state.states[3].isTensor());
  expectClose(state.states[0].data, colsSum, 1e-15, "sum along 0");
  expectClose(state.states[1].data, rowsNorm, 1e-15, "norm along 1");
  expectClose(state.states[2].data, rowsMax, 0, "max along -1");
  expectClose(state.states[3].data,
              {sum / (m * n) + std::sqrt(squares) * 1000}, 1e-15, "whole");
  expectClose(state.states[4].data, {biggest}, 0, "max");
}

TEST_F(InterpreterTest, MatmulAndTranspose) {
  RuleOp r = rule(compile(R"spec(
optimizer mm
rule r(p: matrix, g: matrix) { p = p - 0.5 * (g @ transpose(p)) @ g + p^T^T }
)spec"),
                  "r");
  ASSERT_TRUE(r);
  const int64_t m = 3, n = 4;
  Mat p{m, n, random(m * n)}, g{m, n, random(m * n)};
  Mat prod = matmul(matmul(g, transpose(p)), g);
  Vec want(m * n);
  for (int64_t i = 0; i < m * n; ++i)
    want[i] = p.data[i] - 0.5 * prod.data[i] + p.data[i];
  ParamState state{{m, n}, p.data, {}, 0};
  ASSERT_TRUE(succeeded(interp::stepRule(r, state, g.data, {})))
      << diagnostics;
  expectClose(state.param, want, 1e-14);
}

TEST_F(InterpreterTest, CompileTimeIfChoosesByShape) {
  RuleOp r = rule(compile(R"spec(
optimizer choice
rule r(p: matrix, g: matrix) {
  if rows(p) > cols(p) { p = p - g } else { p = p + 2 * g }
}
)spec"),
                  "r");
  ASSERT_TRUE(r);
  for (std::vector<int64_t> shape : {std::vector<int64_t>{5, 3}, {3, 5}, {4, 4}}) {
    bool tall = shape[0] > shape[1];
    int64_t n = shape[0] * shape[1];
    ParamState state{shape, random(n), {}, 0};
    Vec g = random(n), want = state.param;
    for (int64_t i = 0; i < n; ++i)
      want[i] += tall ? -g[i] : 2 * g[i];
    ASSERT_TRUE(succeeded(interp::stepRule(r, state, g, {}))) << diagnostics;
    expectClose(state.param, want, 1e-15, tall ? "tall" : "wide");
  }
}

TEST_F(InterpreterTest, ForTableRunsCountRows) {
  RuleOp r = rule(compile(R"spec(
optimizer loop
const table = [(2.0, 0.1), (3.0, 0.2), (0.5, 0.3)]
rule r(p, g) {
  hyper n: int = 3
  for (a, b) in table[0 : n] { p = a * p + b }
}
)spec"),
                  "r");
  ASSERT_TRUE(r);
  const double a[] = {2.0, 3.0, 0.5}, b[] = {0.1, 0.2, 0.3};
  for (int64_t count : {0, 2, 3, 10}) {
    ParamState state{{2}, {1.0, -4.0}, {}, 0};
    Vec want = state.param;
    for (int64_t row = 0; row < std::min<int64_t>(count, 3); ++row)
      for (double &x : want)
        x = a[row] * x + f32(b[row]); // table values enter as f32
    HyperMap hypers;
    hypers["n"] = count;
    ASSERT_TRUE(succeeded(interp::stepRule(r, state, {0.0, 0.0}, hypers)))
        << diagnostics;
    expectClose(state.param, want, 0, "for_table");
  }
}

TEST_F(InterpreterTest, AdafactorFactoredState) {
  RuleOp r = rule(compile(R"spec(
optimizer adafactor
rule adafactor(p: matrix, g: matrix) {
  hyper lr = 1e-2, eps1 = 1e-30, eps2 = 1e-3, clip = 1.0, decay = 0.8
  state row = zeros(reduced(p, 1))
  state col = zeros(reduced(p, 0))
  let beta2 = 1 - step ^ (-decay)
  let g2 = g * g + eps1
  row = lerp(row, mean(g2, 1), 1 - beta2)
  col = lerp(col, mean(g2, 0), 1 - beta2)
  let u = g * rsqrt(row * col / mean(row))
  u = u / max(1, sqrt(mean(u * u)) / clip)
  let rho = min(lr, rsqrt(step))
  let alpha = max(eps2, sqrt(mean(p * p))) * rho
  p = p - alpha * u
}
group matrices = adafactor { match "*"; where ndim(param) == 2 }
)spec"),
                  "adafactor");
  ASSERT_TRUE(r);
  const double lr = 1e-2, eps1 = 1e-30, eps2 = 1e-3, clip = 1.0, decay = 0.8;
  HyperMap hypers;
  hypers["lr"] = lr;
  hypers["eps1"] = eps1;
  hypers["eps2"] = eps2;
  hypers["clip"] = clip;
  hypers["decay"] = decay;

  const int64_t m = 4, n = 3;
  ParamState state{{m, n}, random(m * n), {}, 0};
  Mat p{m, n, state.param};
  Vec row(m, 0.0), col(n, 0.0);
  for (int t = 1; t <= 3; ++t) {
    Mat g{m, n, random(m * n)};
    ASSERT_TRUE(succeeded(interp::stepRule(r, state, g.data, hypers)))
        << diagnostics;
    double beta2 = 1 - std::pow(t, -decay);
    for (int64_t i = 0; i < m; ++i) {
      double mean = 0;
      for (int64_t j = 0; j < n; ++j)
        mean += (g.at(i, j) * g.at(i, j) + eps1) / n;
      row[i] += (1 - beta2) * (mean - row[i]);
    }
    for (int64_t j = 0; j < n; ++j) {
      double mean = 0;
      for (int64_t i = 0; i < m; ++i)
        mean += (g.at(i, j) * g.at(i, j) + eps1) / m;
      col[j] += (1 - beta2) * (mean - col[j]);
    }
    double rowMean = 0;
    for (double x : row)
      rowMean += x / m;
    Mat u{m, n, Vec(m * n)};
    double uu = 0, pp = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        u.at(i, j) = g.at(i, j) / std::sqrt(row[i] * col[j] / rowMean);
        uu += u.at(i, j) * u.at(i, j) / (m * n);
        pp += p.at(i, j) * p.at(i, j) / (m * n);
      }
    double denom = std::max(1.0, std::sqrt(uu) / clip);
    double rho = std::min(lr, 1 / std::sqrt(double(t)));
    double alpha = std::max(eps2, std::sqrt(pp)) * rho;
    for (int64_t k = 0; k < m * n; ++k)
      p.data[k] -= alpha * u.data[k] / denom;
  }
  ASSERT_EQ(state.states.size(), 2u);
  EXPECT_EQ(state.states[0].shape, (std::vector<int64_t>{m, 1}));
  EXPECT_EQ(state.states[1].shape, (std::vector<int64_t>{1, n}));
  expectClose(state.states[0].data, row, 1e-14, "row");
  expectClose(state.states[1].data, col, 1e-14, "col");
  expectClose(state.param, p.data, 1e-14, "p");

  GroupOp matrices = group(modules.back().get(), "matrices");
  mlir::FailureOr<bool> matrix = interp::evaluateWhere(matrices, {m, n});
  mlir::FailureOr<bool> vector = interp::evaluateWhere(matrices, {m});
  ASSERT_TRUE(succeeded(matrix) && succeeded(vector)) << diagnostics;
  EXPECT_TRUE(*matrix);
  EXPECT_FALSE(*vector);
}

//===----------------------------------------------------------------------===//
// Errors: diagnostics and failure, never a crash
//===----------------------------------------------------------------------===//

constexpr const char *kNeedsLr = R"spec(
optimizer needs_lr
rule sgd(p, g) {
  hyper lr
  state buf = zeros_like(p)
  buf = buf + g
  p = p - lr * buf
}
group all = sgd { match "*"; lr = 0.1 }
)spec";

TEST_F(InterpreterTest, MissingHyperparameterFails) {
  RuleOp r = rule(compile(kNeedsLr), "sgd");
  ASSERT_TRUE(r);
  ParamState state{{3}, {1, 2, 3}, {}, 0};
  EXPECT_TRUE(failed(interp::stepRule(r, state, {1, 1, 1}, {})));
  EXPECT_NE(diagnostics.find("hyperparameter 'lr' has no value"),
            std::string::npos)
      << diagnostics;
  EXPECT_EQ(state.step, 0);
  EXPECT_EQ(state.param, (Vec{1, 2, 3}));

  // The group's settings supply it.
  HyperMap hypers = interp::groupHypers(group(modules.back().get(), "all"));
  ASSERT_TRUE(succeeded(interp::stepRule(r, state, {1, 1, 1}, hypers)))
      << diagnostics;
  expectClose(state.param, {1 - f32(0.1), 2 - f32(0.1), 3 - f32(0.1)}, 0);
}

TEST_F(InterpreterTest, BadInputsFail) {
  RuleOp r = rule(compile(kNeedsLr), "sgd");
  ASSERT_TRUE(r);
  HyperMap hypers;
  hypers["lr"] = 0.1;

  ParamState wrongGrad{{3}, {1, 2, 3}, {}, 0};
  EXPECT_TRUE(failed(interp::stepRule(r, wrongGrad, {1, 1}, hypers)));

  ParamState wrongState{{3}, {1, 2, 3}, {interp::Value::zeros({2}, {})}, 1};
  EXPECT_TRUE(failed(interp::stepRule(r, wrongState, {1, 1, 1}, hypers)));
  EXPECT_NE(diagnostics.find("state 'buf' is given as a tensor of shape [2]"),
            std::string::npos)
      << diagnostics;

  HyperMap tupleForFloat;
  tupleForFloat["lr"] = Vec{0.1, 0.2};
  ParamState state{{3}, {1, 2, 3}, {}, 0};
  EXPECT_TRUE(failed(interp::stepRule(r, state, {1, 1, 1}, tupleForFloat)));
}

TEST_F(InterpreterTest, RuntimeShapeMismatchFails) {
  // Statically [m, n] + [?, ?]: only the bound shapes show the mismatch.
  RuleOp r = rule(compile(R"spec(
optimizer mismatch
rule r(p: matrix, g: matrix) {
  let red = rows(p) >= cols(p) ? 1 : 0
  p = p + transpose(mean(g, red))
}
)spec"),
                  "r");
  ASSERT_TRUE(r);
  ParamState state{{6, 4}, Vec(24, 0.0), {}, 0};
  EXPECT_TRUE(failed(interp::stepRule(r, state, Vec(24, 1.0), {})));
  EXPECT_NE(diagnostics.find("shapes [6, 4] and [1, 6] do not broadcast"),
            std::string::npos)
      << diagnostics;
  EXPECT_NE(diagnostics.find("\"spec.opt\":5:"), std::string::npos)
      << "reported at the op's location:\n"
      << diagnostics;
}

TEST_F(InterpreterTest, UnknownOpFails) {
  context.allowUnregisteredDialects();
  RuleOp r = rule(compile(kNeedsLr), "sgd");
  ASSERT_TRUE(r);
  mlir::OpBuilder builder(&context);
  builder.setInsertionPoint(r.getBlock().getTerminator());
  mlir::OperationState unknown(builder.getUnknownLoc(), "test.unknown");
  builder.create(unknown);
  HyperMap hypers;
  hypers["lr"] = 0.1;
  ParamState state{{1}, {1}, {}, 0};
  EXPECT_TRUE(failed(interp::stepRule(r, state, {1}, hypers)));
  EXPECT_NE(diagnostics.find("does not run 'test.unknown'"), std::string::npos)
      << diagnostics;
}

//===----------------------------------------------------------------------===//
// %, floordiv, floor; run-time if; functions
//===----------------------------------------------------------------------===//

TEST_F(InterpreterTest, FloatRemainderAndFloorDivisionArePythons) {
  // Python's values: -5.25 % 2.0 == 0.75, -5.25 // 2.0 == -3.0, and the
  // remainder takes the divisor's sign.
  struct Case {
    double a, b, mod, div;
  } cases[] = {{5.25, 2.0, 1.25, 2.0},    {-5.25, 2.0, 0.75, -3.0},
               {5.25, -2.0, -0.75, -3.0}, {-5.25, -2.0, -1.25, 2.0},
               {6.0, 2.0, 0.0, 3.0},      {-6.0, 2.0, 0.0, -3.0},
               {0.5, 4.0, 0.5, 0.0},      {-0.5, 4.0, 3.5, -1.0}};
  RuleOp r = rule(compile(R"spec(
optimizer python_division
rule r(p, g) {
  hyper b = 1.0
  p = g % b + 1000 * floordiv(g, b) + 1000000 * floor(g / b)
}
)spec"),
                  "r");
  ASSERT_TRUE(r);
  for (const Case &c : cases) {
    ParamState state{{1}, {0.0}, {}, 0};
    HyperMap hypers;
    hypers["b"] = c.b;
    ASSERT_TRUE(succeeded(interp::stepRule(r, state, {c.a}, hypers)))
        << diagnostics;
    expectClose(state.param,
                {c.mod + 1000 * c.div + 1000000 * std::floor(c.a / c.b)},
                1e-12, "remainder, floordiv, floor");
  }
}

TEST_F(InterpreterTest, IntRemainderAndFloorDivision) {
  // The step against an int divisor: Python's values, and for a divisor of
  // 0 the remainder is the step and the quotient 0.
  RuleOp r = rule(compile(R"spec(
optimizer int_division
rule r(p, g) {
  hyper k: int = 3
  p = p + 1000 * (step % k) + floordiv(step - 4, k)
}
)spec"),
                  "r");
  ASSERT_TRUE(r);
  for (int64_t k : {3, -3, 1, 0}) {
    ParamState state{{1}, {0.0}, {}, 0};
    HyperMap hypers;
    hypers["k"] = k;
    for (int64_t step = 1; step <= 7; ++step) {
      state.param = {0.0};
      ASSERT_TRUE(succeeded(interp::stepRule(r, state, {0.0}, hypers)))
          << diagnostics;
      int64_t n = step - 4;
      // Python: step % k and (step - 4) // k.
      int64_t mod = k == 0 ? step : ((step % k) + k) % k;
      int64_t div = k == 0 ? 0 : (n - (((n % k) + k) % k)) / k;
      expectClose(state.param, {double(1000 * mod + div)}, 0,
                  ("k = " + std::to_string(k) + ", step = " +
                   std::to_string(step))
                      .c_str());
    }
  }
}

TEST_F(InterpreterTest, RuntimeIfRunsEveryKSteps) {
  RuleOp r = rule(compile(R"spec(
optimizer every_k
rule r(p, g) {
  hyper k: int = 3
  state count = zeros()
  if step % k == 0 {
    count = count + 1
    p = p - g
  } else {
    p = p + 0.5 * g
  }
}
)spec"),
                  "r");
  ASSERT_TRUE(r);
  ParamState state{{2}, {1.0, 2.0}, {}, 0};
  Vec want = state.param;
  HyperMap hypers;
  hypers["k"] = int64_t{3};
  for (int64_t step = 1; step <= 7; ++step) {
    Vec g = random(2);
    for (size_t i = 0; i < 2; ++i)
      want[i] += step % 3 == 0 ? -g[i] : 0.5 * g[i];
    ASSERT_TRUE(succeeded(interp::stepRule(r, state, g, hypers)))
        << diagnostics;
    expectClose(state.param, want, 1e-15, "every 3 steps");
  }
  ASSERT_EQ(state.states.size(), 1u);
  EXPECT_EQ(state.states[0].data.at(0), 2.0); // steps 3 and 6
}

TEST_F(InterpreterTest, FunctionsInlineToTheSameStep) {
  // AdamW written with functions (the moments' state in one) steps exactly
  // as kAdamW's single rule does.
  RuleOp composed = rule(compile(R"spec(
optimizer composed
fn adam(u) {
  hyper betas = (0.9, 0.999), eps = 1e-8
  state m = zeros_like(u), v = zeros_like(u)
  m = lerp(m, u, 1 - betas[0])
  v = lerp(v, u * u, 1 - betas[1])
  let step_size = 1 / (1 - betas[0] ^ step)
  let bias2 = 1 - betas[1] ^ step
  return step_size * m / (sqrt(v / bias2) + eps)
}
fn decay(x, lr, weight_decay) { return x * (1 - lr * weight_decay) }
rule adamw(p, g) {
  hyper lr = 1e-3, weight_decay = 0.01
  p = decay(p, lr, weight_decay)
  p = p - lr * adam(g)
}
)spec"),
                         "adamw");
  RuleOp plain = rule(compile(kAdamW), "adamw");
  ASSERT_TRUE(composed && plain);
  Vec p0 = random(6), gs[3] = {random(6), random(6), random(6)};
  ParamState a{{2, 3}, p0, {}, 0}, b{{2, 3}, p0, {}, 0};
  for (const Vec &g : gs) {
    ASSERT_TRUE(succeeded(interp::stepRule(composed, a, g, {}))) << diagnostics;
    ASSERT_TRUE(succeeded(interp::stepRule(plain, b, g, {}))) << diagnostics;
  }
  // lr / bias1 * m is computed as lr * (1 / bias1 * m) here: rounding apart.
  expectClose(a.param, b.param, 1e-6, "composed AdamW");
  ASSERT_EQ(a.states.size(), 2u);
  expectClose(a.states[0].data, b.states[0].data, 0, "m");
  expectClose(a.states[1].data, b.states[1].data, 0, "v");
}

//===----------------------------------------------------------------------===//
// nanochat's Muon (a9d0a86) with compute = f32, against MATH.md
//===----------------------------------------------------------------------===//

constexpr const char *kMuonF32 = R"spec(
optimizer nanochat_muon
const compute = f32
const polar_express = [
  (8.156554524902461,  -22.48329292557795,  15.878769915207462),
  (4.042929935166739,  -2.808917465908714,  0.5000178451051316),
  (3.8916678022926607, -2.772484153217685,  0.5060648178503393),
  (3.285753657755655,  -2.3681294933425376, 0.46449024233003106),
  (2.3465413258596377, -1.7097828382687081, 0.42323551169305323),
]
rule muon(p: matrix, g: matrix) {
  hyper lr, momentum = 0.95, ns_steps: int = 5, beta2 = 0.95, weight_decay = 0.0
  let red = rows(p) >= cols(p) ? 1 : 0
  state momentum_buffer = zeros_like(p)
  state second_momentum_buffer = zeros(reduced(p, red))

  momentum_buffer = lerp(momentum_buffer, g, 1 - momentum)
  let x: compute = lerp(g, momentum_buffer, momentum)

  let target = norm(f32(x)) / sqrt(rows(x))
  let row_norm = max(norm(f32(x), 1), 1e-6)
  x = x * compute(target / row_norm)

  x = x / (norm(x) * 1.01 + 1e-6)
  for (a, b, c) in polar_express[0 : ns_steps] {
    if rows(x) > cols(x) {
      let A = x^T @ x
      x = a * x + x @ (b * A + c * (A @ A))
    } else {
      let A = x @ x^T
      x = a * x + (b * A + c * (A @ A)) @ x
    }
  }

  let u: f32 = x
  u = u * (sqrt(min(rows(u), cols(u))) / max(norm(u), 1e-6))

  let v_mean = mean(u ^ 2, red)
  let n = size(u, red)
  let v_norm = sqrt(sum(v_mean) * n)
  second_momentum_buffer = lerp(second_momentum_buffer, v_mean, 1 - beta2)
  let s = rsqrt(max(second_momentum_buffer, 1e-10))
  let v_norm_new = sqrt(sum(v_mean * n * s ^ 2))
  u = u * (s * v_norm / max(v_norm_new, 1e-10))

  let lr_eff = lr * sqrt(max(1, rows(p) / cols(p)))
  p = p - (lr_eff * u + lr_eff * weight_decay * p * (u * p >= 0))
}
group matrices = muon {
  match "transformer.h.*"
  where ndim(param) == 2
  lr = 0.02; beta2 = 0.9
}
)spec";

/// MATH.md's Muon at a9d0a86 for one m x n matrix with fp32 compute (no
/// bf16 casts), in double. The Polar Express coefficients are the f32
/// values generated code holds (the interpreter's for_table semantics).
struct MuonReference {
  double lr, momentum, beta2, wd;
  int64_t nsSteps;
  Mat p, buf;
  Vec smb; // m x 1 when m >= n, else 1 x n

  void step(const Mat &g) {
    static const double coefficients[5][3] = {
        {8.156554524902461, -22.48329292557795, 15.878769915207462},
        {4.042929935166739, -2.808917465908714, 0.5000178451051316},
        {3.8916678022926607, -2.772484153217685, 0.5060648178503393},
        {3.285753657755655, -2.3681294933425376, 0.46449024233003106},
        {2.3465413258596377, -1.7097828382687081, 0.42323551169305323}};
    const int64_t m = p.rows, n = p.cols;
    const size_t size = m * n;
    // Momentum, then Nesterov.
    Mat x{m, n, Vec(size)};
    for (size_t k = 0; k < size; ++k) {
      buf.data[k] = lerp(buf.data[k], g.data[k], 1 - momentum);
      x.data[k] = lerp(g.data[k], buf.data[k], momentum);
    }
    // MuonEq: every row scaled to the norm target = ||X||_F / sqrt(m).
    double target = frobenius(x.data) / std::sqrt(double(m));
    for (int64_t i = 0; i < m; ++i) {
      double rowNorm = 0;
      for (int64_t j = 0; j < n; ++j)
        rowNorm += x.at(i, j) * x.at(i, j);
      rowNorm = std::max(std::sqrt(rowNorm), 1e-6);
      for (int64_t j = 0; j < n; ++j)
        x.at(i, j) *= target / rowNorm;
    }
    double scale = frobenius(x.data) * 1.01 + 1e-6;
    for (double &v : x.data)
      v /= scale;
    // Polar Express.
    for (int64_t it = 0; it < std::min<int64_t>(nsSteps, 5); ++it) {
      double a = f32(coefficients[it][0]), b = f32(coefficients[it][1]),
             c = f32(coefficients[it][2]);
      bool tall = m > n;
      Mat A = tall ? matmul(transpose(x), x) : matmul(x, transpose(x));
      Mat AA = matmul(A, A);
      Mat B{A.rows, A.cols, Vec(A.data.size())};
      for (size_t k = 0; k < B.data.size(); ++k)
        B.data[k] = b * A.data[k] + c * AA.data[k];
      Mat XB = tall ? matmul(x, B) : matmul(B, x);
      for (size_t k = 0; k < size; ++k)
        x.data[k] = a * x.data[k] + XB.data[k];
    }
    // Muon+.
    double plus = std::sqrt(double(std::min(m, n))) /
                  std::max(frobenius(x.data), 1e-6);
    for (double &v : x.data)
      v *= plus;
    // NorMuon: statistics along the last axis when m >= n, else the first.
    bool alongCols = m >= n;
    int64_t R = alongCols ? n : m;
    Vec vMean(alongCols ? m : n, 0.0);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        vMean[alongCols ? i : j] += x.at(i, j) * x.at(i, j) / R;
    double sumMean = 0;
    for (double v : vMean)
      sumMean += v;
    double vNorm = std::sqrt(sumMean * R);
    Vec s(vMean.size());
    double sumNew = 0;
    for (size_t k = 0; k < vMean.size(); ++k) {
      smb[k] = lerp(smb[k], vMean[k], 1 - beta2);
      s[k] = 1 / std::sqrt(std::max(smb[k], 1e-10));
      sumNew += vMean[k] * R * s[k] * s[k];
    }
    double vNormNew = std::sqrt(sumNew);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        x.at(i, j) *= s[alongCols ? i : j] * vNorm / std::max(vNormNew, 1e-10);
    // Cautious weight decay and the update.
    double lrEff = lr * std::sqrt(std::max(1.0, double(m) / double(n)));
    for (size_t k = 0; k < size; ++k) {
      double mask = x.data[k] * p.data[k] >= 0 ? 1.0 : 0.0;
      p.data[k] -= lrEff * x.data[k] + lrEff * wd * p.data[k] * mask;
    }
  }
};

void checkMuon(InterpreterTest *, RuleOp muon, int64_t m, int64_t n,
               std::mt19937_64 &rng, std::string &diagnostics) {
  std::normal_distribution<double> normal(0.0, 1.0);
  auto randn = [&](size_t count) {
    Vec v(count);
    for (double &x : v)
      x = normal(rng);
    return v;
  };
  const double lr = 0.02, momentum = 0.95, beta2 = 0.9, wd = 0.2;
  HyperMap hypers;
  hypers["lr"] = lr;
  hypers["momentum"] = momentum;
  hypers["ns_steps"] = int64_t(5);
  hypers["beta2"] = beta2;
  hypers["weight_decay"] = wd;

  ParamState state{{m, n}, randn(m * n), {}, 0};
  MuonReference ref{lr,
                    momentum,
                    beta2,
                    wd,
                    5,
                    Mat{m, n, state.param},
                    Mat{m, n, Vec(m * n, 0.0)},
                    Vec(m >= n ? m : n, 0.0)};
  for (int t = 1; t <= 3; ++t) {
    Mat g{m, n, randn(m * n)};
    ASSERT_TRUE(succeeded(interp::stepRule(muon, state, g.data, hypers)))
        << diagnostics;
    ref.step(g);
  }
  ASSERT_EQ(state.states.size(), 2u);
  EXPECT_EQ(state.states[1].shape,
            (m >= n ? std::vector<int64_t>{m, 1} : std::vector<int64_t>{1, n}));
  expectClose(state.states[0].data, ref.buf.data, 1e-13, "momentum_buffer");
  expectClose(state.states[1].data, ref.smb, 1e-10,
              "second_momentum_buffer");
  expectClose(state.param, ref.p.data, 1e-10, "p");
}

TEST_F(InterpreterTest, NanochatMuonF32Tall) {
  RuleOp muon = rule(compile(kMuonF32), "muon");
  ASSERT_TRUE(muon);
  checkMuon(this, muon, 6, 4, rng, diagnostics);
}

TEST_F(InterpreterTest, NanochatMuonF32Wide) {
  RuleOp muon = rule(compile(kMuonF32), "muon");
  ASSERT_TRUE(muon);
  checkMuon(this, muon, 4, 6, rng, diagnostics);
}

// compute = bf16: the same step with the orthogonalisation in bf16 (every
// op rounds, matmuls round their double sums). No exact reference exists;
// the update must stay near the f32 one. test/golden/README.md: two correct
// bf16 implementations differ by ~0.07 (relative, Frobenius) on matrices of
// aspect ratio under 2, gated at 0.2; here bf16 against f32 gives ~0.09.
TEST_F(InterpreterTest, NanochatMuonBF16StaysNearF32) {
  std::string text = kMuonF32;
  text.replace(text.find("const compute = f32"), 19, "const compute = bf16");
  RuleOp bf16 = rule(compile(text), "muon");
  RuleOp f32 = rule(compile(kMuonF32), "muon");
  ASSERT_TRUE(bf16 && f32);
  const int64_t m = 6, n = 4;
  HyperMap hypers;
  hypers["lr"] = 0.02;
  hypers["weight_decay"] = 0.2;
  Vec p0 = random(m * n);
  ParamState low{{m, n}, p0, {}, 0}, high{{m, n}, p0, {}, 0};
  for (int t = 1; t <= 3; ++t) {
    Vec g = random(m * n);
    ASSERT_TRUE(succeeded(interp::stepRule(bf16, low, g, hypers)))
        << diagnostics;
    ASSERT_TRUE(succeeded(interp::stepRule(f32, high, g, hypers)))
        << diagnostics;
  }
  Vec lowDelta(m * n), highDelta(m * n), diff(m * n);
  for (int64_t k = 0; k < m * n; ++k) {
    lowDelta[k] = low.param[k] - p0[k];
    highDelta[k] = high.param[k] - p0[k];
    diff[k] = lowDelta[k] - highDelta[k];
  }
  double relative = frobenius(diff) / frobenius(highDelta);
  EXPECT_GT(relative, 0.0); // bf16 does round
  EXPECT_LT(relative, 0.2);
  expectClose(low.states[0].data, high.states[0].data, 0, "momentum_buffer");
}

} // namespace

namespace {

const char *const kGlobals = R"spec(
optimizer globals
global grad_norm(p, g) = sqrt(sum_params(sum(g * g)))
global peak(p, g) = max_params(amax(abs(g)))
global ratio(p, g) = sum_params(sum(p * g)) / (sum_params(sum(p * p)) + 1)
rule clipped(p, g) {
  hyper lr = 0.5, max_norm = 1.0
  p = p - lr * min(1, max_norm / grad_norm) * g + ratio * peak
}
group all = clipped { match "*" }
)spec";

OptimizerOp optimizerOf(mlir::ModuleOp module) {
  OptimizerOp found;
  if (module)
    module.walk([&](OptimizerOp op) { found = op; });
  return found;
}

} // namespace

// Every element of every parameter in each reduction, the math after them
// once: against sums written here.
TEST_F(InterpreterTest, GlobalsReduceAcrossEveryParameter) {
  OptimizerOp optimizer = optimizerOf(compile(kGlobals));
  ASSERT_TRUE(optimizer);
  mlir::Type f32 = mlir::Float32Type::get(&context);
  std::vector<interp::Value> params, grads;
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{3, 4}, {7}, {2, 3, 2}}) {
    size_t n = static_cast<size_t>(interp::numElements(shape));
    params.push_back(interp::Value::tensor(shape, random(n), f32));
    grads.push_back(interp::Value::tensor(shape, random(n, 3.0), f32));
  }
  std::vector<interp::GlobalInput> inputs;
  double squares = 0, peak = 0, dot = 0, weights = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    inputs.push_back({&params[i], &grads[i]});
    for (size_t k = 0; k < params[i].data.size(); ++k) {
      double p = params[i].data[k], g = grads[i].data[k];
      squares += g * g;
      peak = std::max(peak, std::fabs(g));
      dot += p * g;
      weights += p * p;
    }
  }
  mlir::FailureOr<interp::GlobalMap> globals =
      interp::evaluateGlobals(optimizer, inputs);
  ASSERT_TRUE(succeeded(globals)) << diagnostics;
  ASSERT_EQ(globals->size(), 3u);
  EXPECT_NEAR(globals->lookup("grad_norm"), std::sqrt(squares), 1e-13);
  EXPECT_EQ(globals->lookup("peak"), peak);
  EXPECT_NEAR(globals->lookup("ratio"), dot / (weights + 1), 1e-13);

  // No parameter: a sum of nothing is 0, a maximum -infinity.
  mlir::FailureOr<interp::GlobalMap> empty =
      interp::evaluateGlobals(optimizer, {});
  ASSERT_TRUE(succeeded(empty)) << diagnostics;
  EXPECT_EQ(empty->lookup("grad_norm"), 0.0);
  EXPECT_EQ(empty->lookup("peak"), -std::numeric_limits<double>::infinity());
}

// A rule reads the values it is given; without them it fails at the read.
TEST_F(InterpreterTest, RulesReadTheGlobalsGiven) {
  mlir::ModuleOp module = compile(kGlobals);
  RuleOp clipped = rule(module, "clipped");
  ASSERT_TRUE(clipped);
  interp::GlobalMap globals;
  globals["grad_norm"] = 4.0;
  globals["peak"] = 2.0;
  globals["ratio"] = 0.25;
  ParamState state{{2}, {1.0, -1.0}, {}, 0};
  ASSERT_TRUE(succeeded(
      interp::stepRule(clipped, state, {2.0, 4.0}, {}, globals)))
      << diagnostics;
  // p - 0.5 * min(1, 1 / 4) * g + 0.25 * 2
  expectClose(state.param, {1 - 0.125 * 2 + 0.5, -1 - 0.125 * 4 + 0.5}, 1e-15);

  ParamState again{{2}, {1.0, -1.0}, {}, 0};
  EXPECT_TRUE(failed(interp::stepRule(clipped, again, {2.0, 4.0}, {})));
  EXPECT_NE(diagnostics.find("no value is given for global 'grad_norm'"),
            std::string::npos)
      << diagnostics;
}
