//===- DeviceGemm.cpp - Matrix products on a CUDA device ------------------===//

#include "optgen/runtime/DeviceGemm.h"

#include "MatrixKernels.h"
#include "optgen/runtime/CudaCheck.h"
#include "optgen/runtime/Error.h"

#include <memory>
#include <string>
#include <utility>

namespace optgen::runtime {

namespace {

/// "CONTEXT: CALL failed: CUBLAS_STATUS_NAME (its description)", as
/// CudaCheck.h says a failed CUDA runtime call.
[[noreturn]] void throwBlasError(cublasStatus_t status, const char *call,
                                 const std::string &context) {
  throw Error(context + ": " + call +
              " failed: " + cublasLtGetStatusName(status) + " (" +
              cublasLtGetStatusString(status) + ")");
}

std::string shapeText(int64_t rows, int64_t cols) {
  return std::to_string(rows) + "x" + std::to_string(cols);
}

/// The descriptors cuBLASLt takes, destroyed when dropped.
template <typename Opaque, cublasStatus_t (*Destroy)(Opaque *)>
struct Destroyer {
  void operator()(Opaque *descriptor) const { Destroy(descriptor); }
};
template <typename Opaque, cublasStatus_t (*Destroy)(Opaque *)>
using Owned = std::unique_ptr<Opaque, Destroyer<Opaque, Destroy>>;
using MatmulDesc = Owned<cublasLtMatmulDescOpaque_t, cublasLtMatmulDescDestroy>;
using Layout = Owned<cublasLtMatrixLayoutOpaque_t, cublasLtMatrixLayoutDestroy>;
using Preference =
    Owned<cublasLtMatmulPreferenceOpaque_t, cublasLtMatmulPreferenceDestroy>;

/// Whether some member of x and some member of y (`batch` of each) share
/// an element. Members of each lie at increasing addresses (stride >= 0)
/// and end in that order (one size), so one sweep over both lists finds
/// any overlap: of two members that do not overlap, the one ending first
/// overlaps no later member of the other list.
bool shareElements(const DeviceMatrices &x, const DeviceMatrices &y,
                   int batch) {
  int64_t xSize = x.rows * x.cols, ySize = y.rows * y.cols;
  if (xSize == 0 || ySize == 0)
    return false;
  // As addresses: the two may be different allocations.
  auto at = [](const DeviceMatrices &z, int member) {
    return reinterpret_cast<uintptr_t>(z.data) +
           static_cast<uintptr_t>(member * z.stride) * dtypeSize(z.dtype);
  };
  uintptr_t xBytes = static_cast<uintptr_t>(xSize) * dtypeSize(x.dtype);
  uintptr_t yBytes = static_cast<uintptr_t>(ySize) * dtypeSize(y.dtype);
  for (int i = 0, j = 0; i < batch && j < batch;) {
    uintptr_t xBegin = at(x, i), yBegin = at(y, j);
    uintptr_t xEnd = xBegin + xBytes, yEnd = yBegin + yBytes;
    if (xBegin < yEnd && yBegin < xEnd)
      return true;
    if (xEnd <= yEnd)
      ++i;
    else
      ++j;
  }
  return false;
}

/// The alignment cuBLASLt may assume of every member of `x`: the largest
/// power of two, up to its default of 256 bytes, dividing the first
/// member's address and (with more than one member) the stride in bytes.
/// Told less than the default, its heuristic picks only algorithms that
/// load such memory correctly.
uint32_t alignmentOf(const DeviceMatrices &x, int batch) {
  uintptr_t bits = reinterpret_cast<uintptr_t>(x.data) | uintptr_t(256);
  if (batch > 1)
    bits |= static_cast<uintptr_t>(x.stride) * dtypeSize(x.dtype);
  return static_cast<uint32_t>(bits & (~bits + 1)); // the lowest bit set
}

/// cuBLASLt's name of `dtype`, one of those a product reads or writes.
cudaDataType_t cudaTypeOf(DType dtype) {
  switch (dtype) {
  case DType::BF16:
    return CUDA_R_16BF;
  case DType::F16:
    return CUDA_R_16F;
  default:
    return CUDA_R_32F;
  }
}

bool isProductDType(DType dtype) {
  return dtype == DType::F32 || dtype == DType::BF16 || dtype == DType::F16;
}

/// One deviceGemm call: its shapes and what to say when it fails.
struct Product {
  std::string_view what;
  int64_t m, n, k;
  int batch;

  /// "3 matrix products of 5x7 and 7x4 into 5x4"
  std::string shapes() const {
    return std::to_string(batch) + " matrix product" + (batch == 1 ? "" : "s") +
           " of " + shapeText(m, k) + " and " + shapeText(k, n) + " into " +
           shapeText(m, n);
  }
  /// "WHAT: 3 matrix products of ...", what a failed call reports.
  std::string about() const { return std::string(what) + ": " + shapes(); }
  [[noreturn]] void fail(const std::string &message) const {
    throw Error(std::string(what) + ": " + message);
  }
  void check(cublasStatus_t status, const char *call) const {
    if (status != CUBLAS_STATUS_SUCCESS)
      throwBlasError(status, call, about());
  }
  /// cuBLASLt's column-major view of x: the row-major rows x cols is its
  /// transpose, cols x rows with a leading dimension of cols.
  Layout layout(const DeviceMatrices &x) const {
    cublasLtMatrixLayout_t raw = nullptr;
    check(cublasLtMatrixLayoutCreate(&raw, cudaTypeOf(x.dtype),
                                     static_cast<uint64_t>(x.cols),
                                     static_cast<uint64_t>(x.rows), x.cols),
          "cublasLtMatrixLayoutCreate");
    Layout owned(raw);
    int32_t count = batch;
    int64_t stride = x.stride;
    check(cublasLtMatrixLayoutSetAttribute(
              raw, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
          "cublasLtMatrixLayoutSetAttribute");
    check(cublasLtMatrixLayoutSetAttribute(
              raw, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
              sizeof stride),
          "cublasLtMatrixLayoutSetAttribute");
    return owned;
  }
};

/// This thread's stream-capture mode relaxed for a scope. cuBLASLt's
/// heuristic query enqueues nothing, but may make CUDA calls that the
/// executor's thread-local capture forbids (some cuBLASLt versions fail the
/// query while a stream captures); relaxed, they run, and the capture goes
/// on.
class RelaxedCapture {
public:
  explicit RelaxedCapture(const Product &product) {
    cudaError_t result = cudaThreadExchangeStreamCaptureMode(&mode_);
    if (result != cudaSuccess)
      throwCudaError(result, "cudaThreadExchangeStreamCaptureMode",
                     product.about());
  }
  ~RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  RelaxedCapture(const RelaxedCapture &) = delete;
  RelaxedCapture &operator=(const RelaxedCapture &) = delete;

private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

} // namespace

DeviceBlas DeviceBlas::create(size_t workspaceBytes) {
  DeviceBlas blas;
  cublasStatus_t status = cublasLtCreate(&blas.handle_);
  if (status != CUBLAS_STATUS_SUCCESS)
    throwBlasError(status, "cublasLtCreate", "creating a cuBLASLt handle");
  if (workspaceBytes)
    OPTGEN_CUDA_CHECK(cudaMalloc(&blas.workspace_, workspaceBytes),
                      "allocating " + std::to_string(workspaceBytes) +
                          " bytes of cuBLASLt workspace");
  blas.workspaceBytes_ = workspaceBytes;
  return blas;
}

DeviceBlas::DeviceBlas(DeviceBlas &&other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      workspace_(std::exchange(other.workspace_, nullptr)),
      workspaceBytes_(std::exchange(other.workspaceBytes_, 0)) {}

DeviceBlas &DeviceBlas::operator=(DeviceBlas &&other) noexcept {
  if (this != &other) {
    release();
    handle_ = std::exchange(other.handle_, nullptr);
    workspace_ = std::exchange(other.workspace_, nullptr);
    workspaceBytes_ = std::exchange(other.workspaceBytes_, 0);
  }
  return *this;
}

DeviceBlas::~DeviceBlas() { release(); }

void DeviceBlas::release() noexcept {
  // Failures cannot be reported here; a fault of the device was reported by
  // the call that met it.
  if (workspace_)
    cudaFree(workspace_);
  if (handle_)
    cublasLtDestroy(handle_);
  handle_ = nullptr;
  workspace_ = nullptr;
  workspaceBytes_ = 0;
}

void deviceGemm(const DeviceBlas &blas, const DeviceMatrices &a,
                bool transposeA, const DeviceMatrices &b, bool transposeB,
                float alpha, const DeviceMatrices *c, float beta,
                const DeviceMatrices &out, int batch, cudaStream_t stream,
                std::string_view what) {
  // Everything the host can check, before any CUDA call.
  int64_t m = transposeA ? a.cols : a.rows;
  int64_t k = transposeA ? a.rows : a.cols;
  int64_t kb = transposeB ? b.cols : b.rows;
  int64_t n = transposeB ? b.rows : b.cols;
  Product product{what, m, n, k, batch};
  for (const DeviceMatrices *x : {&a, &b, c, &out})
    if (x && (x->rows < 0 || x->cols < 0 || x->stride < 0))
      product.fail("matrices of " + shapeText(x->rows, x->cols) + ", " +
                   std::to_string(x->stride) + " elements apart");
  // cuBLASLt multiplies 16-bit inputs into their type or f32, f32 into f32.
  if (!isProductDType(a.dtype) || b.dtype != a.dtype ||
      (out.dtype != a.dtype && out.dtype != DType::F32) ||
      (c && c->dtype != out.dtype))
    product.fail(std::string("a product of ") +
                 std::string(dtypeName(a.dtype)) + " and " +
                 std::string(dtypeName(b.dtype)) + " matrices into " +
                 std::string(dtypeName(out.dtype)) +
                 (c ? " accumulating " + std::string(dtypeName(c->dtype))
                    : std::string()) +
                 ": the operands hold one of F32, BF16 and F16, the result "
                 "theirs or F32, and what it accumulates the result's");
  if (batch < 0)
    product.fail("a batch of " + std::to_string(batch) + " matrix products");
  // The host's gemm says the same of the same mistakes.
  if (k != kb || out.rows != m || out.cols != n)
    product.fail("matrix product of " + shapeText(m, k) + " and " +
                 shapeText(kb, n) + " into " + shapeText(out.rows, out.cols));
  if (c && (c->rows != m || c->cols != n))
    product.fail("matrix product " + shapeText(m, n) + " accumulating " +
                 shapeText(c->rows, c->cols));
  if (batch > 1 && out.stride < m * n)
    product.fail(product.shapes() + ", " + std::to_string(out.stride) +
                 " elements apart: results overlap");
  for (const DeviceMatrices *operand : {&a, &b})
    if (shareElements(out, *operand, batch))
      product.fail(product.shapes() +
                   ": the result overlaps an operand it is computed from");
  // Accumulating in place: C is D itself, which cuBLASLt allows when their
  // layouts are one.
  bool inPlace =
      c && c->data == out.data && (batch <= 1 || c->stride == out.stride);
  if (c && !inPlace && shareElements(out, *c, batch))
    product.fail(product.shapes() +
                 ": the result overlaps the matrices it accumulates (it may "
                 "be their memory, at their stride)");
  if (batch == 0 || m == 0 || n == 0)
    return;

  if (k == 0) {
    // Nothing to multiply: the result is beta * c or 0, as the host's gemm
    // computes it too (cuBLASLt is not asked for an empty inner product).
    cudaError_t result =
        launchScaled(out.data, out.stride, c ? c->data : nullptr,
                     c ? c->stride : 0, beta, m * n, batch, out.dtype, stream);
    if (result != cudaSuccess)
      throwCudaError(result, "the kernel's launch", product.about());
    return;
  }
  if (!blas.handle())
    product.fail(product.shapes() +
                 ": no cuBLASLt handle (an empty DeviceBlas)");

  // cuBLASLt is column-major, where each row-major matrix reads as its
  // transpose: out^T = op(b)^T @ op(a)^T, so b is cuBLASLt's A and a its B,
  // each with its own transposition.
  cublasLtMatmulDesc_t rawDesc = nullptr;
  product.check(
      cublasLtMatmulDescCreate(&rawDesc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
      "cublasLtMatmulDescCreate");
  MatmulDesc desc(rawDesc);
  cublasOperation_t opA = transposeB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = transposeA ? CUBLAS_OP_T : CUBLAS_OP_N;
  product.check(cublasLtMatmulDescSetAttribute(
                    rawDesc, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof opA),
                "cublasLtMatmulDescSetAttribute");
  product.check(cublasLtMatmulDescSetAttribute(
                    rawDesc, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof opB),
                "cublasLtMatmulDescSetAttribute");
  Layout layoutA = product.layout(b), layoutB = product.layout(a);
  Layout layoutD = product.layout(out);
  // In place, or without c (beta 0: C is never read), C is D itself.
  const DeviceMatrices &accumulated = c ? *c : out;
  Layout layoutC = c && !inPlace ? product.layout(*c) : nullptr;
  cublasLtMatrixLayout_t cLayout = layoutC ? layoutC.get() : layoutD.get();
  if (!c)
    beta = 0.0f;

  cublasLtMatmulPreference_t rawPreference = nullptr;
  product.check(cublasLtMatmulPreferenceCreate(&rawPreference),
                "cublasLtMatmulPreferenceCreate");
  Preference preference(rawPreference);
  uint64_t workspaceBytes = blas.workspaceBytes();
  product.check(cublasLtMatmulPreferenceSetAttribute(
                    rawPreference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                    &workspaceBytes, sizeof workspaceBytes),
                "cublasLtMatmulPreferenceSetAttribute");
  const std::pair<cublasLtMatmulPreferenceAttributes_t, const DeviceMatrices *>
      alignments[] = {
          {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &b},
          {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &a},
          {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &accumulated},
          {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &out}};
  for (const auto &[attribute, matrices] : alignments) {
    uint32_t bytes = alignmentOf(*matrices, batch);
    product.check(cublasLtMatmulPreferenceSetAttribute(rawPreference, attribute,
                                                       &bytes, sizeof bytes),
                  "cublasLtMatmulPreferenceSetAttribute");
  }

  cublasLtMatmulHeuristicResult_t heuristic = {};
  int found = 0;
  {
    RelaxedCapture relaxed(product);
    product.check(
        cublasLtMatmulAlgoGetHeuristic(blas.handle(), rawDesc, layoutA.get(),
                                       layoutB.get(), cLayout, layoutD.get(),
                                       rawPreference, 1, &heuristic, &found),
        "cublasLtMatmulAlgoGetHeuristic");
  }
  if (found == 0)
    product.fail(product.shapes() +
                 ": cublasLtMatmulAlgoGetHeuristic found no algorithm");
  product.check(cublasLtMatmul(blas.handle(), rawDesc, &alpha, b.data,
                               layoutA.get(), a.data, layoutB.get(), &beta,
                               accumulated.data, cLayout, out.data,
                               layoutD.get(), &heuristic.algo, blas.workspace(),
                               blas.workspaceBytes(), stream),
                "cublasLtMatmul");
}

} // namespace optgen::runtime
