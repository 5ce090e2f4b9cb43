//===- Safetensors.cpp - Reading and writing safetensors files ------------===//

#include "optgen/runtime/Safetensors.h"

#include "optgen/runtime/Error.h"
#include "optgen/runtime/FileIO.h"
#include "optgen/runtime/Json.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; the runtime assumes such a host"
#endif

namespace optgen::runtime {

[[noreturn]] static void fail(const std::string &source,
                              const std::string &problem) {
  throw Error("'" + source + "': " + problem);
}

static std::string describeJson(const JsonValue &value) {
  if (value.isInteger())
    return std::to_string(value.asInt64());
  if (value.isNumber())
    return writeJson(value) + " (not an integer literal within 64 bits)";
  return JsonValue::kindName(value.kind());
}

static uint64_t readLittleEndian64(const unsigned char *bytes) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i)
    value = (value << 8) | bytes[i];
  return value;
}

/// Checks the header length read from `lengthBytes`, the first 8 bytes of
/// a file of `fileSize` bytes. A length that cannot be right is what a file
/// that is not safetensors at all gives, so the error says that first, and
/// shows the bytes.
static void checkHeaderLength(const std::string &source,
                              const unsigned char *lengthBytes,
                              uint64_t fileSize) {
  uint64_t headerLength = readLittleEndian64(lengthBytes);
  std::string problem;
  if (headerLength > kMaxSafetensorsHeaderBytes)
    problem = "exceeds the limit of " +
              std::to_string(kMaxSafetensorsHeaderBytes) + " bytes (100 MiB)";
  else if (8 + headerLength > fileSize)
    problem = "runs past the end of the file (8 + " +
              std::to_string(headerLength) + " > " + std::to_string(fileSize) +
              " bytes)";
  else
    return;
  fail(source,
       "not a safetensors file, or a damaged one: a safetensors file begins "
       "with the length of its JSON header in 8 bytes, and this one's, " +
           quoteForMessage(std::string_view(
               reinterpret_cast<const char *>(lengthBytes), 8)) +
           ", give a header length " + std::to_string(headerLength) +
           " that " + problem);
}

/// Checks that a file of `size` bytes can hold the 8-byte header length.
static void checkFileSize(const std::string &source, uint64_t size) {
  if (size < 8)
    fail(source, "not a safetensors file: it is " + std::to_string(size) +
                     " bytes, shorter than the 8-byte header length a "
                     "safetensors file begins with");
}

//===----------------------------------------------------------------------===//
// SafetensorsFile
//===----------------------------------------------------------------------===//

/// Reads exactly `size` bytes (a size already checked against the file's);
/// a short read means the file changed under us.
static void readExactly(const std::string &path, std::ifstream &in,
                        void *destination, uint64_t size, const char *what) {
  in.read(static_cast<char *>(destination),
          static_cast<std::streamsize>(size));
  if (static_cast<uint64_t>(in.gcount()) != size)
    fail(path, std::string("the file ended while reading the ") + what +
                   " (was it changed while being read?)");
}

uint64_t SafetensorsFile::readHeader(const std::string &path,
                                     std::ifstream &in) {
  std::error_code error;
  std::filesystem::file_status status = std::filesystem::status(path, error);
  if (error)
    fail(path, "cannot open: " + error.message());
  if (!std::filesystem::is_regular_file(status))
    fail(path, "not a regular file");
  uint64_t fileSize = std::filesystem::file_size(path, error);
  if (error)
    fail(path, "cannot read the file size: " + error.message());

  in.open(path, std::ios::binary);
  if (!in)
    fail(path, std::string("cannot open: ") + std::strerror(errno));
  checkFileSize(path, fileSize);
  unsigned char lengthBytes[8];
  readExactly(path, in, lengthBytes, 8, "header length");
  checkHeaderLength(path, lengthBytes, fileSize);
  uint64_t headerLength = readLittleEndian64(lengthBytes);
  std::string header(headerLength, '\0');
  readExactly(path, in, header.data(), headerLength, "header");

  source_ = path;
  uint64_t dataSize = fileSize - 8 - headerLength;
  parseHeader(header, dataSize);
  return dataSize;
}

SafetensorsFile SafetensorsFile::open(const std::string &path) {
  SafetensorsFile file;
  std::ifstream in;
  uint64_t dataSize = file.readHeader(path, in);
  file.data_.resize(dataSize);
  readExactly(path, in, file.data_.data(), dataSize, "tensor data");
  if (in.peek() != std::char_traits<char>::eof())
    fail(path, "the file grew while being read");
  return file;
}

SafetensorsFile SafetensorsFile::openHeader(const std::string &path) {
  SafetensorsFile file;
  std::ifstream in;
  file.readHeader(path, in);
  file.headerOnly_ = true;
  return file;
}

SafetensorsFile
SafetensorsFile::fromBytes(const std::vector<unsigned char> &bytes,
                           const std::string &source) {
  checkFileSize(source, bytes.size());
  checkHeaderLength(source, bytes.data(), bytes.size());
  uint64_t headerLength = readLittleEndian64(bytes.data());
  SafetensorsFile file;
  file.source_ = source;
  const unsigned char *header = bytes.data() + 8;
  const unsigned char *data = header + headerLength;
  const unsigned char *end = bytes.data() + bytes.size();
  file.parseHeader(
      std::string_view(reinterpret_cast<const char *>(header), headerLength),
      static_cast<uint64_t>(end - data));
  file.data_.assign(data, end);
  return file;
}

void SafetensorsFile::parseHeader(std::string_view header, uint64_t dataSize) {
  JsonValue root = parseJson(header, "'" + source_ + "': header");
  if (!root.isObject())
    fail(source_, std::string("header is ") + JsonValue::kindName(root.kind()) +
                      ", not an object");

  for (const auto &[name, value] : root.asObject()) {
    if (name == "__metadata__") {
      if (!value.isObject())
        fail(source_, std::string("__metadata__ is ") +
                          JsonValue::kindName(value.kind()) +
                          ", not an object");
      for (const auto &[key, text] : value.asObject()) {
        if (!text.isString())
          fail(source_, "__metadata__ entry " + quoteForMessage(key) + " is " +
                            JsonValue::kindName(text.kind()) +
                            ", not a string");
        metadata_.emplace(key, text.asString());
      }
      continue;
    }

    std::string tensor = "tensor " + quoteForMessage(name);
    auto tensorFail = [&](const std::string &problem) {
      fail(source_, tensor + ": " + problem);
    };
    if (!value.isObject())
      tensorFail(std::string("entry is ") + JsonValue::kindName(value.kind()) +
                 ", not an object");
    for (const auto &member : value.asObject())
      if (member.first != "dtype" && member.first != "shape" &&
          member.first != "data_offsets")
        tensorFail("unexpected key " + quoteForMessage(member.first) +
                   " (an entry has exactly dtype, shape and data_offsets)");
    const JsonValue *dtypeValue = value.find("dtype");
    const JsonValue *shapeValue = value.find("shape");
    const JsonValue *offsetsValue = value.find("data_offsets");
    for (const char *key : {"dtype", "shape", "data_offsets"})
      if (!value.find(key))
        tensorFail(std::string("has no '") + key + "'");

    Entry entry;
    if (!dtypeValue->isString())
      tensorFail(std::string("dtype is ") +
                 JsonValue::kindName(dtypeValue->kind()) + ", not a string");
    std::optional<DType> dtype = parseDType(dtypeValue->asString());
    if (!dtype)
      tensorFail("unsupported dtype " +
                 quoteForMessage(dtypeValue->asString()) +
                 " (the runtime reads F32, BF16, F16, F64 and I64)");
    entry.info.dtype = *dtype;

    if (!shapeValue->isArray())
      tensorFail(std::string("shape is ") +
                 JsonValue::kindName(shapeValue->kind()) + ", not an array");
    for (size_t i = 0; i < shapeValue->size(); ++i) {
      const JsonValue &dim = shapeValue->at(i);
      if (!dim.isInteger() || dim.asInt64() < 0)
        tensorFail("shape[" + std::to_string(i) + "] is " + describeJson(dim) +
                   ", not a non-negative integer");
      entry.info.shape.push_back(dim.asInt64());
    }
    std::optional<int64_t> byteSize =
        checkedByteSize(entry.info.dtype, entry.info.shape);
    if (!byteSize)
      tensorFail("shape " + formatShape(entry.info.shape) +
                 " has too many elements: its byte size overflows 64 bits");

    if (!offsetsValue->isArray() || offsetsValue->size() != 2)
      tensorFail("data_offsets is not an array of two offsets [begin, end]");
    for (size_t i = 0; i < 2; ++i) {
      const JsonValue &offset = offsetsValue->at(i);
      if (!offset.isInteger() || offset.asInt64() < 0)
        tensorFail("data_offsets[" + std::to_string(i) + "] is " +
                   describeJson(offset) + ", not a non-negative integer");
    }
    entry.begin = static_cast<uint64_t>(offsetsValue->at(size_t{0}).asInt64());
    entry.end = static_cast<uint64_t>(offsetsValue->at(1).asInt64());
    std::string offsets = "data_offsets [" + std::to_string(entry.begin) +
                          ", " + std::to_string(entry.end) + "]";
    if (entry.begin > entry.end)
      tensorFail(offsets + " end before they begin");
    if (entry.end > dataSize)
      tensorFail(offsets + " run past the end of the data section (" +
                 std::to_string(dataSize) + " bytes)");
    if (entry.end - entry.begin != static_cast<uint64_t>(*byteSize))
      tensorFail(offsets + " span " + std::to_string(entry.end - entry.begin) +
                 " bytes, but " + std::string(dtypeName(entry.info.dtype)) +
                 " " + formatShape(entry.info.shape) + " takes " +
                 std::to_string(*byteSize));

    fileOrder_.push_back(name);
    entries_.emplace(name, std::move(entry));
  }

  // The byte ranges must tile the data section: no overlaps (one tensor's
  // writes would clobber another's) and no gaps (bytes no tensor accounts
  // for, where a polyglot file could hide another payload).
  std::vector<const std::pair<const std::string, Entry> *> byOffset;
  for (const auto &named : entries_)
    byOffset.push_back(&named);
  std::stable_sort(byOffset.begin(), byOffset.end(),
                   [](const auto *a, const auto *b) {
                     return std::pair(a->second.begin, a->second.end) <
                            std::pair(b->second.begin, b->second.end);
                   });
  auto range = [](const Entry &entry) {
    return "[" + std::to_string(entry.begin) + ", " +
           std::to_string(entry.end) + ")";
  };
  uint64_t covered = 0;
  const std::pair<const std::string, Entry> *previous = nullptr;
  for (const auto *named : byOffset) {
    const Entry &entry = named->second;
    if (entry.begin < covered)
      fail(source_, "the bytes of tensor " + quoteForMessage(named->first) +
                        " " + range(entry) + " overlap those of tensor " +
                        quoteForMessage(previous->first) + " " +
                        range(previous->second));
    if (entry.begin > covered)
      fail(source_, "bytes [" + std::to_string(covered) + ", " +
                        std::to_string(entry.begin) +
                        ") of the data section belong to no tensor");
    covered = entry.end;
    previous = named;
  }
  if (covered != dataSize)
    fail(source_, "bytes [" + std::to_string(covered) + ", " +
                      std::to_string(dataSize) +
                      ") of the data section belong to no tensor");
}

std::vector<std::string> SafetensorsFile::names(NameOrder order) const {
  if (order == NameOrder::File)
    return fileOrder_;
  std::vector<std::string> sorted;
  for (const auto &named : entries_)
    sorted.push_back(named.first);
  return sorted;
}

bool SafetensorsFile::has(std::string_view name) const {
  return entries_.find(name) != entries_.end();
}

const SafetensorsFile::Entry &
SafetensorsFile::entry(std::string_view name) const {
  auto found = entries_.find(name);
  if (found == entries_.end())
    fail(source_, "no tensor named " + quoteForMessage(name));
  return found->second;
}

const TensorInfo &SafetensorsFile::info(std::string_view name) const {
  return entry(name).info;
}

TensorView SafetensorsFile::view(std::string_view name) {
  const Entry &found = entry(name);
  if (headerOnly_)
    fail(source_, "tensor " + quoteForMessage(name) +
                      ": only the header was read (openHeader)");
  return TensorView{data_.data() + found.begin, found.info.dtype,
                    found.info.shape};
}

//===----------------------------------------------------------------------===//
// SafetensorsWriter
//===----------------------------------------------------------------------===//

void SafetensorsWriter::add(const std::string &name, const TensorView &view) {
  if (!view.data && view.byteSize() != 0)
    throw Error("safetensors tensor " + quoteForMessage(name) +
                ": the view has no data");
  add(name, view.dtype, view.shape, Tensor::copyOf(view).bytes);
}

void SafetensorsWriter::add(const std::string &name, DType dtype,
                            std::vector<int64_t> shape,
                            std::vector<unsigned char> bytes) {
  std::string tensor = "safetensors tensor " + quoteForMessage(name);
  if (name.empty() || name == "__metadata__" || !isValidUtf8(name))
    throw Error(tensor + ": the name must be non-empty UTF-8 other than "
                         "__metadata__");
  if (tensors_.count(name))
    throw Error(tensor + " is added twice");
  std::optional<int64_t> byteSize = checkedByteSize(dtype, shape);
  if (!byteSize)
    throw Error(tensor + ": invalid shape " + formatShape(shape));
  if (bytes.size() != static_cast<uint64_t>(*byteSize))
    throw Error(tensor + ": " + std::to_string(bytes.size()) + " bytes, but " +
                std::string(dtypeName(dtype)) + " " + formatShape(shape) +
                " takes " + std::to_string(*byteSize));
  tensors_.emplace(name, Tensor{dtype, std::move(shape), std::move(bytes)});
}

void SafetensorsWriter::setMetadata(const std::string &key,
                                    const std::string &value) {
  if (!isValidUtf8(key) || !isValidUtf8(value))
    throw Error("safetensors metadata " + quoteForMessage(key) +
                ": not valid UTF-8");
  metadata_[key] = value;
}

/// The reference writer's layout order: descending dtype size, ties in its
/// Dtype enum's order (I64 before F64, BF16 before F16).
static int layoutRank(DType dtype) {
  switch (dtype) {
  case DType::I64:
    return 0;
  case DType::F64:
    return 1;
  case DType::F32:
    return 2;
  case DType::BF16:
    return 3;
  case DType::F16:
    return 4;
  }
  return 5;
}

std::vector<unsigned char> SafetensorsWriter::serialize() const {
  std::vector<const std::pair<const std::string, Tensor> *> layout;
  for (const auto &named : tensors_)
    layout.push_back(&named);
  // Stable, over a name-sorted map: ties keep name order.
  std::stable_sort(
      layout.begin(), layout.end(), [](const auto *a, const auto *b) {
        return layoutRank(a->second.dtype) < layoutRank(b->second.dtype);
      });

  JsonObject header;
  if (!metadata_.empty()) {
    JsonObject metadata;
    for (const auto &[key, value] : metadata_)
      metadata.emplace_back(key, value);
    header.emplace_back("__metadata__", std::move(metadata));
  }
  uint64_t offset = 0;
  for (const auto *named : layout) {
    const Tensor &tensor = named->second;
    JsonArray shape(tensor.shape.begin(), tensor.shape.end());
    uint64_t end = offset + tensor.bytes.size();
    header.emplace_back(named->first,
                        JsonObject{{"dtype", dtypeName(tensor.dtype)},
                                   {"shape", std::move(shape)},
                                   {"data_offsets", JsonArray{offset, end}}});
    offset = end;
  }
  std::string text = writeJson(header);
  text.append((8 - text.size() % 8) % 8, ' ');

  std::vector<unsigned char> bytes;
  bytes.reserve(8 + text.size() + offset);
  for (int i = 0; i < 8; ++i)
    bytes.push_back(static_cast<unsigned char>(text.size() >> (8 * i)));
  bytes.insert(bytes.end(), text.begin(), text.end());
  for (const auto *named : layout)
    bytes.insert(bytes.end(), named->second.bytes.begin(),
                 named->second.bytes.end());
  return bytes;
}

void SafetensorsWriter::write(const std::string &path) const {
  std::vector<unsigned char> bytes = serialize();
  writeFileAtomically(path, bytes.data(), bytes.size());
}

} // namespace optgen::runtime
