//===- SafetensorsTest.cpp - Reading and writing safetensors files --------===//
//
// Round trips, deterministic bytes, the golden files, and a hostile file for
// every check the reader makes: each must fail with an Error that names the
// file and the problem.
//
//===----------------------------------------------------------------------===//

#include "optgen/runtime/Safetensors.h"

#include "TempPath.h"
#include "optgen/runtime/Error.h"
#include "optgen/runtime/Json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>

using namespace optgen::runtime;

namespace {

using Bytes = std::vector<unsigned char>;

void writeFile(const std::string &path, const Bytes &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

Bytes readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

Bytes littleEndian64(uint64_t value) {
  Bytes bytes;
  for (int i = 0; i < 8; ++i)
    bytes.push_back(static_cast<unsigned char>(value >> (8 * i)));
  return bytes;
}

/// A file of `header` (its true length first) and `dataSize` data bytes.
Bytes fileWithHeader(const std::string &header, size_t dataSize) {
  Bytes bytes = littleEndian64(header.size());
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.resize(bytes.size() + dataSize, 0);
  return bytes;
}

/// The Error message of opening `bytes` as a file, or "" if it opens.
std::string openError(const Bytes &bytes, const std::string &path) {
  writeFile(path, bytes);
  try {
    SafetensorsFile::open(path);
  } catch (const Error &error) {
    std::remove(path.c_str());
    return error.what();
  }
  std::remove(path.c_str());
  return "";
}

template <typename T> Bytes bytesOf(const std::vector<T> &values) {
  Bytes bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

Bytes viewBytes(const TensorView &view) {
  const auto *begin = static_cast<const unsigned char *>(view.data);
  return Bytes(begin, begin + view.byteSize());
}

} // namespace

TEST(Safetensors, RoundTripsEveryDType) {
  SafetensorsWriter writer;
  writer.add("f32", DType::F32, {2, 3}, bytesOf<float>({1, 2, 3, 4, 5, 6.5f}));
  writer.add("f64", DType::F64, {2}, bytesOf<double>({0.1, -1e300}));
  writer.add("i64", DType::I64, {3}, bytesOf<int64_t>({-1, 0, INT64_MAX}));
  writer.add("bf16", DType::BF16, {1, 3},
             bytesOf<uint16_t>({0x3f80, 0x3f66, 0xff80}));
  writer.add("f16", DType::F16, {2, 1}, bytesOf<uint16_t>({0x3c00, 0x0001}));
  writer.add("scalar", DType::F32, {}, bytesOf<float>({42}));
  writer.add("empty", DType::F32, {0, 3}, {});
  Tensor owned = Tensor::zeros(DType::BF16, {5});
  writeFloat(owned.view(), 4, 0.9f);
  writer.add("from.view", owned.view());
  writer.setMetadata("steps", "4");
  writer.setMetadata("note", "caf\xc3\xa9 \"quoted\"\n");

  std::string path = tempPath("roundtrip.safetensors");
  writer.write(path);
  SafetensorsFile file = SafetensorsFile::open(path);
  std::remove(path.c_str());

  EXPECT_EQ(file.source(), path);
  EXPECT_EQ(file.metadata().at("steps"), "4");
  EXPECT_EQ(file.metadata().at("note"), "caf\xc3\xa9 \"quoted\"\n");
  EXPECT_EQ(file.names(SafetensorsFile::NameOrder::Sorted),
            (std::vector<std::string>{"bf16", "empty", "f16", "f32", "f64",
                                      "from.view", "i64", "scalar"}));
  // The header lists tensors in layout order: I64, F64, F32, BF16, F16.
  EXPECT_EQ(file.names(),
            (std::vector<std::string>{"i64", "f64", "empty", "f32", "scalar",
                                      "bf16", "from.view", "f16"}));
  EXPECT_TRUE(file.has("f32"));
  EXPECT_FALSE(file.has("F32"));
  EXPECT_EQ(file.info("f32").dtype, DType::F32);
  EXPECT_EQ(file.info("f32").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(file.info("scalar").shape, std::vector<int64_t>{});
  EXPECT_EQ(viewBytes(file.view("f32")), bytesOf<float>({1, 2, 3, 4, 5, 6.5f}));
  EXPECT_EQ(viewBytes(file.view("i64")), bytesOf<int64_t>({-1, 0, INT64_MAX}));
  EXPECT_EQ(readDouble(file.view("f64"), 1), -1e300);
  EXPECT_EQ(readFloat(file.view("bf16"), 1), 0.8984375f);
  EXPECT_EQ(readFloat(file.view("bf16"), 2), -INFINITY);
  EXPECT_EQ(readFloat(file.view("f16"), 1), std::ldexp(1.0f, -24));
  EXPECT_EQ(readFloat(file.view("scalar"), 0), 42.0f);
  EXPECT_EQ(file.view("empty").numel(), 0);
  EXPECT_EQ(readFloat(file.view("from.view"), 4), 0.8984375f);
  // Every view is aligned to its dtype: the layout puts wide dtypes first.
  for (const std::string &name : file.names()) {
    TensorView view = file.view(name);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(view.data) % dtypeSize(view.dtype),
              0u)
        << name;
  }
}

TEST(Safetensors, WritesReferenceBytes) {
  SafetensorsWriter writer;
  writer.add("b", DType::F16, {1}, bytesOf<uint16_t>({0x3c00}));
  writer.add("a", DType::F32, {2}, bytesOf<float>({1, 2}));
  writer.setMetadata("k", "v");
  Bytes bytes = writer.serialize();
  std::string header =
      R"({"__metadata__":{"k":"v"},"a":{"dtype":"F32","shape":[2],)"
      R"("data_offsets":[0,8]},"b":{"dtype":"F16","shape":[1],)"
      R"("data_offsets":[8,10]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  Bytes expected = littleEndian64(header.size());
  expected.insert(expected.end(), header.begin(), header.end());
  Bytes data = bytesOf<float>({1, 2});
  expected.insert(expected.end(), data.begin(), data.end());
  expected.push_back(0x00);
  expected.push_back(0x3c);
  EXPECT_EQ(bytes, expected);
  EXPECT_EQ(header.size() % 8, 0u);

  // No tensors and no metadata: "{}" padded to 8.
  Bytes empty = SafetensorsWriter().serialize();
  Bytes emptyExpected = littleEndian64(8);
  for (char c : std::string("{}      "))
    emptyExpected.push_back(static_cast<unsigned char>(c));
  EXPECT_EQ(empty, emptyExpected);
  EXPECT_TRUE(SafetensorsFile::fromBytes(empty, "empty").names().empty());
}

TEST(Safetensors, DeterministicBytes) {
  auto build = [](bool reversed) {
    SafetensorsWriter writer;
    std::vector<std::string> names = {"z.weight", "a.bias", "m", "b.scale"};
    if (reversed)
      std::reverse(names.begin(), names.end());
    for (const std::string &name : names)
      writer.add(name, name == "m" ? DType::BF16 : DType::F32, {1},
                 name == "m" ? Bytes(2, 7) : Bytes(4, name[0]));
    std::vector<std::pair<std::string, std::string>> metadata = {
        {"x", "1"}, {"y", "2"}, {"a", "3"}};
    if (reversed)
      std::reverse(metadata.begin(), metadata.end());
    for (const auto &[key, value] : metadata)
      writer.setMetadata(key, value);
    return writer.serialize();
  };
  Bytes first = build(false);
  EXPECT_EQ(first, build(true));
  std::string path = tempPath("deterministic.safetensors");
  SafetensorsWriter writer;
  writer.add("x", DType::F32, {1}, Bytes(4, 1));
  writer.write(path);
  writer.write(path); // overwrites
  EXPECT_EQ(readFile(path), writer.serialize());
  std::remove(path.c_str());
}

TEST(Safetensors, WriterRejectsBadTensors) {
  SafetensorsWriter writer;
  writer.add("a", DType::F32, {1}, Bytes(4));
  EXPECT_THROW(writer.add("a", DType::F32, {1}, Bytes(4)), Error);
  EXPECT_THROW(writer.add("", DType::F32, {1}, Bytes(4)), Error);
  EXPECT_THROW(writer.add("__metadata__", DType::F32, {1}, Bytes(4)), Error);
  EXPECT_THROW(writer.add("bad\xff", DType::F32, {1}, Bytes(4)), Error);
  EXPECT_THROW(writer.add("b", DType::F32, {-1}, {}), Error);
  try {
    writer.add("c", DType::F32, {2, 3}, Bytes(20));
    FAIL();
  } catch (const Error &error) {
    EXPECT_STREQ(error.what(), "safetensors tensor 'c': 20 bytes, but F32 "
                               "[2, 3] takes 24");
  }
  EXPECT_THROW(writer.add("d", TensorView{nullptr, DType::F32, {2}}), Error);
  EXPECT_THROW(writer.write("/nonexistent-dir/x.safetensors"), Error);
}

TEST(Safetensors, MissingFilesAndTensors) {
  try {
    SafetensorsFile::open("/nonexistent/file.safetensors");
    FAIL();
  } catch (const Error &error) {
    EXPECT_EQ(std::string(error.what())
                  .rfind("'/nonexistent/file.safetensors': cannot open", 0),
              0u)
        << error.what();
  }
  try {
    SafetensorsFile::open(testing::TempDir());
    FAIL();
  } catch (const Error &error) {
    EXPECT_NE(std::string(error.what()).find("not a regular file"),
              std::string::npos);
  }
  SafetensorsWriter writer;
  writer.add("x", DType::F32, {1}, Bytes(4));
  SafetensorsFile file = SafetensorsFile::fromBytes(writer.serialize(), "mem");
  try {
    file.info("y");
    FAIL();
  } catch (const Error &error) {
    EXPECT_STREQ(error.what(), "'mem': no tensor named 'y'");
  }
  EXPECT_THROW(file.view("y"), Error);
}

TEST(Safetensors, RejectsHostileFiles) {
  const std::string tensor =
      R"("dtype":"F32","shape":[2],"data_offsets":[0,8])";
  struct Case {
    const char *label;
    Bytes file;
    const char *problem;
  };
  Bytes hugeLength = littleEndian64(uint64_t{1} << 40);
  hugeLength.resize(64, '{');
  Bytes maxLength = littleEndian64(UINT64_MAX);
  Bytes pastEnd = littleEndian64(kMaxSafetensorsHeaderBytes);
  for (char c : std::string("{}      "))
    pastEnd.push_back(static_cast<unsigned char>(c));
  const std::vector<Case> cases = {
      {"empty", {},
       "not a safetensors file: it is 0 bytes, shorter than the 8-byte "
       "header length"},
      {"short", Bytes(7, 0), "not a safetensors file: it is 7 bytes"},
      {"huge-length", hugeLength,
       "not a safetensors file, or a damaged one: a safetensors file begins "
       "with the length of its JSON header in 8 bytes, and this one's, "
       "'\\x00\\x00\\x00\\x00\\x00\\x01\\x00\\x00', give a header length "
       "1099511627776 that exceeds the limit of 104857600 bytes"},
      {"max-length", maxLength,
       "give a header length 18446744073709551615 that exceeds the limit"},
      {"past-end", pastEnd,
       "give a header length 104857600 that runs past the end of the "
       "file (8 + 104857600 > 16 bytes)"},
      // What a user gets for a file of text (the issue that asked for it:
      // "header length 7954878066620047395 exceeds the limit").
      {"text", Bytes{'{', '"', 'l', 'o', 's', 's', '"', ':', ' ', '1', '}'},
       "not a safetensors file, or a damaged one: a safetensors file begins "
       "with the length of its JSON header in 8 bytes, and this one's, "
       "'{\"loss\":', give a header length 4189037543035773563 that exceeds "
       "the limit"},
      {"not-json", fileWithHeader("{\"a\":", 0),
       "header: invalid JSON at byte 5: expected a JSON value"},
      {"array", fileWithHeader("[]", 0), "header is an array, not an object"},
      {"nul-padding", fileWithHeader(std::string("{}\0\0\0\0\0\0", 8), 0),
       "unexpected byte 0x00 after the JSON value"},
      {"deep", fileWithHeader(std::string(1000, '['), 0),
       "nest deeper than 64 levels"},
      {"bad-utf8", fileWithHeader("{\"\xc0\xaf\":{}}", 0), "invalid UTF-8"},
      {"entry-number", fileWithHeader(R"({"w":1})", 0),
       "tensor 'w': entry is a number, not an object"},
      {"no-dtype",
       fileWithHeader(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", 8),
       "tensor 'w': has no 'dtype'"},
      {"no-shape",
       fileWithHeader(R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", 8),
       "tensor 'w': has no 'shape'"},
      {"no-offsets", fileWithHeader(R"({"w":{"dtype":"F32","shape":[2]}})", 8),
       "tensor 'w': has no 'data_offsets'"},
      {"extra-key", fileWithHeader("{\"w\":{" + tensor + ",\"x\":0}}", 8),
       "tensor 'w': unexpected key 'x' (an entry has exactly dtype, shape and "
       "data_offsets)"},
      {"dtype-number",
       fileWithHeader(R"({"w":{"dtype":7,"shape":[2],"data_offsets":[0,8]}})",
                      8),
       "tensor 'w': dtype is a number, not a string"},
      {"dtype-unknown",
       fileWithHeader(
           R"({"w":{"dtype":"I8","shape":[8],"data_offsets":[0,8]}})", 8),
       "tensor 'w': unsupported dtype 'I8' (the runtime reads F32, BF16, F16, "
       "F64 and I64)"},
      {"dtype-lowercase",
       fileWithHeader(
           R"({"w":{"dtype":"f32","shape":[2],"data_offsets":[0,8]}})", 8),
       "unsupported dtype 'f32'"},
      {"shape-object",
       fileWithHeader(
           R"({"w":{"dtype":"F32","shape":{},"data_offsets":[0,8]}})", 8),
       "tensor 'w': shape is an object, not an array"},
      {"shape-negative",
       fileWithHeader(
           R"({"w":{"dtype":"F32","shape":[2,-1],"data_offsets":[0,8]}})", 8),
       "tensor 'w': shape[1] is -1, not a non-negative integer"},
      {"shape-fraction",
       fileWithHeader(
           R"({"w":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", 8),
       "shape[0] is 2.5 (not an integer literal within 64 bits), not a "
       "non-negative integer"},
      {"shape-float",
       fileWithHeader(
           R"({"w":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", 8),
       "shape[0] is 2 (not an integer literal"},
      {"shape-string",
       fileWithHeader(
           R"({"w":{"dtype":"F32","shape":["2"],"data_offsets":[0,8]}})", 8),
       "shape[0] is a string, not a non-negative integer"},
      {"shape-huge",
       fileWithHeader(R"({"w":{"dtype":"F32","shape":[1e30],)"
                      R"("data_offsets":[0,8]}})",
                      8),
       "shape[0] is 1e+30 (not an integer literal"},
      {"shape-beyond-64-bits",
       fileWithHeader(R"({"w":{"dtype":"F32","shape":[18446744073709551616],)"
                      R"("data_offsets":[0,8]}})",
                      8),
       "shape[0] is 18446744073709551616 (not an integer literal"},
      {"numel-overflow",
       fileWithHeader(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],)"
                      R"("data_offsets":[0,8]}})",
                      8),
       "tensor 'w': shape [4294967296, 4294967296] has too many elements: its "
       "byte size overflows 64 bits"},
      {"bytes-overflow",
       fileWithHeader(R"({"w":{"dtype":"F64","shape":[2305843009213693952],)"
                      R"("data_offsets":[0,8]}})",
                      8),
       "has too many elements"},
      {"offsets-object",
       fileWithHeader(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":{}}})",
                      8),
       "tensor 'w': data_offsets is not an array of two offsets"},
      {"offsets-three",
       fileWithHeader(
           R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8,8]}})", 8),
       "data_offsets is not an array of two offsets"},
      {"offsets-negative",
       fileWithHeader(
           R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}})", 8),
       "tensor 'w': data_offsets[0] is -8, not a non-negative integer"},
      {"offsets-null",
       fileWithHeader(
           R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,null]}})", 8),
       "data_offsets[1] is null, not a non-negative integer"},
      {"offsets-reversed",
       fileWithHeader(
           R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", 8),
       "tensor 'w': data_offsets [8, 0] end before they begin"},
      {"offsets-past-end",
       fileWithHeader(R"({"w":{"dtype":"F32","shape":[2],)"
                      R"("data_offsets":[4,12]}})",
                      8),
       "tensor 'w': data_offsets [4, 12] run past the end of the data section "
       "(8 bytes)"},
      {"offsets-far-past-end",
       fileWithHeader(R"({"w":{"dtype":"F32","shape":[2],)"
                      R"("data_offsets":[9223372036854775800,)"
                      R"(9223372036854775807]}})",
                      8),
       "run past the end of the data section"},
      {"size-mismatch",
       fileWithHeader(
           R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
       "tensor 'w': data_offsets [0, 8] span 8 bytes, but F32 [3] takes 12"},
      {"overlap",
       fileWithHeader(R"({"a":{"dtype":"F32","shape":[2],)"
                      R"("data_offsets":[0,8]},)"
                      R"("b":{"dtype":"F32","shape":[2],)"
                      R"("data_offsets":[4,12]}})",
                      12),
       "the bytes of tensor 'b' [4, 12) overlap those of tensor 'a' [0, 8)"},
      {"same-range",
       fileWithHeader("{\"a\":{" + tensor + "},\"b\":{" + tensor + "}}", 8),
       "the bytes of tensor 'b' [0, 8) overlap those of tensor 'a' [0, 8)"},
      {"empty-inside",
       fileWithHeader(R"({"a":{"dtype":"F32","shape":[2],)"
                      R"("data_offsets":[0,8]},)"
                      R"("b":{"dtype":"F32","shape":[0],)"
                      R"("data_offsets":[4,4]}})",
                      8),
       "the bytes of tensor 'b' [4, 4) overlap those of tensor 'a' [0, 8)"},
      {"gap",
       fileWithHeader(R"({"a":{"dtype":"F32","shape":[2],)"
                      R"("data_offsets":[0,8]},)"
                      R"("b":{"dtype":"F32","shape":[2],)"
                      R"("data_offsets":[12,20]}})",
                      20),
       "bytes [8, 12) of the data section belong to no tensor"},
      {"leading-gap",
       fileWithHeader(
           R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12),
       "bytes [0, 4) of the data section belong to no tensor"},
      {"trailing-bytes", fileWithHeader("{\"w\":{" + tensor + "}}", 9),
       "bytes [8, 9) of the data section belong to no tensor"},
      {"duplicate-tensor",
       fileWithHeader("{\"w\":{" + tensor + "},\"w\":{" + tensor + "}}", 8),
       "duplicate object key 'w'"},
      {"duplicate-field",
       fileWithHeader(R"({"w":{"dtype":"F32","dtype":"F32","shape":[2],)"
                      R"("data_offsets":[0,8]}})",
                      8),
       "duplicate object key 'dtype'"},
      {"metadata-array", fileWithHeader(R"({"__metadata__":[]})", 0),
       "__metadata__ is an array, not an object"},
      {"metadata-number", fileWithHeader(R"({"__metadata__":{"steps":4}})", 0),
       "__metadata__ entry 'steps' is a number, not a string"},
      {"metadata-duplicate",
       fileWithHeader(R"({"__metadata__":{"a":"1","a":"2"}})", 0),
       "duplicate object key 'a'"},
      {"hostile-name",
       fileWithHeader("{\"evil\\n\\u0007" + std::string(500, 'x') +
                          "\":{\"dtype\":\"F32\",\"shape\":[2],"
                          "\"data_offsets\":[0,4]}}",
                      8),
       "tensor 'evil\\x0a\\x07xxx"},
  };
  for (const Case &test : cases) {
    std::string path = tempPath(std::string(test.label) + ".safetensors");
    std::string message = openError(test.file, path);
    EXPECT_NE(message.find(test.problem), std::string::npos)
        << test.label << ": " << message;
    EXPECT_EQ(message.rfind("'" + path + "': ", 0), 0u)
        << test.label << ": " << message;
    EXPECT_LT(message.size(), 400u) << test.label << ": " << message;
    // So do the header-only reader and the in-memory reader.
    writeFile(path, test.file);
    try {
      SafetensorsFile::openHeader(path);
      ADD_FAILURE() << test.label << ": openHeader accepted it";
    } catch (const Error &error) {
      EXPECT_NE(std::string(error.what()).find(test.problem), std::string::npos)
          << test.label << ": " << error.what();
    }
    std::remove(path.c_str());
    try {
      SafetensorsFile::fromBytes(test.file, "mem");
      ADD_FAILURE() << test.label << ": fromBytes accepted it";
    } catch (const Error &error) {
      EXPECT_NE(std::string(error.what()).find(test.problem), std::string::npos)
          << test.label << ": " << error.what();
    }
  }
}

TEST(Safetensors, AcceptsWhatTheReferenceAccepts) {
  // Zero-sized tensors anywhere along the tiling, header in any order, no
  // padding, and whitespace around the JSON.
  Bytes file = fileWithHeader(
      R"( {"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},)"
      R"("z":{"dtype":"I64","shape":[0,5],"data_offsets":[8,8]},)"
      R"("a":{"data_offsets":[0,8],"shape":[2],"dtype":"F32"},)"
      R"("e":{"dtype":"F16","shape":[0],"data_offsets":[16,16]}})"
      "\n",
      16);
  std::string path = tempPath("accepted.safetensors");
  writeFile(path, file);
  SafetensorsFile loaded = SafetensorsFile::open(path);
  std::remove(path.c_str());
  EXPECT_EQ(loaded.names(), (std::vector<std::string>{"b", "z", "a", "e"}));
  EXPECT_TRUE(loaded.metadata().empty());
  EXPECT_EQ(loaded.info("z").shape, (std::vector<int64_t>{0, 5}));
}

TEST(Safetensors, HeaderOnlyReadsNoData) {
  SafetensorsWriter writer;
  writer.add("w", DType::BF16, {2, 3}, Bytes(12, 7));
  writer.add("b", DType::F32, {3}, Bytes(12, 9));
  writer.setMetadata("format", "pt");
  std::string path = tempPath("header-only.safetensors");
  writeFile(path, writer.serialize());
  SafetensorsFile header = SafetensorsFile::openHeader(path);
  EXPECT_EQ(header.names(), SafetensorsFile::open(path).names());
  EXPECT_EQ(header.info("w").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(header.info("w").dtype, DType::BF16);
  EXPECT_EQ(header.metadata().at("format"), "pt");
  try {
    header.view("w");
    ADD_FAILURE() << "view() of a header-only file";
  } catch (const Error &error) {
    EXPECT_EQ(std::string(error.what()),
              "'" + path + "': tensor 'w': only the header was read "
                           "(openHeader)");
  }
  // The data is not read, but its size is checked against the offsets: one
  // byte missing, or one too many, is an error.
  Bytes bytes = writer.serialize();
  for (Bytes wrong : {Bytes(bytes.begin(), bytes.end() - 1),
                      [&] {
                        Bytes longer = bytes;
                        longer.push_back(0);
                        return longer;
                      }()}) {
    writeFile(path, wrong);
    EXPECT_THROW(SafetensorsFile::openHeader(path), Error);
  }
  std::remove(path.c_str());
}

#ifdef OPTGEN_GOLDEN_DIR
TEST(Safetensors, ReadsGoldenFiles) {
  const std::string dir = OPTGEN_GOLDEN_DIR;
  for (const char *name :
       {"mixed_small.f32.6ed7d1d", "mixed_small.f32.a9d0a86",
        "mixed_small.bf16.6ed7d1d", "mixed_small.bf16.a9d0a86"}) {
    std::string path = dir + "/" + name + ".safetensors";
    if (!std::ifstream(path))
      GTEST_SKIP() << "no golden data at " << path;
    SafetensorsFile file = SafetensorsFile::open(path);
    SCOPED_TRACE(path);

    const TensorInfo &embed = file.info("param/embed");
    EXPECT_EQ(embed.dtype, DType::F32);
    EXPECT_EQ(embed.shape, (std::vector<int64_t>{256, 8}));
    EXPECT_EQ(file.info("param/bias").shape, std::vector<int64_t>{40});
    EXPECT_EQ(file.info("param/attn.0").shape, (std::vector<int64_t>{24, 40}));
    EXPECT_EQ(file.names().front(), "param/bias");
    EXPECT_EQ(file.names().size(), 7u * (1 + 4 + 1));
    EXPECT_EQ(file.metadata().at("steps"), "4");
    EXPECT_TRUE(file.metadata().at("muon_dtype") == "f32" ||
                file.metadata().at("muon_dtype") == "bf16");

    // The groups metadata is the case's JSON description.
    JsonValue groups = parseJson(file.metadata().at("groups"), "groups");
    ASSERT_EQ(groups.size(), 3u);
    const JsonValue &adamw = groups.at(size_t{0});
    EXPECT_EQ(adamw.at("kind").asString(), "adamw");
    EXPECT_EQ(adamw.at("params").at(size_t{0}).asString(), "bias");
    EXPECT_EQ(adamw.at("params").at(1).asString(), "embed");
    EXPECT_EQ(adamw.at("lr").asDouble(), 0.01);
    EXPECT_EQ(adamw.at("betas").at(1).asDouble(), 0.95);
    EXPECT_EQ(groups.at(1).at("kind").asString(), "muon");
    EXPECT_EQ(groups.at(1).at("ns_steps").asInt64(), 5);

    // Every parameter has a gradient per step and an expected result, and
    // the values are ordinary numbers.
    for (const char *param :
         {"bias", "embed", "attn.0", "attn.1", "mlp.0", "mlp.1", "mlp.2"}) {
      std::string p = param;
      const TensorInfo &info = file.info("param/" + p);
      for (int step = 1; step <= 4; ++step)
        EXPECT_EQ(file.info("grad/" + std::to_string(step) + "/" + p).shape,
                  info.shape);
      EXPECT_EQ(file.info("expect/" + p).shape, info.shape);
      for (float value : toFloatVector(file.view("param/" + p)))
        ASSERT_TRUE(std::isfinite(value)) << p;
    }

    // Rewriting gives a file with the same tensors and metadata.
    SafetensorsWriter writer;
    for (const std::string &tensor : file.names())
      writer.add(tensor, file.view(tensor));
    for (const auto &[key, value] : file.metadata())
      writer.setMetadata(key, value);
    SafetensorsFile copy =
        SafetensorsFile::fromBytes(writer.serialize(), "copy");
    EXPECT_EQ(copy.names(SafetensorsFile::NameOrder::Sorted),
              file.names(SafetensorsFile::NameOrder::Sorted));
    EXPECT_EQ(copy.metadata(), file.metadata());
    for (const std::string &tensor : file.names())
      ASSERT_EQ(viewBytes(copy.view(tensor)), viewBytes(file.view(tensor)))
          << tensor;
  }
}
#endif

TEST(Safetensors, CorruptedFilesFailCleanly) {
  // Random byte flips, truncations and extensions of a valid file: each
  // either still reads or throws Error, and never crashes (the sanitizer
  // builds make this a memory-safety check).
  SafetensorsWriter writer;
  writer.add("a.weight", DType::F32, {3, 4}, Bytes(48, 1));
  writer.add("b", DType::BF16, {5}, Bytes(10, 2));
  writer.add("c", DType::I64, {}, Bytes(8, 3));
  writer.setMetadata("steps", "4");
  const Bytes valid = writer.serialize();
  std::mt19937 random(99);
  int rejected = 0;
  for (int i = 0; i < 20000; ++i) {
    Bytes file = valid;
    switch (random() % 4) {
    case 0:
      file.resize(random() % file.size());
      break;
    case 1:
      file.resize(file.size() + 1 + random() % 16, 0);
      break;
    default:
      for (int flips = 1 + random() % 3; flips > 0; --flips)
        file[random() % file.size()] ^=
            static_cast<unsigned char>(1u << (random() % 8));
    }
    try {
      SafetensorsFile loaded = SafetensorsFile::fromBytes(file, "mutant");
      for (const std::string &name : loaded.names())
        (void)toDoubleVector(loaded.view(name));
    } catch (const Error &) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 10000);
}
