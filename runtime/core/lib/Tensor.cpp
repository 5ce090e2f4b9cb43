//===- Tensor.cpp - Dtypes, tensor views and owning tensors ---------------===//

#include "optgen/runtime/Tensor.h"

#include "optgen/runtime/Error.h"
#include "optgen/runtime/Float16.h"

#include <cstring>

namespace optgen::runtime {

size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return 4;
  case DType::BF16:
  case DType::F16:
    return 2;
  case DType::F64:
  case DType::I64:
    return 8;
  }
  throw Error("invalid DType value " + std::to_string(static_cast<int>(dtype)));
}

std::string_view dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "F32";
  case DType::BF16:
    return "BF16";
  case DType::F16:
    return "F16";
  case DType::F64:
    return "F64";
  case DType::I64:
    return "I64";
  }
  throw Error("invalid DType value " + std::to_string(static_cast<int>(dtype)));
}

std::string_view deviceName(Device device) {
  switch (device) {
  case Device::Host:
    return "host";
  case Device::Cuda:
    return "cuda";
  }
  throw Error("invalid Device value " +
              std::to_string(static_cast<int>(device)));
}

std::optional<DType> parseDType(std::string_view name) {
  for (DType dtype :
       {DType::F32, DType::BF16, DType::F16, DType::F64, DType::I64})
    if (dtypeName(dtype) == name)
      return dtype;
  return std::nullopt;
}

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

std::optional<int64_t> checkedNumel(const std::vector<int64_t> &shape) {
  int64_t numel = 1;
  for (int64_t dim : shape) {
    if (dim < 0)
      return std::nullopt;
    if (__builtin_mul_overflow(numel, dim, &numel))
      return std::nullopt;
  }
  return numel;
}

std::optional<int64_t> checkedByteSize(DType dtype,
                                       const std::vector<int64_t> &shape) {
  std::optional<int64_t> numel = checkedNumel(shape);
  int64_t bytes;
  if (!numel || __builtin_mul_overflow(
                    *numel, static_cast<int64_t>(dtypeSize(dtype)), &bytes))
    return std::nullopt;
  return bytes;
}

static int64_t validNumel(const std::vector<int64_t> &shape) {
  std::optional<int64_t> numel = checkedNumel(shape);
  if (!numel)
    throw Error("invalid tensor shape " + formatShape(shape) +
                ": a negative dimension or too many elements");
  return *numel;
}

int64_t TensorView::numel() const { return validNumel(shape); }

size_t TensorView::byteSize() const {
  std::optional<int64_t> bytes = checkedByteSize(dtype, shape);
  if (!bytes)
    throw Error("invalid tensor shape " + formatShape(shape) + " for " +
                std::string(dtypeName(dtype)) +
                ": a negative dimension or too many bytes");
  return static_cast<size_t>(*bytes);
}

Tensor Tensor::zeros(DType dtype, std::vector<int64_t> shape) {
  TensorView sized{nullptr, dtype, shape};
  Tensor tensor;
  tensor.dtype = dtype;
  tensor.bytes.assign(sized.byteSize(), 0);
  tensor.shape = std::move(shape);
  return tensor;
}

/// Throws unless `view`'s memory is the host's, which `what` reads.
static void checkHost(const TensorView &view, const char *what) {
  if (view.device != Device::Host)
    throw Error(std::string(what) + " reads host memory; this tensor is on " +
                std::string(deviceName(view.device)));
}

Tensor Tensor::copyOf(const TensorView &view) {
  checkHost(view, "Tensor::copyOf");
  Tensor tensor;
  tensor.dtype = view.dtype;
  tensor.shape = view.shape;
  const auto *begin = static_cast<const unsigned char *>(view.data);
  tensor.bytes.assign(begin, begin + view.byteSize());
  return tensor;
}

int64_t Tensor::numel() const { return validNumel(shape); }

TensorView Tensor::view() { return TensorView{bytes.data(), dtype, shape}; }

/// The address of element `index`, after checking that it exists.
static unsigned char *elementAddress(const TensorView &view, int64_t index) {
  checkHost(view, "element access");
  int64_t numel = view.numel();
  if (index < 0 || index >= numel)
    throw Error("element index " + std::to_string(index) +
                " is out of range for a tensor of shape " +
                formatShape(view.shape));
  return static_cast<unsigned char *>(view.data) +
         static_cast<size_t>(index) * dtypeSize(view.dtype);
}

template <typename T> static T load(const unsigned char *address) {
  T value;
  std::memcpy(&value, address, sizeof value);
  return value;
}

template <typename T> static void store(unsigned char *address, T value) {
  std::memcpy(address, &value, sizeof value);
}

float readFloat(const TensorView &view, int64_t index) {
  const unsigned char *address = elementAddress(view, index);
  switch (view.dtype) {
  case DType::F32:
    return load<float>(address);
  case DType::BF16:
    return fromBF16Bits(load<uint16_t>(address));
  case DType::F16:
    return fromF16Bits(load<uint16_t>(address));
  case DType::F64:
    return static_cast<float>(load<double>(address));
  case DType::I64:
    return static_cast<float>(load<int64_t>(address));
  }
  throw Error("invalid DType value");
}

double readDouble(const TensorView &view, int64_t index) {
  if (view.dtype == DType::F64)
    return load<double>(elementAddress(view, index));
  if (view.dtype == DType::I64)
    return static_cast<double>(load<int64_t>(elementAddress(view, index)));
  return readFloat(view, index); // F32, BF16 and F16 widen exactly.
}

void writeFloat(const TensorView &view, int64_t index, float value) {
  unsigned char *address = elementAddress(view, index);
  switch (view.dtype) {
  case DType::F32:
    return store(address, value);
  case DType::BF16:
    return store(address, toBF16Bits(value));
  case DType::F16:
    return store(address, toF16Bits(value));
  case DType::F64:
  case DType::I64:
    return writeDouble(view, index, value);
  }
}

void writeDouble(const TensorView &view, int64_t index, double value) {
  unsigned char *address = elementAddress(view, index);
  switch (view.dtype) {
  case DType::F64:
    return store(address, value);
  case DType::I64:
    // +-2^63 are exact in double; every double in [-2^63, 2^63) truncates to
    // a representable int64_t, and NaN fails both comparisons.
    if (!(value >= -0x1p63 && value < 0x1p63))
      throw Error("cannot store " + std::to_string(value) +
                  " in an I64 tensor: NaN or out of range");
    return store(address, static_cast<int64_t>(value));
  case DType::F32:
  case DType::BF16:
  case DType::F16:
    return writeFloat(view, index, static_cast<float>(value));
  }
}

std::vector<float> toFloatVector(const TensorView &view) {
  std::vector<float> values(static_cast<size_t>(view.numel()));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = readFloat(view, static_cast<int64_t>(i));
  return values;
}

std::vector<double> toDoubleVector(const TensorView &view) {
  std::vector<double> values(static_cast<size_t>(view.numel()));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = readDouble(view, static_cast<int64_t>(i));
  return values;
}

void convertElements(const void *src, DType from, void *dst, DType to,
                     int64_t count) {
  auto isFloat = [](DType dtype) {
    return dtype == DType::F32 || dtype == DType::BF16 || dtype == DType::F16;
  };
  if (!isFloat(from) || !isFloat(to))
    throw Error("cannot convert " + std::string(dtypeName(from)) + " to " +
                std::string(dtypeName(to)) +
                ": conversions are between F32, BF16 and F16");
  if (count <= 0)
    return;
  size_t n = static_cast<size_t>(count);
  if (from == to) {
    if (src != dst)
      std::memcpy(dst, src, n * dtypeSize(from));
    return;
  }
  if (from == DType::F32) {
    const float *in = static_cast<const float *>(src);
    uint16_t *out = static_cast<uint16_t *>(dst);
    if (to == DType::BF16)
      for (size_t i = 0; i < n; ++i)
        out[i] = toBF16Bits(in[i]);
    else
      for (size_t i = 0; i < n; ++i)
        out[i] = toF16Bits(in[i]);
    return;
  }
  const uint16_t *in = static_cast<const uint16_t *>(src);
  if (to == DType::F32) {
    float *out = static_cast<float *>(dst);
    if (from == DType::BF16)
      for (size_t i = 0; i < n; ++i)
        out[i] = fromBF16Bits(in[i]);
    else
      for (size_t i = 0; i < n; ++i)
        out[i] = fromF16Bits(in[i]);
    return;
  }
  // Between BF16 and F16: through float, which holds both exactly.
  uint16_t *out = static_cast<uint16_t *>(dst);
  for (size_t i = 0; i < n; ++i)
    out[i] = to == DType::BF16 ? toBF16Bits(fromF16Bits(in[i]))
                               : toF16Bits(fromBF16Bits(in[i]));
}

} // namespace optgen::runtime
