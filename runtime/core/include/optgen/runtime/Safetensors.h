//===- Safetensors.h - Reading and writing safetensors files ----*- C++ -*-===//
//
// The safetensors format: an 8-byte little-endian header length N, N bytes of
// JSON header, then the raw tensor data. Files may come from strangers, so
// the reader checks everything the header claims against the real file size
// before it allocates or reads a byte of data: a hostile file gives an Error
// naming the file and the problem, never a wild read, a crash or a huge
// allocation. The rules are the reference implementation's (huggingface's
// safetensors crate): among them, the tensors' byte ranges tile the data
// section exactly, without gaps or overlaps. A few are stricter: an entry
// has exactly dtype, shape and data_offsets, no key appears twice, and only
// the runtime's dtypes are accepted (see Tensor.h).
//
// The writer's output is deterministic and is what the reference writes for
// the same tensors: data laid out by descending dtype size, then by name (so
// every tensor is aligned to its dtype when the data starts aligned), header
// compact, in the same order, padded with spaces to a multiple of 8 bytes.
// `__metadata__` comes first with its keys sorted (the reference keeps them
// in a hash map, so this is its order only for a single key).
//
// The host must be little-endian, as safetensors data is.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_SAFETENSORS_H
#define OPTGEN_RUNTIME_SAFETENSORS_H

#include "optgen/runtime/Tensor.h"

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace optgen::runtime {

/// The largest JSON header the reader accepts.
constexpr uint64_t kMaxSafetensorsHeaderBytes = 100ull << 20; // 100 MiB

struct TensorInfo {
  DType dtype;
  std::vector<int64_t> shape;
};

class SafetensorsFile {
public:
  enum class NameOrder {
    File,  ///< as the header lists them
    Sorted ///< by byte-wise name
  };

  /// Reads and validates the file at `path`. Throws Error naming `path`.
  static SafetensorsFile open(const std::string &path);
  /// Reads and validates only the header of the file at `path`, checking
  /// its offsets against the file's size; no byte of tensor data is read
  /// (a model's shapes come from a many-gigabyte checkpoint at once), and
  /// view() throws. Throws Error naming `path`.
  static SafetensorsFile openHeader(const std::string &path);
  /// Validates a whole file image; `source` names it in errors.
  static SafetensorsFile fromBytes(const std::vector<unsigned char> &bytes,
                                   const std::string &source);

  /// The path (or the `source`) the file was read from.
  const std::string &source() const { return source_; }
  std::vector<std::string> names(NameOrder order = NameOrder::File) const;
  bool has(std::string_view name) const;
  /// Throw Error naming the file and `name` when there is no such tensor.
  const TensorInfo &info(std::string_view name) const;
  /// A view into the loaded bytes; valid while this object lives. The data
  /// is aligned to its dtype when the file lays tensors out as the
  /// reference writer does; otherwise it may not be. Throws Error on a file
  /// opened with openHeader().
  TensorView view(std::string_view name);
  /// `__metadata__`: empty when the file has none.
  const std::map<std::string, std::string> &metadata() const {
    return metadata_;
  }

private:
  struct Entry {
    TensorInfo info;
    uint64_t begin = 0; ///< byte range in the data section
    uint64_t end = 0;
  };

  SafetensorsFile() = default;
  /// Opens `path`, reads and validates its header; `in` is left at the
  /// start of the data section, whose size is returned.
  uint64_t readHeader(const std::string &path, std::ifstream &in);
  /// Validates the JSON header against a data section of `dataSize` bytes
  /// and fills in the entries and metadata.
  void parseHeader(std::string_view header, uint64_t dataSize);
  const Entry &entry(std::string_view name) const;

  std::string source_;
  std::vector<std::string> fileOrder_;
  std::map<std::string, Entry, std::less<>> entries_;
  std::map<std::string, std::string> metadata_;
  /// The data section alone, so that it starts at operator new's alignment.
  std::vector<unsigned char> data_;
  /// Opened with openHeader(): data_ is empty.
  bool headerOnly_ = false;
};

class SafetensorsWriter {
public:
  /// Adds a copy of the data `view` points at. Throws Error for an empty
  /// name, "__metadata__", a name added before, or an invalid shape.
  void add(const std::string &name, const TensorView &view);
  /// Adds `bytes` (native, row-major); throws Error as above, or when their
  /// size is not numel * dtypeSize.
  void add(const std::string &name, DType dtype, std::vector<int64_t> shape,
           std::vector<unsigned char> bytes);
  /// Sets (or replaces) a `__metadata__` entry.
  void setMetadata(const std::string &key, const std::string &value);

  /// The complete file image.
  std::vector<unsigned char> serialize() const;
  /// Writes serialize() to `path`, atomically (FileIO.h: a failure leaves
  /// the previous file as it was); throws Error naming `path` on failure.
  void write(const std::string &path) const;

private:
  std::map<std::string, Tensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_SAFETENSORS_H
