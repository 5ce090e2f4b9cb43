//===- MatrixKernels.cu - Elementwise maps over matrices ------------------===//

#include "MatrixKernels.h"

#include "optgen/runtime/CudaCheck.h"
#include "optgen/runtime/DeviceGemm.h"
#include "optgen/runtime/Error.h"
#include "optgen/runtime/Float16.h"
#include "optgen/runtime/Launch.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <string>
#include <type_traits>

namespace optgen::runtime {

namespace {

constexpr int kThreads = 256;
/// Blocks per member at most; each thread strides over the rest (as the
/// staging kernels do): enough to fill a GPU, few enough to launch cheaply.
constexpr int64_t kMaxBlocks = 4096;
/// gridDim.y's limit: members beyond it are strided over too.
constexpr int kMaxMemberBlocks = 65535;

/// What the map writes for each element `x` of src.
enum class Map { Copy, Scale, Zero, RoundBF16, RoundF16 };

/// An element of T as f32, and f32 rounded to nearest even into T.
__device__ float toFloat(float x) { return x; }
__device__ float toFloat(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ float toFloat(__half x) { return __half2float(x); }
template <typename T> __device__ T fromFloat(float x);
template <> __device__ float fromFloat<float>(float x) { return x; }
template <> __device__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <> __device__ __half fromFloat<__half>(float x) {
  return __float2half_rn(x);
}

/// Member blockIdx.y (and every gridDim.y-th after it), its elements
/// strided over the blocks of x. Each element is read and written by one
/// thread, so dst may be src's memory.
template <Map Op, typename T>
__global__ void mapKernel(T *dst, int64_t dstStride, const T *src,
                          int64_t srcStride, float factor, int64_t count,
                          int batch) {
  int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int m = blockIdx.y; m < batch; m += gridDim.y) {
    T *to = dst + m * dstStride;
    // Zero has no source (null): no pointer is formed from it.
    const T *from = Op == Map::Zero ? nullptr : src + m * srcStride;
    for (int64_t i =
             static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         i < count; i += step) {
      // A copy moves the bits: a multiplication by 1 would make a NaN's
      // payload the GPU's canonical one.
      if constexpr (Op == Map::Copy)
        to[i] = from[i];
      else if constexpr (Op == Map::Scale)
        to[i] = fromFloat<T>(factor * toFloat(from[i]));
      else if constexpr (Op == Map::Zero)
        to[i] = fromFloat<T>(0.0f);
      else if constexpr (Op == Map::RoundBF16)
        to[i] = roundToBF16(from[i]);
      else
        to[i] = roundToF16(from[i]);
    }
  }
}

template <Map Op, typename T>
cudaError_t launchMap(T *dst, int64_t dstStride, const T *src,
                      int64_t srcStride, float factor, int64_t count, int batch,
                      cudaStream_t stream) {
  if (count == 0 || batch == 0)
    return cudaSuccess;
  dim3 grid(static_cast<unsigned>(
                std::min((count + kThreads - 1) / kThreads, kMaxBlocks)),
            static_cast<unsigned>(std::min(batch, kMaxMemberBlocks)));
  launchKernel<mapKernel<Op, T>>(grid, kThreads, 0, stream, dst, dstStride,
                                 src, srcStride, factor, count, batch);
  return cudaGetLastError();
}

/// launchMap over elements of `dtype` (F32, BF16 or F16), at untyped
/// pointers.
template <Map Op>
cudaError_t launchMapOf(DType dtype, void *dst, int64_t dstStride,
                        const void *src, int64_t srcStride, float factor,
                        int64_t count, int batch, cudaStream_t stream) {
  auto as = [&](auto *typed) {
    using T = std::remove_pointer_t<decltype(typed)>;
    return launchMap<Op, T>(static_cast<T *>(dst), dstStride,
                            static_cast<const T *>(src), srcStride, factor,
                            count, batch, stream);
  };
  switch (dtype) {
  case DType::BF16:
    return as(static_cast<__nv_bfloat16 *>(nullptr));
  case DType::F16:
    return as(static_cast<__half *>(nullptr));
  default:
    return as(static_cast<float *>(nullptr));
  }
}

/// "copying 3 members of 35 BF16 elements, 40 apart", what deviceCopy and
/// deviceRound say of their work, should it fail.
std::string describeMembers(const char *doing, int64_t count, int64_t stride,
                            int batch, DType dtype) {
  return std::string(doing) + " " + std::to_string(batch) + " member" +
         (batch == 1 ? "" : "s") + " of " + std::to_string(count) + " " +
         std::string(dtypeName(dtype)) + " elements, " +
         std::to_string(stride) + " apart";
}

/// Throws Error unless `batch` members of `count` elements `stride` apart
/// are distinct memory.
void checkMembers(const char *doing, int64_t count, int64_t stride, int batch,
                  DType dtype) {
  if (count < 0 || batch < 0 || (batch > 1 && stride < count))
    throw Error(describeMembers(doing, count, stride, batch, dtype) +
                ": members must be distinct memory, none of a negative size");
}

} // namespace

cudaError_t launchScaled(void *dst, int64_t dstStride, const void *src,
                         int64_t srcStride, float factor, int64_t count,
                         int batch, DType dtype, cudaStream_t stream) {
  return src ? launchMapOf<Map::Scale>(dtype, dst, dstStride, src, srcStride,
                                       factor, count, batch, stream)
             : launchMapOf<Map::Zero>(dtype, dst, dstStride, nullptr, 0, 0.0f,
                                      count, batch, stream);
}

void deviceCopy(const DeviceMatrices &from, const DeviceMatrices &to,
                int batch, cudaStream_t stream) {
  const char *doing = "copying";
  int64_t count = from.rows * from.cols;
  if (from.rows != to.rows || from.cols != to.cols || from.dtype != to.dtype ||
      (from.dtype != DType::F32 && from.dtype != DType::BF16 &&
       from.dtype != DType::F16))
    throw Error(std::string(doing) + " " + std::to_string(from.rows) + "x" +
                std::to_string(from.cols) + " " +
                std::string(dtypeName(from.dtype)) + " matrices into " +
                std::to_string(to.rows) + "x" + std::to_string(to.cols) + " " +
                std::string(dtypeName(to.dtype)) +
                " ones: a copy keeps the shape and the dtype (F32, BF16 or "
                "F16)");
  checkMembers(doing, count, from.stride, batch, from.dtype);
  checkMembers(doing, count, to.stride, batch, to.dtype);
  cudaError_t result =
      launchMapOf<Map::Copy>(from.dtype, to.data, to.stride, from.data,
                             from.stride, 1.0f, count, batch, stream);
  if (result != cudaSuccess)
    throwCudaError(result, "the kernel's launch",
                   describeMembers(doing, count, from.stride, batch,
                                   from.dtype));
}

void deviceRound(float *data, int64_t count, int64_t stride, int batch,
                 DType to, cudaStream_t stream) {
  const char *doing = "rounding";
  if (to != DType::BF16 && to != DType::F16)
    throw Error(describeMembers(doing, count, stride, batch, DType::F32) +
                " to " + std::string(dtypeName(to)) +
                ": floats round to BF16 or F16");
  checkMembers(doing, count, stride, batch, DType::F32);
  cudaError_t result =
      to == DType::BF16
          ? launchMap<Map::RoundBF16, float>(data, stride, data, stride, 1.0f,
                                             count, batch, stream)
          : launchMap<Map::RoundF16, float>(data, stride, data, stride, 1.0f,
                                            count, batch, stream);
  if (result != cudaSuccess)
    throwCudaError(result, "the kernel's launch",
                   describeMembers(doing, count, stride, batch, DType::F32) +
                       " to " + std::string(dtypeName(to)));
}

} // namespace optgen::runtime
