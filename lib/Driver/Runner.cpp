//===- Runner.cpp - Building and running generated code -------------------===//

#include "optgen/Driver/Runner.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/WithColor.h"
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
  SmallString<256> src(dir), build(dir), log(dir), cache(dir);
  sys::path::append(src, "src");
  sys::path::append(build, "build");
  sys::path::append(log, "build.log");
  sys::path::append(cache, "build", "CMakeCache.txt");
  if (failed(writeFiles(src, files)))
    return "";
  if (!sys::fs::exists(cache) &&
      execute("cmake", {"-S", src.str().str(), "-B", build.str().str(),
                        "-DCMAKE_BUILD_TYPE=Release",
                        "-DOPTGEN_BUILD_RUNNER=ON"},
              log.str()) != 0) {
    WithColor::error(errs(), "optgen")
        << "configuring the generated code failed; see " << log << "\n";
    return "";
  }
  if (execute("cmake", {"--build", build.str().str(), "--target", runner},
              log.str()) != 0) {
    WithColor::error(errs(), "optgen")
        << "building the generated code failed; see " << log << "\n";
    return "";
  }
  SmallString<256> executable(build);
  sys::path::append(executable, runner);
  return executable.str().str();
}
