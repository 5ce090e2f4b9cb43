//===- Tensor.h - Dtypes, tensor views and owning tensors -------*- C++ -*-===//
//
// The runtime's vocabulary for tensor data: the dtypes optgen computes in
// (named as safetensors spells them), the device memory lives on, a non-owning
// TensorView that generated steps and file readers hand around, and an owning
// Tensor (host memory) for tests, tools and reports. Element access goes
// through memcpy, so a view into a file buffer may be unaligned, and bf16/f16
// convert through Float16.h, the one rounding implementation.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_TENSOR_H
#define OPTGEN_RUNTIME_TENSOR_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace optgen::runtime {

enum class DType { F32, BF16, F16, F64, I64 };

/// Bytes per element: 4, 2, 2, 8, 8.
size_t dtypeSize(DType dtype);

/// The safetensors name: "F32", "BF16", "F16", "F64", "I64".
std::string_view dtypeName(DType dtype);

/// The dtype safetensors calls `name` (case-sensitive), or nullopt for a
/// name the runtime does not support.
std::optional<DType> parseDType(std::string_view name);

/// `shape` as it appears in messages: "[256, 8]", "[]" for a scalar.
std::string formatShape(const std::vector<int64_t> &shape);

/// The number of elements of `shape` (1 for a scalar), or nullopt when a
/// dimension is negative or the count overflows int64_t.
std::optional<int64_t> checkedNumel(const std::vector<int64_t> &shape);

/// The bytes a tensor of `dtype` and `shape` takes, or nullopt when a
/// dimension is negative or the size overflows int64_t.
std::optional<int64_t> checkedByteSize(DType dtype,
                                       const std::vector<int64_t> &shape);

/// Where a tensor's memory lives: the host's, or a CUDA device's (which only
/// an executor for that device may touch).
enum class Device { Host, Cuda };

/// "host", "cuda".
std::string_view deviceName(Device device);

/// A tensor somebody else owns: dense, row-major. `data` may be unaligned.
/// The element accessors below read and write host memory only.
struct TensorView {
  void *data = nullptr;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  Device device = Device::Host;

  /// The number of elements; throws Error for an invalid shape.
  int64_t numel() const;
  /// numel() * dtypeSize(dtype).
  size_t byteSize() const;
};

/// A tensor that owns its bytes (row-major, native byte order).
struct Tensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<unsigned char> bytes;

  /// A zero-filled tensor (all-zero bytes are 0.0 in every dtype); throws
  /// Error for an invalid shape.
  static Tensor zeros(DType dtype, std::vector<int64_t> shape);
  /// A copy of the data `view` points at.
  static Tensor copyOf(const TensorView &view);

  int64_t numel() const;
  TensorView view();
};

/// Element `index` (row-major) widened to float / double. bf16 and f16 widen
/// exactly; F64 and I64 round to the nearest float. Throws Error when `index`
/// is out of range.
float readFloat(const TensorView &view, int64_t index);
double readDouble(const TensorView &view, int64_t index);

/// Stores `value` into element `index`, rounded to the view's dtype to
/// nearest, ties to even. writeDouble into bf16/f16 rounds through float
/// first; into I64 it truncates toward zero and throws Error for NaN or a
/// value out of range. Throws Error when `index` is out of range.
void writeFloat(const TensorView &view, int64_t index, float value);
void writeDouble(const TensorView &view, int64_t index, double value);

/// Every element, widened as readFloat / readDouble do.
std::vector<float> toFloatVector(const TensorView &view);
std::vector<double> toDoubleVector(const TensorView &view);

/// Converts `count` elements of host memory from `from` to `to` (each F32,
/// BF16 or F16), in bulk: widening is exact, narrowing rounds as Float16.h
/// does; the same dtype is a copy. Both are aligned to their dtypes and do
/// not overlap unless they are the same memory of the same dtype. Throws
/// Error for another dtype.
void convertElements(const void *src, DType from, void *dst, DType to,
                     int64_t count);

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_TENSOR_H
