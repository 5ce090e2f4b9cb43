//===- CublasLt.cpp - cuBLASLt of the emulated device ---------------------===//

#include "Emulator.h"

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>

namespace optgen::emu {
namespace {

/// Per status, the emulator's account of its last occurrence on this
/// thread, which cublasLtGetStatusString appends.
thread_local std::map<int, std::string> blasMessages;
thread_local std::string blasText;

struct BlasError {
  cublasStatus_t status;
  std::string message;
};
[[noreturn]] void blasFail(cublasStatus_t status, std::string message) {
  throw BlasError{status, std::move(message)};
}

cublasStatus_t blasApi(const std::function<void()> &body) {
  try {
    body();
    return CUBLAS_STATUS_SUCCESS;
  } catch (const BlasError &error) {
    blasMessages[error.status] = error.message;
    return error.status;
  } catch (const ApiError &error) {
    blasMessages[CUBLAS_STATUS_EXECUTION_FAILED] = error.message;
    return CUBLAS_STATUS_EXECUTION_FAILED;
  }
}

size_t sizeOf(cudaDataType_t type) {
  switch (type) {
  case CUDA_R_32F:
    return 4;
  case CUDA_R_16F:
  case CUDA_R_16BF:
    return 2;
  default:
    return 0;
  }
}

const char *typeName(cudaDataType_t type) {
  switch (type) {
  case CUDA_R_32F:
    return "CUDA_R_32F";
  case CUDA_R_16F:
    return "CUDA_R_16F";
  case CUDA_R_16BF:
    return "CUDA_R_16BF";
  case CUDA_R_64F:
    return "CUDA_R_64F";
  default:
    return "an unemulated cudaDataType_t";
  }
}

float load(const void *base, cudaDataType_t type, size_t index) {
  switch (type) {
  case CUDA_R_16BF:
    return __bfloat162float(static_cast<const __nv_bfloat16 *>(base)[index]);
  case CUDA_R_16F:
    return __half2float(static_cast<const __half *>(base)[index]);
  default:
    return static_cast<const float *>(base)[index];
  }
}

void store(void *base, cudaDataType_t type, size_t index, float value) {
  switch (type) {
  case CUDA_R_16BF:
    static_cast<__nv_bfloat16 *>(base)[index] = __float2bfloat16_rn(value);
    break;
  case CUDA_R_16F:
    static_cast<__half *>(base)[index] = __float2half_rn(value);
    break;
  default:
    static_cast<float *>(base)[index] = value;
  }
}

} // namespace
} // namespace optgen::emu

using namespace optgen::emu;

struct cublasLtContext {
  int device;
};
struct cublasLtMatmulDescOpaque_t {
  cublasComputeType_t compute;
  cudaDataType_t scale;
  cublasOperation_t transA = CUBLAS_OP_N, transB = CUBLAS_OP_N;
};
struct cublasLtMatrixLayoutOpaque_t {
  cudaDataType_t type;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch = 1;
  int64_t stride = 0;
  /// The elements member `m`'s (i, j) is from the layout's start.
  size_t at(int m, uint64_t i, uint64_t j) const {
    return static_cast<size_t>(m * stride + static_cast<int64_t>(j) * ld +
                               static_cast<int64_t>(i));
  }
  /// Bytes from the first element to one past the last.
  size_t extent() const {
    if (rows == 0 || cols == 0 || batch == 0)
      return 0;
    return (at(batch - 1, rows - 1, cols - 1) + 1) * sizeOf(type);
  }
};
struct cublasLtMatmulPreferenceOpaque_t {
  uint64_t workspace = 0;
  uint32_t alignment[4] = {256, 256, 256, 256}; // A, B, C, D
};

namespace {

/// What the heuristic records in an algorithm: the alignments it assumed.
struct Chosen {
  uint64_t magic;
  uint32_t alignment[4];
};
constexpr uint64_t kAlgoMagic = 0x6f707467656e4c74; // "optgenLt"

template <typename T> T read(const void *value, size_t size, const char *what) {
  if (!value || size != sizeof(T))
    blasFail(CUBLAS_STATUS_INVALID_VALUE,
             std::string(what) + ": a value of " + std::to_string(size) +
                 " bytes where " + std::to_string(sizeof(T)) +
                 " are expected");
  T result;
  std::memcpy(&result, value, sizeof result);
  return result;
}

/// Why cuBLASLt has no algorithm for these types (empty when it has one).
std::string unsupported(const cublasLtMatmulDescOpaque_t &desc,
                        const cublasLtMatrixLayoutOpaque_t &a,
                        const cublasLtMatrixLayoutOpaque_t &b,
                        const cublasLtMatrixLayoutOpaque_t &c,
                        const cublasLtMatrixLayoutOpaque_t &d) {
  if (desc.compute != CUBLAS_COMPUTE_32F || desc.scale != CUDA_R_32F)
    return "the emulator multiplies with CUBLAS_COMPUTE_32F and CUDA_R_32F "
           "scales only";
  if (sizeOf(a.type) == 0 || a.type != b.type)
    return std::string("A is ") + typeName(a.type) + " and B " +
           typeName(b.type) + ": they hold one of CUDA_R_32F, CUDA_R_16F, "
                              "CUDA_R_16BF";
  if (c.type != d.type)
    return "C and D differ in type";
  if (d.type != a.type && d.type != CUDA_R_32F)
    return std::string("D is ") + typeName(d.type) + " for " +
           typeName(a.type) + " operands: cuBLASLt writes theirs or CUDA_R_32F";
  return "";
}

uint32_t alignmentOf(const void *pointer) {
  uintptr_t bits = reinterpret_cast<uintptr_t>(pointer) | uintptr_t(256);
  return static_cast<uint32_t>(bits & (~bits + 1));
}

} // namespace

const char *cublasLtGetStatusName(cublasStatus_t status) {
  switch (status) {
  case CUBLAS_STATUS_SUCCESS:
    return "CUBLAS_STATUS_SUCCESS";
  case CUBLAS_STATUS_NOT_INITIALIZED:
    return "CUBLAS_STATUS_NOT_INITIALIZED";
  case CUBLAS_STATUS_ALLOC_FAILED:
    return "CUBLAS_STATUS_ALLOC_FAILED";
  case CUBLAS_STATUS_INVALID_VALUE:
    return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_ARCH_MISMATCH:
    return "CUBLAS_STATUS_ARCH_MISMATCH";
  case CUBLAS_STATUS_MAPPING_ERROR:
    return "CUBLAS_STATUS_MAPPING_ERROR";
  case CUBLAS_STATUS_EXECUTION_FAILED:
    return "CUBLAS_STATUS_EXECUTION_FAILED";
  case CUBLAS_STATUS_INTERNAL_ERROR:
    return "CUBLAS_STATUS_INTERNAL_ERROR";
  case CUBLAS_STATUS_NOT_SUPPORTED:
    return "CUBLAS_STATUS_NOT_SUPPORTED";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

const char *cublasLtGetStatusString(cublasStatus_t status) {
  switch (status) {
  case CUBLAS_STATUS_SUCCESS:
    blasText = "success";
    break;
  case CUBLAS_STATUS_NOT_INITIALIZED:
    blasText = "the library was not initialized";
    break;
  case CUBLAS_STATUS_ALLOC_FAILED:
    blasText = "the resource allocation failed";
    break;
  case CUBLAS_STATUS_INVALID_VALUE:
    blasText = "an invalid numeric value was used as an argument";
    break;
  case CUBLAS_STATUS_NOT_SUPPORTED:
    blasText = "the functionality requested is not supported";
    break;
  case CUBLAS_STATUS_EXECUTION_FAILED:
    blasText = "the GPU program failed to execute";
    break;
  default:
    blasText = "an internal operation failed";
  }
  auto message = blasMessages.find(status);
  if (message != blasMessages.end())
    blasText += " [emulated device: " + message->second + "]";
  return blasText.c_str();
}

cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle) {
  return blasApi([&] {
    if (!handle)
      blasFail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtCreate: a null handle");
    Device &here = currentDevice();
    checkSticky(here);
    *handle = new cublasLtContext{here.index};
  });
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  return blasApi([&] {
    if (!handle)
      blasFail(CUBLAS_STATUS_NOT_INITIALIZED, "cublasLtDestroy: a null handle");
    delete handle;
  });
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc,
                                        cublasComputeType_t computeType,
                                        cudaDataType_t scaleType) {
  return blasApi([&] {
    if (!desc)
      blasFail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmulDescCreate: a null desc");
    *desc = new cublasLtMatmulDescOpaque_t{computeType, scaleType};
  });
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete desc;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(
    cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute,
    const void *value, size_t size) {
  return blasApi([&] {
    if (!desc)
      blasFail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmulDescSetAttribute: a null desc");
    auto op = read<cublasOperation_t>(value, size, "a transpose");
    if (op != CUBLAS_OP_N && op != CUBLAS_OP_T)
      blasFail(CUBLAS_STATUS_INVALID_VALUE,
               "the emulator transposes with CUBLAS_OP_N and CUBLAS_OP_T");
    if (attribute == CUBLASLT_MATMUL_DESC_TRANSA)
      desc->transA = op;
    else if (attribute == CUBLASLT_MATMUL_DESC_TRANSB)
      desc->transB = op;
    else
      blasFail(CUBLAS_STATUS_INVALID_VALUE,
               "a matmul descriptor attribute the emulator does not know");
  });
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout,
                                          cudaDataType_t type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  return blasApi([&] {
    if (!layout)
      blasFail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatrixLayoutCreate: a null layout");
    // Column-major: each column's rows elements fit in ld.
    if (ld < static_cast<int64_t>(rows) || ld < 1)
      blasFail(CUBLAS_STATUS_INVALID_VALUE,
               "a layout of " + std::to_string(rows) + " rows with a leading "
               "dimension of " + std::to_string(ld) +
                   " (column-major: at least the rows, and 1)");
    *layout = new cublasLtMatrixLayoutOpaque_t{type, rows, cols, ld};
  });
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete layout;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(
    cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attribute,
    const void *value, size_t size) {
  return blasApi([&] {
    if (!layout)
      blasFail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatrixLayoutSetAttribute: a null layout");
    if (attribute == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT) {
      layout->batch = read<int32_t>(value, size, "a batch count");
      if (layout->batch < 1)
        blasFail(CUBLAS_STATUS_INVALID_VALUE, "a batch count below 1");
    } else if (attribute == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET) {
      layout->stride = read<int64_t>(value, size, "a batch stride");
    } else {
      blasFail(CUBLAS_STATUS_INVALID_VALUE,
               "a matrix layout attribute the emulator does not know");
    }
  });
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref) {
  return blasApi([&] {
    if (!pref)
      blasFail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmulPreferenceCreate: a null preference");
    *pref = new cublasLtMatmulPreferenceOpaque_t;
  });
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete pref;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(
    cublasLtMatmulPreference_t pref,
    cublasLtMatmulPreferenceAttributes_t attribute, const void *value,
    size_t size) {
  return blasApi([&] {
    if (!pref)
      blasFail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmulPreferenceSetAttribute: a null preference");
    switch (attribute) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
      pref->workspace = read<uint64_t>(value, size, "a workspace size");
      return;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
      pref->alignment[attribute - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES] =
          read<uint32_t>(value, size, "an alignment");
      return;
    }
    blasFail(CUBLAS_STATUS_INVALID_VALUE,
             "a preference attribute the emulator does not know");
  });
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
    cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
    cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
    cublasLtMatmulPreference_t preference, int requested,
    cublasLtMatmulHeuristicResult_t *results, int *returned) {
  return blasApi([&] {
    if (!handle || !desc || !a || !b || !c || !d || !preference ||
        requested < 1 || !results || !returned)
      blasFail(CUBLAS_STATUS_INVALID_VALUE,
               "cublasLtMatmulAlgoGetHeuristic: a null argument, or fewer "
               "than 1 result requested");
    *returned = 0;
    std::string why = unsupported(*desc, *a, *b, *c, *d);
    if (!why.empty())
      blasFail(CUBLAS_STATUS_NOT_SUPPORTED,
               "no algorithm for these types: " + why);
    for (int i = 0; i < 4; ++i) {
      size_t element = sizeOf(i < 2 ? a->type : d->type);
      uint32_t bytes = preference->alignment[i];
      if (bytes < element || (bytes & (bytes - 1)))
        blasFail(CUBLAS_STATUS_NOT_SUPPORTED,
                 "no algorithm for an operand aligned to " +
                     std::to_string(bytes) + " bytes (its elements are " +
                     std::to_string(element) + " bytes)");
    }
    std::memset(&results[0], 0, sizeof results[0]);
    Chosen chosen{kAlgoMagic, {}};
    std::memcpy(chosen.alignment, preference->alignment, sizeof chosen.alignment);
    static_assert(sizeof chosen <= sizeof results[0].algo.data);
    std::memcpy(results[0].algo.data, &chosen, sizeof chosen);
    results[0].workspaceSize = 0;
    results[0].state = CUBLAS_STATUS_SUCCESS;
    results[0].wavesCount = 1.0f;
    *returned = 1;
  });
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle,
                              cublasLtMatmulDesc_t desc, const void *alpha,
                              const void *a, cublasLtMatrixLayout_t aLayout,
                              const void *b, cublasLtMatrixLayout_t bLayout,
                              const void *beta, const void *c,
                              cublasLtMatrixLayout_t cLayout, void *d,
                              cublasLtMatrixLayout_t dLayout,
                              const cublasLtMatmulAlgo_t *algo, void *workspace,
                              size_t workspaceBytes, cudaStream_t streamHandle) {
  return blasApi([&] {
    if (!handle || !desc || !alpha || !beta || !aLayout || !bLayout ||
        !cLayout || !dLayout || !algo)
      blasFail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmul: a null argument");
    Chosen chosen;
    std::memcpy(&chosen, algo->data, sizeof chosen);
    if (chosen.magic != kAlgoMagic)
      blasFail(CUBLAS_STATUS_INVALID_VALUE,
               "cublasLtMatmul: an algorithm cublasLtMatmulAlgoGetHeuristic "
               "did not return");
    std::string why = unsupported(*desc, *aLayout, *bLayout, *cLayout, *dLayout);
    if (!why.empty())
      blasFail(CUBLAS_STATUS_NOT_SUPPORTED, "cublasLtMatmul: " + why);
    const cublasLtMatrixLayoutOpaque_t A = *aLayout, B = *bLayout, C = *cLayout,
                                       D = *dLayout;
    bool ta = desc->transA == CUBLAS_OP_T, tb = desc->transB == CUBLAS_OP_T;
    uint64_t m = ta ? A.cols : A.rows, k = ta ? A.rows : A.cols;
    uint64_t kb = tb ? B.cols : B.rows, n = tb ? B.rows : B.cols;
    if (k != kb || D.rows != m || D.cols != n || C.rows != m || C.cols != n)
      blasFail(CUBLAS_STATUS_INVALID_VALUE,
               "cublasLtMatmul: op(A) is " + std::to_string(m) + "x" +
                   std::to_string(k) + ", op(B) " + std::to_string(kb) + "x" +
                   std::to_string(n) + ", C " + std::to_string(C.rows) + "x" +
                   std::to_string(C.cols) + " and D " + std::to_string(D.rows) +
                   "x" + std::to_string(D.cols) + ": they do not multiply");
    int batch = D.batch;
    if (A.batch != batch || B.batch != batch || C.batch != batch)
      blasFail(CUBLAS_STATUS_INVALID_VALUE,
               "cublasLtMatmul: the layouts' batch counts differ");
    if (c == d && (C.ld != D.ld || C.stride != D.stride || C.type != D.type))
      blasFail(CUBLAS_STATUS_INVALID_VALUE,
               "cublasLtMatmul in place (C is D) with layouts that differ: "
               "in place needs C's layout to be D's");
    // The pointers: device memory of the handle's device, aligned as the
    // algorithm was chosen for, D overlapping neither A nor B.
    const void *pointers[4] = {a, b, c, d};
    const cublasLtMatrixLayoutOpaque_t *layouts[4] = {&A, &B, &C, &D};
    const char *names[4] = {"A", "B", "C", "D"};
    std::shared_ptr<Stream> stream = streamOf(streamHandle);
    if (stream->device.index != handle->device)
      blasFail(CUBLAS_STATUS_INVALID_VALUE,
               "cublasLtMatmul on " + stream->name() +
                   " with a handle of device " + std::to_string(handle->device));
    float alphaValue = *static_cast<const float *>(alpha);
    float betaValue = *static_cast<const float *>(beta);
    for (int i = 0; i < 4; ++i) {
      if (i == 2 && betaValue == 0.0f)
        continue; // C is not read
      size_t bytes = layouts[i]->extent();
      if (bytes == 0)
        continue;
      try {
        requireDeviceMemory(pointers[i], bytes, handle->device,
                            std::string("cublasLtMatmul's ") + names[i]);
      } catch (const ApiError &error) {
        blasFail(CUBLAS_STATUS_INVALID_VALUE, error.message);
      }
      if (alignmentOf(pointers[i]) < chosen.alignment[i])
        blasFail(CUBLAS_STATUS_INVALID_VALUE,
                 std::string("cublasLtMatmul's ") + names[i] +
                     " is aligned to " + std::to_string(alignmentOf(pointers[i])) +
                     " bytes; the algorithm was chosen for " +
                     std::to_string(chosen.alignment[i]) +
                     " (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*)");
    }
    // Member by member (a batch's members may interleave with another
    // matrix's in one workspace): D's members against A's and B's.
    auto overlaps = [&](int i) {
      const cublasLtMatrixLayoutOpaque_t &x = *layouts[i];
      size_t xSize = sizeOf(x.type), dSize = sizeOf(D.type);
      size_t xSpan = (x.at(0, x.rows - 1, x.cols - 1) + 1) * xSize;
      size_t dSpan = (D.at(0, D.rows - 1, D.cols - 1) + 1) * dSize;
      uintptr_t xBase = reinterpret_cast<uintptr_t>(pointers[i]);
      uintptr_t dBase = reinterpret_cast<uintptr_t>(d);
      for (int p = 0; p < batch; ++p)
        for (int q = 0; q < batch; ++q) {
          uintptr_t xAt = xBase + static_cast<uintptr_t>(p * x.stride) * xSize;
          uintptr_t dAt = dBase + static_cast<uintptr_t>(q * D.stride) * dSize;
          if (xAt < dAt + dSpan && dAt < xAt + xSpan)
            return true;
        }
      return false;
    };
    if (D.extent() && (overlaps(0) || overlaps(1)))
      blasFail(CUBLAS_STATUS_INVALID_VALUE,
               "cublasLtMatmul: a member of D overlaps a member of A or B, "
               "which it is computed from");
    if (workspaceBytes && !workspace)
      blasFail(CUBLAS_STATUS_INVALID_VALUE,
               "cublasLtMatmul: workspace bytes without a workspace");
    if (workspaceBytes) {
      try {
        requireDeviceMemory(workspace, workspaceBytes, handle->device,
                            "cublasLtMatmul's workspace");
      } catch (const ApiError &error) {
        blasFail(CUBLAS_STATUS_INVALID_VALUE, error.message);
      }
    }
    // Host scalars are read now; a captured product replays them as they
    // were.
    enqueue(*stream,
            Operation{"cublasLtMatmul of " + std::to_string(batch) + " x " +
                          std::to_string(m) + "x" + std::to_string(k) + " @ " +
                          std::to_string(k) + "x" + std::to_string(n),
                      [=] {
                        std::vector<float> column(m);
                        for (int member = 0; member < batch; ++member)
                          for (uint64_t j = 0; j < n; ++j) {
                            std::fill(column.begin(), column.end(), 0.0f);
                            for (uint64_t p = 0; p < k; ++p) {
                              float bpj = load(b, B.type,
                                               tb ? B.at(member, j, p)
                                                  : B.at(member, p, j));
                              for (uint64_t i = 0; i < m; ++i)
                                column[i] += load(a, A.type,
                                                  ta ? A.at(member, p, i)
                                                     : A.at(member, i, p)) *
                                             bpj;
                            }
                            for (uint64_t i = 0; i < m; ++i) {
                              float value = alphaValue * column[i];
                              if (betaValue != 0.0f)
                                value += betaValue *
                                         load(c, C.type, C.at(member, i, j));
                              store(d, D.type, D.at(member, i, j), value);
                            }
                          }
                      },
                      nullptr,
                      {}});
  });
}
