//===- blas_compare.cpp - One BLAS on Polar Express's matrix products -----===//
//
// Times one CBLAS library, loaded with dlopen, on the matrix products of one
// Polar Express iteration of nanochat's Muon matrices, so that libraries can
// be compared on the shapes the optimizer really runs (bench/blas_compare.sh
// runs it once per library, in a fresh process each, and makes the table).
//
// At depth d (n_embd n = 64 d) the Muon matrices are [n, n], [4n, n] and
// [n, 4n]. With s the smaller side and l the larger, one iteration forms the
// Gram matrix A (X X^T, or X^T X for a tall X: s x s, inner dimension l),
// A A (s^3) and the product with X (B X, or X B for a tall X). Both A and
// A A are symmetric, so besides sgemm each is also timed as ssyrk, which
// computes one triangle; the product with the symmetric B also as ssymm.
// Every rate counts the standard flops of the full product (2 m n k), so
// a faster ssyrk shows as a higher rate: the number is the time saved.
//
// Usage: optgen-blas-compare --lib PATH [--name NAME] [--depths 4,6]
//                            [--reps 7] [--min-ms 20]
// The thread count is the library's own (OMP_NUM_THREADS,
// OPENBLAS_NUM_THREADS, BLIS_NUM_THREADS, MKL_NUM_THREADS: the script sets
// them). Prints "ROW ..." lines per product and "MIX ..." lines per depth.
//
//===----------------------------------------------------------------------===//

#include "deterministic_data.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

using optgen_bench::fillUniform;

// The CBLAS enumerators: the same values in every CBLAS (they are the
// interface), so no library's header is needed.
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112, kUpper = 121,
              kLeft = 141, kRight = 142;

using SgemmFn = void (*)(int, int, int, int, int, int, float, const float *,
                         int, const float *, int, float, float *, int);
using SsyrkFn = void (*)(int, int, int, int, int, float, const float *, int,
                         float, float *, int);
using SsymmFn = void (*)(int, int, int, int, int, float, const float *, int,
                         const float *, int, float, float *, int);

struct Blas {
  void *handle = nullptr;
  SgemmFn sgemm = nullptr;
  SsyrkFn ssyrk = nullptr;
  SsymmFn ssymm = nullptr;

  template <typename Fn> Fn symbol(const char *name) const {
    return reinterpret_cast<Fn>(dlsym(handle, name));
  }
};

/// What the library says about itself (version, kernels, threads), from
/// whichever of the known query functions it exports.
std::string describe(const Blas &blas) {
  std::string text;
  if (auto config = blas.symbol<const char *(*)()>("openblas_get_config"))
    text += std::string("OpenBLAS ") + config();
  if (auto core = blas.symbol<const char *(*)()>("openblas_get_corename"))
    text += std::string(", core ") + core();
  if (auto threads = blas.symbol<int (*)()>("openblas_get_num_threads"))
    text += ", " + std::to_string(threads()) + " thread(s)";
  if (auto version = blas.symbol<const char *(*)()>("bli_info_get_version_str"))
    text += std::string("BLIS ") + version();
  auto archId = blas.symbol<int (*)()>("bli_arch_query_id");
  auto archName = blas.symbol<const char *(*)(int)>("bli_arch_string");
  if (archId && archName)
    text += std::string(", sub-configuration ") + archName(archId());
  if (auto threads = blas.symbol<int (*)()>("bli_thread_get_num_threads"))
    text += ", " + std::to_string(threads()) + " thread(s)";
  if (auto version =
          blas.symbol<void (*)(char *, int)>("MKL_Get_Version_String")) {
    char buffer[512] = {};
    version(buffer, sizeof buffer - 1);
    text += buffer;
  }
  // MKL's version struct names the instruction set it dispatched to (it
  // may not pick its best kernels on a processor that is not Intel's).
  struct MklVersion {
    int major, minor, update, patch;
    const char *productStatus, *build, *processor, *platform;
  };
  if (auto version = blas.symbol<void (*)(MklVersion *)>("MKL_Get_Version")) {
    MklVersion v{};
    version(&v);
    if (v.processor)
      text += std::string(", kernels for ") + v.processor;
  }
  if (auto threads = blas.symbol<int (*)()>("MKL_Get_Max_Threads"))
    text += ", " + std::to_string(threads()) + " thread(s)";
  return text.empty() ? "(no version query found)" : text;
}

//===----------------------------------------------------------------------===//
// Data and checks
//===----------------------------------------------------------------------===//

/// A row-major matrix with the element accessor the checks use.
struct Matrix {
  int64_t rows, cols;
  std::vector<float> data;
  Matrix(int64_t r, int64_t c, uint64_t seed, float scale)
      : rows(r), cols(c), data(static_cast<size_t>(r * c)) {
    fillUniform(data, seed, scale);
  }
  float at(int64_t i, int64_t j) const { return data[i * cols + j]; }
};

/// A symmetric s x s matrix (the A or B of an iteration).
Matrix symmetric(int64_t s, uint64_t seed, float scale) {
  Matrix a(s, s, seed, scale);
  for (int64_t i = 0; i < s; ++i)
    for (int64_t j = 0; j < i; ++j)
      a.data[i * s + j] = a.data[j * s + i];
  return a;
}

/// Checks sampled entries of a product against a double-precision dot
/// product, relative to the sum of the terms' magnitudes. `entry(i, k)` and
/// `other(k, j)` read the two factors as the product uses them; `upperOnly`
/// samples only i <= j (what ssyrk writes).
bool check(const char *what, const Matrix &c, int64_t inner,
           const std::function<float(int64_t, int64_t)> &left,
           const std::function<float(int64_t, int64_t)> &right,
           bool upperOnly) {
  for (int sample = 0; sample < 64; ++sample) {
    int64_t i = (sample * 7919) % c.rows, j = (sample * 104729 + 13) % c.cols;
    if (upperOnly && i > j)
      std::swap(i, j);
    double sum = 0, magnitude = 0;
    for (int64_t k = 0; k < inner; ++k) {
      double term = double(left(i, k)) * double(right(k, j));
      sum += term;
      magnitude += std::fabs(term);
    }
    if (std::fabs(sum - c.at(i, j)) > 1e-4 * magnitude + 1e-30) {
      std::fprintf(stderr,
                   "blas_compare: %s is wrong at (%lld, %lld): %g, "
                   "expected %g\n",
                   what, static_cast<long long>(i), static_cast<long long>(j),
                   double(c.at(i, j)), sum);
      return false;
    }
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Timing
//===----------------------------------------------------------------------===//

using Clock = std::chrono::steady_clock;

struct Timing {
  double best = 0, median = 0; ///< seconds per call
};

/// Calls `body` often enough that one repetition lasts at least `minMs`,
/// `reps` times; the best repetition is the rate the library can reach (a
/// shared machine only ever makes a repetition slower), the median shows
/// the spread.
Timing timeCalls(const std::function<void()> &body, int reps, double minMs) {
  for (int i = 0; i < 2; ++i)
    body();
  int calls = 1;
  for (;;) {
    Clock::time_point start = Clock::now();
    for (int i = 0; i < calls; ++i)
      body();
    double ms =
        std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (ms >= minMs || calls >= (1 << 20))
      break;
    calls = std::max(calls * 2, static_cast<int>(calls * minMs / (ms + 1e-3)));
  }
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) {
    Clock::time_point start = Clock::now();
    for (int i = 0; i < calls; ++i)
      body();
    times.push_back(
        std::chrono::duration<double>(Clock::now() - start).count() / calls);
  }
  std::sort(times.begin(), times.end());
  return {times.front(), times[times.size() / 2]};
}

/// Copies the upper triangle of a row-major s x s matrix into the lower
/// one, in cache-sized blocks: what a caller of ssyrk pays to get the full
/// matrix that the next sgemm or ssyrk reads. On the calling thread only.
void mirrorUpper(float *c, int64_t s) {
  constexpr int64_t kBlock = 64;
  for (int64_t ib = 0; ib < s; ib += kBlock)
    for (int64_t jb = 0; jb <= ib; jb += kBlock)
      for (int64_t i = ib; i < std::min(ib + kBlock, s); ++i)
        for (int64_t j = jb; j < std::min({jb + kBlock, s, i}); ++j)
          c[i * s + j] = c[j * s + i];
}

//===----------------------------------------------------------------------===//
// The products
//===----------------------------------------------------------------------===//

struct Options {
  std::string lib, name;
  std::vector<int> depths = {4, 6};
  int reps = 7;
  double minMs = 20;
};

struct Rates {
  double flops = 0;
  Timing time;
};

void printRow(const Options &o, int depth, const std::string &product,
              const char *op, int64_t m, int64_t n, int64_t k, const Rates &r) {
  std::printf("ROW lib=%s depth=%d product=%s op=%s m=%lld n=%lld k=%lld "
              "gflops=%.1f median_gflops=%.1f best_ms=%.4f\n",
              o.name.c_str(), depth, product.c_str(), op,
              static_cast<long long>(m), static_cast<long long>(n),
              static_cast<long long>(k), r.flops / r.time.best / 1e9,
              r.flops / r.time.median / 1e9, 1e3 * r.time.best);
  std::fflush(stdout);
}

/// A symmetric product F F^T, s x s, where F is the stored matrix `f` or,
/// with `transposed`, its transpose: by sgemm (with the given transposes of
/// its two operands, both `f`), by ssyrk, and by ssyrk plus the mirror.
/// Returns {sgemm, ssyrk, ssyrk + mirror} seconds.
std::vector<double> symmetricProduct(const Blas &blas, const Options &o,
                                     int depth, const std::string &product,
                                     const Matrix &f, bool transposed,
                                     int sgemmTransA, int sgemmTransB) {
  int64_t s = transposed ? f.cols : f.rows, inner = transposed ? f.rows : f.cols;
  int si = static_cast<int>(s), ki = static_cast<int>(inner);
  int ld = static_cast<int>(f.cols);
  Matrix c(s, s, 0, 0.0f);
  double flops = 2.0 * s * s * inner;
  auto left = [&](int64_t i, int64_t k) { return transposed ? f.at(k, i) : f.at(i, k); };
  auto right = [&](int64_t k, int64_t j) { return transposed ? f.at(k, j) : f.at(j, k); };

  auto sgemm = [&] {
    blas.sgemm(kRowMajor, sgemmTransA, sgemmTransB, si, si, ki, 1.0f,
               f.data.data(), ld, f.data.data(), ld, 0.0f, c.data.data(), si);
  };
  sgemm();
  if (!check(("sgemm " + product).c_str(), c, inner, left, right, false))
    std::exit(1);
  Rates g{flops, timeCalls(sgemm, o.reps, o.minMs)};
  printRow(o, depth, product, "sgemm", s, s, inner, g);

  auto ssyrk = [&] {
    blas.ssyrk(kRowMajor, kUpper, transposed ? kTrans : kNoTrans, si, ki, 1.0f,
               f.data.data(), ld, 0.0f, c.data.data(), si);
  };
  std::fill(c.data.begin(), c.data.end(), 0.0f);
  ssyrk();
  if (!check(("ssyrk " + product).c_str(), c, inner, left, right, true))
    std::exit(1);
  Rates y{flops, timeCalls(ssyrk, o.reps, o.minMs)};
  printRow(o, depth, product, "ssyrk", s, s, inner, y);
  Rates ym{flops, timeCalls([&] { ssyrk(); mirrorUpper(c.data.data(), s); },
                            o.reps, o.minMs)};
  printRow(o, depth, product, "ssyrk+mirror", s, s, inner, ym);
  return {g.time.best, y.time.best, ym.time.best};
}

/// The Gram matrix of an m x n matrix X: X X^T when m <= n, else X^T X.
std::vector<double> gram(const Blas &blas, const Options &o, int depth,
                         int64_t m, int64_t n) {
  bool tall = m > n;
  std::string product = std::string(tall ? "XtX" : "XXt") + "[" +
                        std::to_string(m) + "x" + std::to_string(n) + "]";
  return symmetricProduct(blas, o, depth, product, Matrix(m, n, 11, 0.05f),
                          tall, tall ? kTrans : kNoTrans,
                          tall ? kNoTrans : kTrans);
}

/// A A of a symmetric s x s A: sgemm as the step issues it (no transposes);
/// ssyrk computes it as A A^T.
std::vector<double> square(const Blas &blas, const Options &o, int depth,
                           int64_t s) {
  std::string product = "AA[" + std::to_string(s) + "x" + std::to_string(s) + "]";
  return symmetricProduct(blas, o, depth, product, symmetric(s, 21, 0.05f),
                          false, kNoTrans, kNoTrans);
}

/// The product of the symmetric s x s B with an m x n X: B X when m <= n,
/// else X B; by sgemm and by ssymm (which reads only B's upper triangle, so
/// B needs no mirror). Returns {sgemm, ssymm} seconds.
std::vector<double> apply(const Blas &blas, const Options &o, int depth,
                          int64_t m, int64_t n) {
  bool tall = m > n;
  int64_t s = std::min(m, n);
  Matrix b = symmetric(s, 31, 0.05f), x(m, n, 32, 0.05f), c(m, n, 33, 0.0f);
  double flops = 2.0 * m * n * s;
  int mi = static_cast<int>(m), ni = static_cast<int>(n), si = static_cast<int>(s);
  auto left = [&](int64_t i, int64_t k) { return tall ? x.at(i, k) : b.at(i, k); };
  auto right = [&](int64_t k, int64_t j) { return tall ? b.at(k, j) : x.at(k, j); };
  std::string product = std::string(tall ? "XB" : "BX") + "[" +
                        std::to_string(m) + "x" + std::to_string(n) + "]";

  auto sgemm = [&] {
    if (tall)
      blas.sgemm(kRowMajor, kNoTrans, kNoTrans, mi, ni, si, 1.0f,
                 x.data.data(), ni, b.data.data(), si, 0.0f, c.data.data(), ni);
    else
      blas.sgemm(kRowMajor, kNoTrans, kNoTrans, mi, ni, si, 1.0f,
                 b.data.data(), si, x.data.data(), ni, 0.0f, c.data.data(), ni);
  };
  sgemm();
  if (!check(("sgemm " + product).c_str(), c, s, left, right, false))
    std::exit(1);
  Rates g{flops, timeCalls(sgemm, o.reps, o.minMs)};
  printRow(o, depth, product, "sgemm", m, n, s, g);

  // ssymm must not read B's lower triangle: poison it, after the sgemm
  // check and before ssymm's.
  Matrix upperB = b;
  for (int64_t i = 0; i < s; ++i)
    for (int64_t j = 0; j < i; ++j)
      upperB.data[i * s + j] = 1e30f;
  auto ssymm = [&] {
    blas.ssymm(kRowMajor, tall ? kRight : kLeft, kUpper, mi, ni, 1.0f,
               upperB.data.data(), si, x.data.data(), ni, 0.0f, c.data.data(),
               ni);
  };
  std::fill(c.data.begin(), c.data.end(), 0.0f);
  ssymm();
  if (!check(("ssymm " + product).c_str(), c, s, left, right, false))
    std::exit(1);
  Rates y{flops, timeCalls(ssymm, o.reps, o.minMs)};
  printRow(o, depth, product, "ssymm", m, n, s, y);
  return {g.time.best, y.time.best};
}

Options parseOptions(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "blas_compare: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--lib") {
      o.lib = value();
    } else if (arg == "--name") {
      o.name = value();
    } else if (arg == "--depths") {
      o.depths.clear();
      std::stringstream list(value());
      for (std::string item; std::getline(list, item, ',');)
        o.depths.push_back(std::stoi(item));
    } else if (arg == "--reps") {
      o.reps = std::stoi(value());
    } else if (arg == "--min-ms") {
      o.minMs = std::stod(value());
    } else {
      std::fprintf(stderr, "usage: optgen-blas-compare --lib PATH [--name NAME] "
                           "[--depths 4,6] [--reps 7] [--min-ms 20]\n");
      std::exit(arg == "--help" || arg == "-h" ? 0 : 2);
    }
  }
  if (o.lib.empty()) {
    std::fprintf(stderr, "blas_compare: --lib PATH is required\n");
    std::exit(2);
  }
  if (o.name.empty())
    o.name = o.lib;
  return o;
}

} // namespace

int main(int argc, char **argv) {
  Options o = parseOptions(argc, argv);
  Blas blas;
  blas.handle = dlopen(o.lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!blas.handle) {
    std::fprintf(stderr, "blas_compare: cannot load %s: %s\n", o.lib.c_str(),
                 dlerror());
    return 1;
  }
  blas.sgemm = blas.symbol<SgemmFn>("cblas_sgemm");
  blas.ssyrk = blas.symbol<SsyrkFn>("cblas_ssyrk");
  blas.ssymm = blas.symbol<SsymmFn>("cblas_ssymm");
  if (!blas.sgemm || !blas.ssyrk || !blas.ssymm) {
    std::fprintf(stderr, "blas_compare: %s lacks cblas_sgemm, cblas_ssyrk or "
                         "cblas_ssymm\n", o.lib.c_str());
    return 1;
  }
  // Described after a first call: some libraries set up their threads then.
  std::vector<float> one(1, 1.0f), out(1);
  blas.sgemm(kRowMajor, kNoTrans, kNoTrans, 1, 1, 1, 1.0f, one.data(), 1,
             one.data(), 1, 0.0f, out.data(), 1);
  std::printf("LIB name=%s path=%s\n  %s\n", o.name.c_str(), o.lib.c_str(),
              describe(blas).c_str());

  for (int depth : o.depths) {
    int64_t n = 64 * depth;
    // Per matrix kind: {gram, square, apply} times of each way; per layer 4
    // [n, n] matrices, one [4n, n] and one [n, 4n].
    struct Kind {
      int64_t m, n;
      int count;
    };
    const Kind kinds[] = {{n, n, 4}, {4 * n, n, 1}, {n, 4 * n, 1}};
    // A A is n x n for every kind (s = n): timed once.
    std::vector<double> a = square(blas, o, depth, n);
    double flops = 0, allSgemm = 0, syrk = 0, syrkSymm = 0;
    for (const Kind &k : kinds) {
      int64_t s = std::min(k.m, k.n), l = std::max(k.m, k.n);
      std::vector<double> g = gram(blas, o, depth, k.m, k.n);
      std::vector<double> b = apply(blas, o, depth, k.m, k.n);
      flops += k.count * (4.0 * l * s * s + 2.0 * s * s * s);
      allSgemm += k.count * (g[0] + a[0] + b[0]);
      // ssyrk for both symmetric products, each mirrored (B = b A + c A^2 is
      // then formed on full matrices), sgemm for the product with X.
      syrk += k.count * (g[2] + a[2] + b[0]);
      // Only A mirrored (ssyrk of A reads all of it); B formed on the upper
      // triangle and applied by ssymm.
      syrkSymm += k.count * (g[2] + a[1] + b[1]);
    }
    auto mix = [&](const char *plan, double seconds) {
      std::printf("MIX lib=%s depth=%d plan=%s gflops=%.1f ms_per_layer=%.4f\n",
                  o.name.c_str(), depth, plan, flops / seconds / 1e9,
                  1e3 * seconds);
    };
    mix("sgemm", allSgemm);
    mix("ssyrk+sgemm", syrk);
    mix("ssyrk+ssymm", syrkSymm);
    std::fflush(stdout);
  }
  return 0;
}
