//===- ReliabilityTest.cpp - Atomic files, checked checkpoints ------------===//
//
// What docs/RELIABILITY.md promises on one rank: files are replaced
// atomically (a failed write, as on a full disk, keeps the previous one);
// a checkpoint is refused, with a message saying what differs, when it
// comes from another spec, holds other shapes or parameters, a step count
// that is none, or is corrupted or truncated, and a refused load changes
// nothing; parameters without elements step; hyperparameters that cannot
// be are refused. (Several ranks: MpiAgreementTest.cpp.)
//
//===----------------------------------------------------------------------===//

#include "optgen/runtime/Optimizer.h"

#include "optgen/runtime/Error.h"
#include "optgen/runtime/FileIO.h"
#include "optgen/runtime/Hash.h"
#include "optgen/runtime/Safetensors.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using namespace optgen::runtime;

namespace {

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// A fresh folder for one test.
std::string folder(const std::string &name) {
  std::string dir = testing::TempDir() + "/reliability-" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

/// What the test expects of an Error's message.
template <typename F> std::string errorOf(F &&f) {
  try {
    f();
  } catch (const Error &error) {
    return error.what();
  }
  return "(no error)";
}

#define EXPECT_CONTAINS(text, part)                                           \
  EXPECT_NE(std::string(text).find(part), std::string::npos)                   \
      << "'" << (text) << "' does not contain '" << (part) << "'"

TEST(HashTest, DependsOnTheBytesNotOnHowTheyCome) {
  std::string text(1000, 'x');
  for (size_t i = 0; i < text.size(); ++i)
    text[i] = static_cast<char>(i * 7);
  Hasher pieces;
  for (size_t at = 0; at < text.size(); at += 13)
    pieces.update(text.data() + at, std::min<size_t>(13, text.size() - at));
  EXPECT_EQ(pieces.digest(), hash64(text));
  std::string flipped = text;
  flipped[500] ^= 1;
  EXPECT_NE(hash64(flipped), hash64(text));
  EXPECT_NE(hash64(text.substr(0, 999)), hash64(text));
  EXPECT_EQ(hex64(0x1234), "0000000000001234");
}

TEST(FileIOTest, ReplacesAtomicallyAndLeavesNoTemporary) {
  std::string dir = folder("atomic");
  std::string path = dir + "/file";
  writeFileAtomically(path, "first");
  writeFileAtomically(path, "second, longer");
  EXPECT_EQ(readFile(path), "second, longer");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir),
                          std::filesystem::directory_iterator()),
            1);
  EXPECT_CONTAINS(errorOf([&] { writeFileAtomically(dir + "/no/file", "x"); }),
                  "the folder '" + dir + "/no' does not exist");
  EXPECT_CONTAINS(errorOf([&] { writeFileAtomically(dir, "x"); }),
                  "is a folder");
}

TEST(FileIOTest, AFailedWriteKeepsThePreviousFile) {
  // A full disk, as the file size limit makes it: write() fails part-way.
  std::string dir = folder("full");
  std::string path = dir + "/state";
  writeFileAtomically(path, "the previous, good file");
  std::string big(1 << 20, 'z');
  struct rlimit old;
  getrlimit(RLIMIT_FSIZE, &old);
  auto handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = 4096;
  setrlimit(RLIMIT_FSIZE, &small);
  std::string error = errorOf([&] { writeFileAtomically(path, big); });
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, handler);
  EXPECT_CONTAINS(error, "'" + path + "': cannot write");
  EXPECT_CONTAINS(error, "the previous file, if any, is unchanged");
  EXPECT_EQ(readFile(path), "the previous, good file");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir),
                          std::filesystem::directory_iterator()),
            1);
}

/// A character device like `system` (major, minor) for a test to write:
/// as root, a node of its own in `dir` (a writer that replaced it would
/// replace only this one, not the system's), else the system's, which
/// nobody else can replace.
std::string device(const std::string &dir, const std::string &system,
                   unsigned major, unsigned minor) {
  if (::geteuid() != 0)
    return system;
  std::string path = dir + "/" + std::filesystem::path(system).filename().string();
  EXPECT_EQ(::mknod(path.c_str(), S_IFCHR | 0666, makedev(major, minor)), 0)
      << std::strerror(errno);
  return path;
}

TEST(FileIOTest, ReplacesOnlyRegularFiles) {
  std::string dir = folder("kinds");
  // A link is followed: what it names is replaced, and it stays a link.
  writeFileAtomically(dir + "/target", "old");
  std::filesystem::create_symlink("target", dir + "/link");
  writeFileAtomically(dir + "/link", "new");
  EXPECT_TRUE(std::filesystem::is_symlink(dir + "/link"));
  EXPECT_EQ(readFile(dir + "/target"), "new");
  // A file keeps its permissions.
  std::filesystem::permissions(dir + "/target",
                               std::filesystem::perms::owner_read |
                                   std::filesystem::perms::owner_write);
  writeFileAtomically(dir + "/target", "newer");
  EXPECT_EQ(std::filesystem::status(dir + "/target").permissions(),
            std::filesystem::perms::owner_read |
                std::filesystem::perms::owner_write);
  // A dangling link gets its target, in the folder it names.
  std::filesystem::create_symlink("made", dir + "/dangling");
  writeFileAtomically(dir + "/dangling", "made");
  EXPECT_EQ(readFile(dir + "/made"), "made");
  std::filesystem::create_symlink("loop", dir + "/loop");
  EXPECT_CONTAINS(errorOf([&] { writeFileAtomically(dir + "/loop", "x"); }),
                  "cannot follow the link");

  // A fifo is written through, and stays a fifo. (Its reader opens first,
  // without waiting, so that the write neither waits nor, should the fifo
  // be replaced, leaves the test waiting.)
  std::string fifo = dir + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  writeFileAtomically(fifo, "through the fifo");
  char received[64] = {};
  EXPECT_EQ(::read(reader, received, sizeof received), 16);
  ::close(reader);
  EXPECT_STREQ(received, "through the fifo");
  EXPECT_TRUE(std::filesystem::is_fifo(fifo));

  // A device is written through: /dev/null takes the bytes and stays a
  // device, /dev/full's full disk is the error.
  std::string null = device(dir, "/dev/null", 1, 3);
  std::string full = device(dir, "/dev/full", 1, 7);
  writeFileAtomically(null, "gone");
  EXPECT_TRUE(std::filesystem::is_character_file(null));
  EXPECT_CONTAINS(errorOf([&] { writeFileAtomically(full, "x"); }),
                  "'" + full + "': cannot write: " + std::strerror(ENOSPC));
  EXPECT_TRUE(std::filesystem::is_character_file(full));

  // Anything else is left as it is.
  std::string socket = dir + "/socket";
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, socket.c_str(), sizeof address.sun_path - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address),
            0);
  EXPECT_CONTAINS(errorOf([&] { writeFileAtomically(socket, "x"); }),
                  "is a socket, not a file");
  ::close(fd);
  EXPECT_TRUE(std::filesystem::is_socket(socket));
}

TEST(FileIOTest, SameFileSeesThroughPaths) {
  std::string dir = folder("same");
  writeFileAtomically(dir + "/a", "a");
  EXPECT_TRUE(sameFile(dir + "/a", dir + "/./a"));
  EXPECT_TRUE(sameFile(dir + "/a", dir + "/../reliability-same/a"));
  EXPECT_FALSE(sameFile(dir + "/a", dir + "/b"));
  EXPECT_TRUE(sameFile(dir + "/new", dir + "/./new"));
}

//===----------------------------------------------------------------------===//
// An optimizer to checkpoint
//===----------------------------------------------------------------------===//

/// p -= lr * (buf = momentum * buf + g); a second state `sq` of one row per
/// matrix row (not shaped like the parameter).
void stepSgd(const RuleCall &call) {
  float lr = static_cast<float>(call.hypers[0]);
  float momentum = static_cast<float>(call.hypers[1]);
  for (int64_t i = 0; i < call.rows * call.cols; ++i) {
    call.states[0][i] = momentum * call.states[0][i] + call.grad[i];
    call.param[i] -= lr * call.states[0][i];
    call.states[1][i / call.cols] += call.grad[i] * call.grad[i];
  }
}

void statesSgd(const int64_t *shape, int rank, int64_t *rows, int64_t *cols) {
  int64_t numel = 1;
  for (int d = 0; d < rank; ++d)
    numel *= shape[d];
  rows[0] = rank == 2 ? shape[0] : 1;
  cols[0] = rank == 2 ? shape[1] : numel;
  rows[1] = rows[0];
  cols[1] = 1;
}

OptimizerSpec sgdSpec(const char *name = "sgd", const char *state = "buf") {
  OptimizerSpec spec;
  spec.name = name;
  spec.rules.push_back({"sgd",
                        -1,
                        {{"lr", 1, 0, false, false, {}},
                         {"momentum", 1, 1, false, true, {0.5}},
                         {"ns_steps", 1, 2, true, true, {5}, true}},
                        {state, "sq"},
                        statesSgd,
                        stepSgd});
  spec.groups.push_back({"all", 0, {"*"}, nullptr, {{"lr", {0.1}}}});
  spec.distribution = Distribution::None;
  spec.smallNumel = 0;
  return spec;
}

struct Tensors {
  std::vector<float> value, grad;
  std::vector<int64_t> shape;
};

struct Model {
  std::map<std::string, Tensors> params;
  explicit Model(std::vector<std::pair<std::string, std::vector<int64_t>>> list) {
    int seed = 1;
    for (auto &[name, shape] : list) {
      int64_t numel = 1;
      for (int64_t d : shape)
        numel *= d;
      Tensors t{{}, {}, shape};
      for (int64_t i = 0; i < numel; ++i) {
        t.value.push_back(0.25f * static_cast<float>((i * 3 + seed) % 11));
        t.grad.push_back(0.125f * static_cast<float>((i * 5 + seed) % 7) - 0.375f);
      }
      ++seed;
      params[name] = std::move(t);
    }
  }
  void addTo(OptimizerFront &opt) {
    for (auto &[name, t] : params)
      opt.addParameter(name, {t.value.data(), DType::F32, t.shape},
                       {t.grad.data(), DType::F32, t.shape});
  }
};

/// A checkpoint saved after two steps of `model` on `spec`.
std::string saved(const std::string &path, Model model,
                  OptimizerSpec spec = sgdSpec()) {
  Optimizer opt(spec);
  model.addTo(opt);
  opt.finalize();
  opt.step();
  opt.step();
  opt.saveState(path);
  return path;
}

/// Rewrites the checkpoint at `path` through `edit` (of its metadata and
/// tensors), with a checksum that fits again.
void rewrite(const std::string &path,
             const std::function<void(std::map<std::string, std::string> &,
                                      std::map<std::string, Tensor> &)> &edit) {
  SafetensorsFile file = SafetensorsFile::open(path);
  std::map<std::string, std::string> metadata = file.metadata();
  std::map<std::string, Tensor> tensors;
  for (const std::string &name : file.names())
    tensors[name] = Tensor::copyOf(file.view(name));
  edit(metadata, tensors);
  std::map<std::string, TensorView> views;
  for (auto &[name, tensor] : tensors)
    views[name] = tensor.view();
  metadata["checksum"] = checkpointChecksum(metadata, views);
  SafetensorsWriter writer;
  for (auto &[key, value] : metadata)
    writer.setMetadata(key, value);
  for (auto &[name, tensor] : tensors)
    writer.add(name, tensor.dtype, tensor.shape, tensor.bytes);
  writer.write(path);
}

/// The state of `opt`, as its checkpoint bytes.
std::string stateOf(Optimizer &opt, const std::string &dir) {
  std::string path = dir + "/probe.safetensors";
  opt.saveState(path);
  return readFile(path);
}

TEST(CheckpointTest, StatesKeepTheirParametersShapes) {
  std::string dir = folder("shapes");
  std::string path = saved(dir + "/c.safetensors",
                           Model({{"w", {2, 3}}, {"cube", {2, 2, 2}}}));
  SafetensorsFile file = SafetensorsFile::open(path);
  EXPECT_EQ(file.info("state/w/buf").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(file.info("state/cube/buf").shape,
            (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(file.info("state/w/sq").shape, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(file.info("step/w").dtype, DType::I64);
  EXPECT_EQ(file.info("step/w").shape, std::vector<int64_t>{});
  const auto &meta = file.metadata();
  EXPECT_EQ(meta.at("format"), "optgen-optimizer-state");
  EXPECT_EQ(meta.at("format_version"), "1");
  EXPECT_EQ(meta.at("optimizer"), "sgd");
  EXPECT_EQ(meta.at("checksum").size(), 16u);
  EXPECT_EQ(meta.at("hyperparameters"),
            "{\"all\":{\"lr\":[0.1],\"momentum\":[0.5],\"ns_steps\":[5]}}");
  EXPECT_CONTAINS(meta.at("plan"), "[\"w\",[2,3],\"sgd\"]");
}

TEST(CheckpointTest, ResumesBitwiseWithHyperparametersAndSteps) {
  std::string dir = folder("resume");
  Model a({{"w", {2, 3}}, {"b", {5}}}), b = a;
  Optimizer first(sgdSpec());
  a.addTo(first);
  first.finalize();
  first.setHyper("all", "lr", 0.37);
  first.step();
  first.saveState(dir + "/c.safetensors");

  Optimizer second(sgdSpec());
  b.params = a.params;
  b.addTo(second);
  second.finalize();
  second.loadState(dir + "/c.safetensors");
  EXPECT_EQ(second.hyper("all", "lr"), 0.37);
  EXPECT_EQ(second.stepCount("w"), 1);
  for (int s = 0; s < 3; ++s) {
    first.step();
    second.step();
  }
  for (auto &[name, t] : a.params)
    EXPECT_EQ(t.value, b.params[name].value) << name;
  EXPECT_EQ(stateOf(first, dir), stateOf(second, dir));
}

TEST(CheckpointTest, InMemoryIsTheFileAndImportsAsItLoads) {
  std::string dir = folder("memory");
  Model a({{"w", {2, 3}}, {"b", {5}}}), b = a;
  Optimizer first(sgdSpec());
  a.addTo(first);
  first.finalize();
  first.step();
  first.saveState(dir + "/c.safetensors");
  Optimizer::Checkpoint exported = first.exportState();
  // The same metadata and tensors as the file.
  SafetensorsFile file = SafetensorsFile::open(dir + "/c.safetensors");
  EXPECT_EQ(exported.metadata, file.metadata());
  ASSERT_EQ(exported.tensors.size(), file.names().size());
  std::map<std::string, TensorView> views;
  for (auto &[name, tensor] : exported.tensors) {
    TensorView there = file.view(name);
    EXPECT_EQ(tensor.shape, there.shape) << name;
    EXPECT_EQ(tensor.dtype, there.dtype) << name;
    EXPECT_EQ(std::memcmp(tensor.bytes.data(), there.data, there.byteSize()), 0)
        << name;
    views[name] = tensor.view();
  }

  // Imported, it resumes as the file does.
  Optimizer second(sgdSpec());
  b.params = a.params;
  b.addTo(second);
  second.finalize();
  second.importState(exported.metadata, views, "the state dict");
  EXPECT_EQ(second.stepCount("w"), 1);
  first.step();
  second.step();
  for (auto &[name, t] : a.params)
    EXPECT_EQ(t.value, b.params[name].value) << name;

  // Checked as a file is, checksum included: a flipped bit of a state (it
  // loaded, m[0] 0.05 -> 1.7e37), an edited checksum or count of skipped
  // steps, is refused, and the state stays as it was.
  std::string dirState = stateOf(second, dir);
  auto importing = [&](const std::map<std::string, std::string> &metadata) {
    return errorOf([&] {
      second.importState(metadata, views, "the state dict");
    });
  };
  std::vector<unsigned char> &bytes = exported.tensors["state/b/buf"].bytes;
  bytes[3] ^= 0x40;
  EXPECT_CONTAINS(importing(exported.metadata),
                  "the state dict is refused: it is corrupted: it says its "
                  "checksum is '" +
                      exported.metadata["checksum"] + "', but its contents "
                      "hash to '");
  bytes[3] ^= 0x40;
  for (const char *key : {"checksum", "skipped_steps"}) {
    std::map<std::string, std::string> edited = exported.metadata;
    edited[key] = "7";
    EXPECT_CONTAINS(importing(edited), "the state dict is refused: it is "
                                       "corrupted");
  }
  EXPECT_EQ(stateOf(second, dir), dirState);
  // Whatever else is wrong, a checkpoint whose checksum fits names it.
  views.erase("step/w");
  std::map<std::string, std::string> partial = exported.metadata;
  partial["checksum"] = checkpointChecksum(partial, views);
  EXPECT_EQ(importing(partial),
            "the state dict is refused: it has no step count for parameter "
            "'w'");
  Tensor elsewhere = exported.tensors["step/w"];
  views["step/w"] = elsewhere.view();
  views["step/w"].device = Device::Cuda;
  EXPECT_EQ(errorOf([&] {
              second.importState(exported.metadata, views, "the state dict");
            }),
            "the state dict is refused: its tensor 'step/w' is in cuda "
            "memory; a checkpoint is read from host memory");
}

/// Loads `path` into a fresh optimizer of `model` on `spec` that has
/// stepped once: the error, and whether the state stayed as it was.
std::pair<std::string, bool> refused(const std::string &path, Model model,
                                     OptimizerSpec spec = sgdSpec()) {
  Optimizer opt(spec);
  model.addTo(opt);
  opt.finalize();
  opt.step();
  std::string dir = std::filesystem::path(path).parent_path();
  std::string before = stateOf(opt, dir);
  std::string error = errorOf([&] { opt.loadState(path); });
  return {error, stateOf(opt, dir) == before};
}

TEST(CheckpointTest, RefusesATransposedShapeOfEqualSize) {
  std::string dir = folder("transposed");
  std::string path = saved(dir + "/c.safetensors", Model({{"w", {2, 3}}}));
  auto [error, unchanged] = refused(path, Model({{"w", {3, 2}}}));
  EXPECT_EQ(error, "'" + path +
                       "' is refused: parameter 'w' has shape [2, 3] in the "
                       "checkpoint, [3, 2] here");
  EXPECT_TRUE(unchanged);
}

TEST(CheckpointTest, RefusesAnotherOptimizersState) {
  std::string dir = folder("other");
  std::string path = saved(dir + "/c.safetensors", Model({{"w", {4}}}),
                           sgdSpec("lion"));
  EXPECT_EQ(refused(path, Model({{"w", {4}}})).first,
            "'" + path +
                "' is refused: it holds the state of optimizer 'lion', not "
                "of 'sgd'");
  path = saved(dir + "/d.safetensors", Model({{"w", {4}}}),
               sgdSpec("sgd", "momentum_buffer"));
  EXPECT_EQ(refused(path, Model({{"w", {4}}})).first,
            "'" + path +
                "' is refused: rule 'sgd' has states [buf, sq] here, "
                "[momentum_buffer, sq] in the checkpoint");
}

TEST(CheckpointTest, RefusesTheStateOfOtherMath) {
  // The spec's structure is the same; its math (another spec of the same
  // optimizer, other -D values) is not: the fingerprints differ.
  std::string dir = folder("math");
  OptimizerSpec f32 = sgdSpec(), bf16 = sgdSpec();
  f32.math = "00000000000000f3";
  bf16.math = "00000000000000bf";
  std::string path = saved(dir + "/c.safetensors", Model({{"w", {4}}}), f32);
  auto [error, unchanged] = refused(path, Model({{"w", {4}}}), bf16);
  EXPECT_EQ(error, "'" + path +
                       "' is refused: it was saved by an optimizer that "
                       "computes other math than this one: another spec, or "
                       "other -D values (math fingerprints "
                       "\"00000000000000f3\" in the checkpoint, "
                       "\"00000000000000bf\" here)");
  EXPECT_TRUE(unchanged);
  EXPECT_EQ(refused(path, Model({{"w", {4}}}), f32).first, "(no error)");
}

TEST(CheckpointTest, RefusesAMissingOrAnExtraParameter) {
  std::string dir = folder("missing");
  std::string path = saved(dir + "/c.safetensors", Model({{"w", {4}}}));
  auto [error, unchanged] = refused(path, Model({{"w", {4}}, {"b", {2}}}));
  EXPECT_EQ(error, "'" + path +
                       "' is refused: it holds no state for parameter 'b'");
  EXPECT_TRUE(unchanged);
  path = saved(dir + "/d.safetensors", Model({{"w", {4}}, {"b", {2}}}));
  EXPECT_EQ(refused(path, Model({{"w", {4}}})).first,
            "'" + path +
                "' is refused: it holds parameter 'b', which this optimizer "
                "does not have");
}

TEST(CheckpointTest, RefusesStepCountsThatAreNone) {
  std::string dir = folder("steps");
  Model model({{"a", {3}}, {"w", {4}}});
  std::string path = saved(dir + "/c.safetensors", model);
  rewrite(path, [](auto &, auto &tensors) {
    int64_t negative = -3;
    std::memcpy(tensors["step/w"].bytes.data(), &negative, 8);
  });
  auto [error, unchanged] = refused(path, model);
  EXPECT_EQ(error, "'" + path +
                       "' is refused: parameter 'w' has taken -3 steps, says "
                       "the checkpoint: not a step count");
  EXPECT_TRUE(unchanged) << "state/a comes before step/w: nothing may change";
  for (double bad : {std::nan(""), 1e30, 2.5}) {
    path = saved(dir + "/d.safetensors", model);
    rewrite(path, [&](auto &, auto &tensors) {
      Tensor step = Tensor::zeros(DType::F64, {});
      std::memcpy(step.bytes.data(), &bad, 8);
      tensors["step/w"] = step;
    });
    EXPECT_EQ(refused(path, model).first,
              "'" + path +
                  "' is refused: tensor 'step/w' is F64 [], but parameter "
                  "'w' [4] needs I64 []");
  }
}

TEST(CheckpointTest, RefusesCorruptedAndTruncatedFiles) {
  std::string dir = folder("corrupt");
  Model model({{"w", {2, 3}}});
  std::string path = saved(dir + "/c.safetensors", model);
  std::string bytes = readFile(path);
  std::string flipped = bytes;
  flipped[flipped.size() - 5] ^= 0x10;
  writeFileAtomically(path, flipped);
  auto [error, unchanged] = refused(path, model);
  EXPECT_CONTAINS(error, "'" + path + "' is refused: it is corrupted");
  EXPECT_TRUE(unchanged);
  writeFileAtomically(path, bytes.substr(0, bytes.size() - 7));
  EXPECT_CONTAINS(refused(path, model).first, "'" + path + "'");
  writeFileAtomically(path, bytes.substr(0, 20));
  EXPECT_CONTAINS(refused(path, model).first, "'" + path + "'");
  SafetensorsWriter notOurs;
  notOurs.setMetadata("steps", "3");
  notOurs.write(path);
  EXPECT_EQ(refused(path, model).first,
            "'" + path +
                "' is refused: its metadata has no 'format' (an optimizer "
                "checkpoint of optgen has)");
  path = saved(dir + "/d.safetensors", model);
  rewrite(path, [](auto &meta, auto &) { meta["format_version"] = "2"; });
  EXPECT_EQ(refused(path, model).first,
            "'" + path +
                "' is refused: it is format version '2'; this optgen reads "
                "version 1");
}

TEST(CheckpointTest, RefusesHyperparametersTheGroupCannotTake) {
  std::string dir = folder("hypers");
  Model model({{"w", {4}}});
  std::string path = saved(dir + "/c.safetensors", model);
  rewrite(path, [](auto &meta, auto &) {
    meta["hyperparameters"] =
        "{\"all\":{\"lr\":[0.1],\"momentum\":[0.5],\"ns_steps\":[-1]}}";
  });
  EXPECT_EQ(refused(path, model).first,
            "'" + path +
                "' is refused: its hyperparameter 'ns_steps' of group 'all' "
                "is -1: it counts (bounds a slice of a table), so it is at "
                "least 0");
}

TEST(CheckpointTest, AFailedSaveKeepsThePreviousCheckpoint) {
  std::string dir = folder("save");
  Model model({{"w", {4}}});
  Optimizer opt(sgdSpec());
  model.addTo(opt);
  opt.finalize();
  EXPECT_EQ(errorOf([&] { opt.saveState(dir + "/missing/c.safetensors"); }),
            "'" + dir + "/missing/c.safetensors': cannot write: the folder '" +
                dir + "/missing' does not exist");
  std::string path = dir + "/c.safetensors";
  opt.saveState(path);
  std::string good = readFile(path);
  opt.step();
  struct rlimit old;
  getrlimit(RLIMIT_FSIZE, &old);
  auto handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = 64;
  setrlimit(RLIMIT_FSIZE, &small);
  std::string error = errorOf([&] { opt.saveState(path); });
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, handler);
  EXPECT_CONTAINS(error, "cannot write");
  EXPECT_EQ(readFile(path), good);
}

TEST(ReliabilityTest, ParametersWithoutElementsStep) {
  for (std::vector<int64_t> empty :
       {std::vector<int64_t>{0, 8}, {8, 0}, {0}, {2, 0, 3}}) {
    std::string dir = folder("empty");
    Model model({{"w", {2, 3}}}), reference = model;
    Optimizer opt(sgdSpec()), alone(sgdSpec());
    opt.addParameter("empty", {nullptr, DType::F32, empty},
                     {nullptr, DType::F32, empty});
    model.addTo(opt);
    reference.addTo(alone);
    opt.finalize();
    alone.finalize();
    opt.step();
    alone.step();
    EXPECT_EQ(model.params["w"].value, reference.params["w"].value);
    EXPECT_EQ(opt.stepCount("empty"), 1);
    opt.saveState(dir + "/c.safetensors");
    opt.loadState(dir + "/c.safetensors");
  }
}

TEST(ReliabilityTest, ParametersDoNotShareMemory) {
  // One tensor registered twice (tied weights as two names, overlapping
  // views) would be stepped twice where it overlaps (finalize() refuses
  // it); a parameter in a gradient's memory would be written while it is
  // read (the first step refuses it, once the gradients are bound), before
  // anything changes.
  std::vector<float> memory(16, 1.0f), grads(16, 0.5f);
  auto at = [&](std::vector<float> &buffer, size_t offset, int64_t numel) {
    return TensorView{buffer.data() + offset, DType::F32, {numel}};
  };
  auto stepWith = [&](const std::vector<std::array<size_t, 3>> &layout) {
    // Per parameter: its offset in `memory`, its length, its gradient's
    // offset in `grads` (or, past 100, in `memory`).
    Optimizer opt(sgdSpec());
    for (size_t i = 0; i < layout.size(); ++i) {
      auto [offset, numel, grad] = layout[i];
      opt.addParameter("p" + std::to_string(i),
                       at(memory, offset, static_cast<int64_t>(numel)),
                       grad >= 100 ? at(memory, grad - 100, static_cast<int64_t>(numel))
                                   : at(grads, grad, static_cast<int64_t>(numel)));
    }
    std::vector<float> before = memory;
    std::string error = errorOf([&] {
      opt.finalize();
      opt.step();
    });
    if (error != "(no error)") {
      EXPECT_EQ(memory, before) << "a refused step changed a parameter";
    }
    return error;
  };
  EXPECT_EQ(stepWith({{0, 4, 0}, {0, 4, 4}}),
            "parameter 'p0' and parameter 'p1' share memory (one tensor "
            "registered twice, tied weights, or views that overlap): a step "
            "writes each parameter once, so each needs memory of its own");
  EXPECT_EQ(stepWith({{0, 8, 0}, {8, 4, 8}, {6, 4, 12}}),
            "parameter 'p0' and parameter 'p2' share memory (one tensor "
            "registered twice, tied weights, or views that overlap): a step "
            "writes each parameter once, so each needs memory of its own");
  EXPECT_EQ(stepWith({{0, 4, 100}}),
            "parameter 'p0' and its gradient share memory: a step writes the "
            "parameter while it reads the gradient");
  EXPECT_EQ(stepWith({{0, 4, 0}, {4, 4, 102}}),
            "parameter 'p0' and the gradient of 'p1' share memory (one tensor "
            "registered twice, tied weights, or views that overlap): a step "
            "writes each parameter once, so each needs memory of its own");
  // Gradients may share memory (they are only read); parameters side by
  // side do not overlap.
  EXPECT_EQ(stepWith({{0, 4, 0}, {4, 4, 0}, {8, 8, 0}}), "(no error)");

  // Memory moved onto another parameter's is refused at the next step.
  Optimizer opt(sgdSpec());
  opt.addParameter("a", at(memory, 0, 4), at(grads, 0, 4));
  opt.addParameter("b", at(memory, 4, 4), at(grads, 4, 4));
  opt.finalize();
  opt.step();
  opt.rebind("b", at(memory, 2, 4), at(grads, 4, 4));
  EXPECT_CONTAINS(errorOf([&] { opt.step(); }),
                  "parameter 'a' and parameter 'b' share memory");
  opt.rebind("b", at(memory, 4, 4), at(grads, 4, 4));
  EXPECT_EQ(errorOf([&] { opt.step(); }), "(no error)");
}

TEST(ReliabilityTest, HyperparametersMustBeValuesTheRuleCanTake) {
  Optimizer opt(sgdSpec());
  EXPECT_EQ(errorOf([&] { opt.setHyper("all", "lr", std::nan("")); }),
            "hyperparameter 'lr' of group 'all' is nan: hyperparameters are "
            "finite numbers");
  EXPECT_EQ(errorOf([&] { opt.setHyper("all", "ns_steps", 1e30); }),
            "hyperparameter 'ns_steps' of group 'all' is an int (within "
            "2^53), not 1e+30");
  EXPECT_EQ(errorOf([&] { opt.setHyper("all", "ns_steps", 2.5); }),
            "hyperparameter 'ns_steps' of group 'all' is an int (within "
            "2^53), not 2.5");
  EXPECT_EQ(errorOf([&] { opt.setHyper("all", "ns_steps", -1); }),
            "hyperparameter 'ns_steps' of group 'all' is -1: it counts "
            "(bounds a slice of a table), so it is at least 0");
  opt.setHyper("all", "ns_steps", 0);
  EXPECT_EQ(opt.hyper("all", "ns_steps"), 0);
}

/// The state of `opt` as its checkpoint's tensors (name, bytes).
std::map<std::string, std::vector<unsigned char>>
stateTensors(Optimizer &opt, const std::string &dir) {
  std::string path = dir + "/tensors.safetensors";
  opt.saveState(path);
  SafetensorsFile file = SafetensorsFile::open(path);
  std::map<std::string, std::vector<unsigned char>> tensors;
  for (const std::string &name : file.names())
    tensors[name] = Tensor::copyOf(file.view(name)).bytes;
  return tensors;
}

TEST(NonFiniteTest, ByDefaultANaNReachesTheParameter) {
  Model model({{"w", {2, 3}}});
  Optimizer opt(sgdSpec());
  model.addTo(opt);
  opt.finalize();
  model.params["w"].grad[4] = std::nanf("");
  opt.step();
  EXPECT_TRUE(std::isnan(model.params["w"].value[4]));
  EXPECT_EQ(opt.skippedSteps(), 0);
}

TEST(NonFiniteTest, ASkippedStepChangesNothingAndIsCounted) {
  for (DType dtype : {DType::F32, DType::BF16}) {
    for (float bad : {std::nanf(""), INFINITY, -INFINITY}) {
      std::string dir = folder("skip");
      Model model({{"w", {2, 3}}, {"b", {5}}}), reference = model;
      // BF16 copies of the tensors, when asked.
      auto add = [&](Optimizer &opt, Model &m,
                     std::map<std::string, std::vector<uint16_t>> &bits) {
        for (auto &[name, t] : m.params) {
          if (dtype == DType::F32) {
            opt.addParameter(name, {t.value.data(), DType::F32, t.shape},
                             {t.grad.data(), DType::F32, t.shape});
            continue;
          }
          auto &pb = bits[name + "/p"], &gb = bits[name + "/g"];
          pb.resize(t.value.size());
          gb.resize(t.grad.size());
          convertElements(t.value.data(), DType::F32, pb.data(), DType::BF16,
                          static_cast<int64_t>(pb.size()));
          convertElements(t.grad.data(), DType::F32, gb.data(), DType::BF16,
                          static_cast<int64_t>(gb.size()));
          opt.addParameter(name, {pb.data(), DType::BF16, t.shape},
                           {gb.data(), DType::BF16, t.shape});
        }
      };
      std::map<std::string, std::vector<uint16_t>> bits, referenceBits;
      Optimizer opt(sgdSpec()), alone(sgdSpec());
      opt.setNonFinitePolicy(NonFinitePolicy::Skip);
      add(opt, model, bits);
      add(alone, reference, referenceBits);
      opt.finalize();
      alone.finalize();
      opt.step();
      alone.step();
      auto before = stateTensors(opt, dir);
      auto values = bits;
      std::vector<float> w = model.params["w"].value;
      // One bad element in one gradient.
      if (dtype == DType::F32) {
        model.params["b"].grad[3] = bad;
      } else {
        convertElements(&bad, DType::F32, &bits["b/g"][3], DType::BF16, 1);
      }
      opt.step();
      EXPECT_TRUE(opt.lastStepSkipped());
      EXPECT_EQ(opt.skippedSteps(), 1);
      EXPECT_EQ(opt.stepCount("w"), 1);
      EXPECT_TRUE(stateTensors(opt, dir) == before) << "the state changed";
      EXPECT_EQ(model.params["w"].value, w);
      if (dtype == DType::BF16) {
        EXPECT_EQ(bits["w/p"], values["w/p"]);
      }
      // Good gradients again: as if the bad step never was.
      if (dtype == DType::F32)
        model.params["b"].grad[3] = reference.params["b"].grad[3];
      else
        bits["b/g"][3] = referenceBits["b/g"][3];
      opt.step();
      alone.step();
      EXPECT_FALSE(opt.lastStepSkipped());
      EXPECT_EQ(opt.stepCount("w"), 2);
      if (dtype == DType::F32)
        for (auto &[name, t] : model.params)
          EXPECT_EQ(t.value, reference.params[name].value) << name;
      else
        for (auto &[name, t] : bits)
          EXPECT_EQ(t, referenceBits[name]) << name;
      // The count survives a checkpoint.
      opt.saveState(dir + "/c.safetensors");
      Model other = model;
      Optimizer resumed(sgdSpec());
      resumed.setNonFinitePolicy(NonFinitePolicy::Skip);
      other.addTo(resumed);
      resumed.finalize();
      resumed.loadState(dir + "/c.safetensors");
      EXPECT_EQ(resumed.skippedSteps(), 1);
    }
  }
}

} // namespace
