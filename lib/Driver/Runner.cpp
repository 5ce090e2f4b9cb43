//===- Runner.cpp - Building and running generated code -------------------===//

#include "optgen/Driver/Runner.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

using namespace llvm;
using namespace optgen;

int optgen::execute(StringRef program, ArrayRef<std::string> args,
                    std::optional<StringRef> log) {
  ErrorOr<std::string> path = sys::findProgramByName(program);
  if (!path) {
    WithColor::error(errs(), "optgen")
        << "'" << program << "' is not on PATH; --target=cpu builds with it\n";
    return -1;
  }
  SmallVector<StringRef> argv{*path};
  for (const std::string &arg : args)
    argv.push_back(arg);
  std::optional<StringRef> redirects[] = {std::nullopt, log, log};
  std::string message;
  int code = sys::ExecuteAndWait(*path, argv, std::nullopt,
                                 log ? ArrayRef(redirects)
                                     : ArrayRef<std::optional<StringRef>>(),
                                 0, 0, &message);
  if (code < 0)
    WithColor::error(errs(), "optgen")
        << "cannot run " << program << ": " << message << "\n";
  return code;
}

namespace {

/// The size and xxh3 of the file at `path`, or nothing when it cannot be
/// read.
std::optional<std::string> fileHash(StringRef path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> file =
      MemoryBuffer::getFile(path, /*IsText=*/false,
                            /*RequiresNullTerminator=*/false);
  if (!file)
    return std::nullopt;
  StringRef bytes = (*file)->getBuffer();
  return std::to_string(bytes.size()) + " " + utohexstr(xxh3_64bits(bytes));
}

/// Writes a stamp file (atomically); true on failure, after reporting it.
bool writeStamp(StringRef path, StringRef text) {
  if (Error error = writeToOutput(path, [&](raw_ostream &os) {
        os << text;
        return Error::success();
      })) {
    WithColor::error(errs(), "optgen")
        << "cannot write '" << path << "': " << toString(std::move(error))
        << "\n";
    return true;
  }
  return false;
}

} // namespace

std::string optgen::buildRunner(const GeneratedFiles &files,
                                StringRef buildDir) {
  std::string runner;
  for (const auto &[name, text] : files)
    if (StringRef(name).ends_with("_runner.cpp"))
      runner = StringRef(name).drop_back(4).str();
  SmallString<256> dir(buildDir);
  if (dir.empty()) {
    uint64_t hash = 0;
    for (const auto &[name, text] : files)
      hash = xxh3_64bits(StringRef(name + text)) ^ (hash * 31);
    if (!sys::path::cache_directory(dir))
      dir = sys::path::parent_path(OPTGEN_RUNTIME_DIR);
    sys::path::append(dir, "optgen", runner + "-" + utohexstr(hash));
  }
  // Ranks of one `mpirun optgen run` build the same runner: one at a time.
  if (std::error_code error = sys::fs::create_directories(dir)) {
    WithColor::error(errs(), "optgen")
        << "cannot create '" << dir << "': " << error.message() << "\n";
    return "";
  }
  SmallString<256> lockPath(dir);
  sys::path::append(lockPath, "build.lock");
  int lockFd = -1;
  if (std::error_code error = sys::fs::openFileForWrite(lockPath, lockFd)) {
    WithColor::error(errs(), "optgen")
        << "cannot open '" << lockPath << "': " << error.message() << "\n";
    return "";
  }
  auto closeLock = make_scope_exit([&] {
    sys::fs::unlockFile(lockFd);
    sys::Process::SafelyCloseFileDescriptor(lockFd);
  });
  if (std::error_code error = sys::fs::lockFile(lockFd)) {
    WithColor::error(errs(), "optgen")
        << "cannot lock '" << lockPath << "': " << error.message() << "\n";
    return "";
  }
  SmallString<256> src(dir), build(dir), log(dir), configured(dir),
      built(dir);
  sys::path::append(src, "src");
  sys::path::append(build, "build");
  sys::path::append(log, "build.log");
  // Stamps of the steps that completed: an entry that lacks one (a
  // configure or a link that was interrupted, a runner cut short) is
  // repaired, never trusted.
  sys::path::append(configured, "configured.ok");
  sys::path::append(built, "runner.ok");
  SmallString<256> executable(build);
  sys::path::append(executable, runner);
  // The generated files are this entry's own: replacing them is no loss.
  if (failed(writeFiles(src, files, /*force=*/true)))
    return "";

  auto configure = [&]() {
    sys::fs::remove(configured);
    sys::fs::remove_directories(build);
    if (execute("cmake", {"-S", src.str().str(), "-B", build.str().str(),
                          "-DCMAKE_BUILD_TYPE=Release",
                          "-DOPTGEN_BUILD_RUNNER=ON"},
                log.str()) != 0) {
      WithColor::error(errs(), "optgen")
          << "configuring the generated code failed; see " << log << "\n";
      return false;
    }
    return !writeStamp(configured, "configured\n");
  };
  bool fresh = !sys::fs::exists(configured);
  if (fresh && !configure())
    return "";

  // A runner is trusted only as the stamp of its last build describes it.
  std::optional<std::string> hash = fileHash(executable);
  ErrorOr<std::unique_ptr<MemoryBuffer>> stamp = MemoryBuffer::getFile(built);
  if (hash && (!stamp || (*stamp)->getBuffer() != *hash + "\n")) {
    WithColor::warning(errs(), "optgen")
        << "the cached runner '" << executable
        << "' is not the one last built (interrupted, or damaged): "
           "building it again\n";
    sys::fs::remove(executable);
  }
  sys::fs::remove(built);
  auto buildIt = [&]() {
    return execute("cmake", {"--build", build.str().str(), "--target", runner},
                   log.str()) == 0;
  };
  if (!buildIt()) {
    // A cached entry may be broken in ways a build does not repair: start
    // it again once, from the configure.
    if (fresh || !configure() || !buildIt()) {
      WithColor::error(errs(), "optgen")
          << "building the generated code failed; see " << log << "\n";
      return "";
    }
  }
  hash = fileHash(executable);
  if (!hash || writeStamp(built, *hash + "\n")) {
    WithColor::error(errs(), "optgen")
        << "the build left no runner '" << executable << "'\n";
    return "";
  }
  return executable.str().str();
}
