//===- Runner.cpp - Building and running generated code -------------------===//

#include "optgen/Driver/Runner.h"

#include "optgen/Driver/Cache.h"
#include "optgen/Target/CFamily/Names.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Chrono.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/LogicalResult.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <chrono>
#include <vector>

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

std::string joined(StringRef dir, StringRef name) {
  SmallString<256> path(dir);
  sys::path::append(path, name);
  return path.str().str();
}

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

/// The text of a stamp file, or nothing.
std::optional<std::string> readStamp(StringRef path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> file = MemoryBuffer::getFile(path);
  if (!file)
    return std::nullopt;
  return (*file)->getBuffer().str();
}

/// The lines `optgen run` prints while it builds: one as each stage with
/// work to do begins, with the seconds since the build began.
class Progress {
public:
  void stage(const Twine &what) {
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    errs() << "optgen: " << format("[%5.1f s] ", seconds) << what << "\n";
    announced = true;
  }
  /// The last line, when there were others.
  void finish(StringRef runner) {
    if (announced)
      stage("built " + runner);
  }

private:
  std::chrono::steady_clock::time_point start =
      std::chrono::steady_clock::now();
  bool announced = false;
};

/// The build's parallelism: CMAKE_BUILD_PARALLEL_LEVEL (as CMake reads it),
/// else one job per core this process may use.
unsigned buildJobs() {
  unsigned jobs = 0;
  if (std::optional<std::string> level =
          sys::Process::GetEnv("CMAKE_BUILD_PARALLEL_LEVEL"))
    if (!StringRef(*level).getAsInteger(10, jobs) && jobs > 0)
      return jobs;
  return std::max(1u, hardware_concurrency().compute_thread_count());
}

/// A CMake project configured and built in a folder: `source` into
/// DIR/build with `options`, its output in DIR/build.log, and the stamp
/// DIR/configured.ok holding the options it was configured with.
struct CMakeBuild {
  std::string dir;
  std::string source;
  std::vector<std::string> options;
  /// What it builds, for the lines and errors the user reads, and a note
  /// for the line that announces its configure.
  std::string what;
  std::string note;

  std::string build() const { return joined(dir, "build"); }
  std::string log() const { return joined(dir, "build.log"); }
  std::string configuredStamp() const { return joined(dir, "configured.ok"); }
  std::string configuredText() const { return join(options, "\n") + "\n"; }
  bool isConfigured() const {
    return readStamp(configuredStamp()) == configuredText();
  }

  /// Configures the build folder (from scratch) unless it is configured
  /// with these options already, or always with `again`.
  bool configure(Progress &progress, bool again) const {
    if (!again && isConfigured())
      return true;
    progress.stage("configuring " + what + " in " + dir + note);
    sys::fs::remove(configuredStamp());
    sys::fs::remove_directories(build());
    std::vector<std::string> args{"-S", source, "-B", build()};
    llvm::append_range(args, options);
    if (execute("cmake", args, StringRef(log())) != 0) {
      WithColor::error(errs(), "optgen")
          << "configuring " << what << " failed; see " << log() << "\n";
      return false;
    }
    return writeEntryFile(configuredStamp(), configuredText());
  }

  /// Builds `targets` (everything when empty), quietly on failure: the
  /// caller may try again.
  bool make(Progress &progress, ArrayRef<std::string> targets) const {
    unsigned jobs = buildJobs();
    progress.stage("building " + what + " with " + Twine(jobs) + " job" +
                   (jobs == 1 ? "" : "s") + " (log: " + log() + ")");
    std::vector<std::string> args{"--build", build(), "--parallel",
                                  std::to_string(jobs)};
    for (const std::string &target : targets)
      llvm::append_range(args, ArrayRef<std::string>{"--target", target});
    return execute("cmake", args, StringRef(log())) == 0;
  }

  /// Configures (when needed) and runs `step`; a folder configured before
  /// whose step fails may be broken in ways a build does not repair, so it
  /// is configured from scratch and the step run once more. False after
  /// reporting the failure.
  bool configureAnd(Progress &progress,
                    function_ref<bool(const CMakeBuild &)> step) const {
    bool reused = isConfigured();
    if (!configure(progress, /*again=*/false))
      return false;
    if (step(*this))
      return true;
    if (reused) {
      if (!configure(progress, /*again=*/true))
        return false;
      if (step(*this))
        return true;
    }
    WithColor::error(errs(), "optgen")
        << "building " << what << " failed; see " << log() << "\n";
    return false;
  }
};

/// Where runners find the runtime: a folder holding optgenConfig.cmake, and
/// what identifies that runtime (runners are keyed by it).
struct RuntimePackage {
  std::string configDir;
  std::string identity;
};

/// The package of an installed optgen, PREFIX/lib/cmake/optgen beside
/// PREFIX/bin/optgen, when this optgen is installed; an error when it lacks
/// the component the target needs.
FailureOr<std::optional<RuntimePackage>> installedRuntime(bool cuda,
                                                          bool emulated) {
  std::string executable = sys::fs::getMainExecutable(nullptr, nullptr);
  StringRef prefix = sys::path::parent_path(sys::path::parent_path(executable));
  std::string lib = joined(prefix, "lib");
  std::string config = joined(lib, "cmake/optgen");
  if (prefix.empty() || !sys::fs::exists(joined(config, "optgenConfig.cmake")))
    return std::optional<RuntimePackage>();
  if (emulated &&
      !sys::fs::exists(joined(lib, "liboptgen_runtime_cuda_emulated.a"))) {
    WithColor::error(errs(), "optgen")
        << "the optgen installed in '" << prefix
        << "' has no emulated CUDA device (built with "
           "OPTGEN_RUNTIME_EMULATED=OFF): --device=emulated needs one\n";
    return failure();
  }
  if (cuda && !sys::fs::exists(joined(lib, "liboptgen_runtime_cuda.a"))) {
    WithColor::error(errs(), "optgen")
        << "the optgen installed in '" << prefix
        << "' has no cuda runtime (CMake found no CUDA toolkit where it was "
           "built): --target cuda needs one\n";
    return failure();
  }
  // A runtime installed again over this one makes new runners.
  std::string identity = "installed " + config;
  for (StringRef component : {"core", "cpu", "mpi", "runner", "cuda", "nccl",
                              "cuda_emu", "cuda_emulated", "nccl_emulated"}) {
    std::string archive = ("liboptgen_runtime_" + component + ".a").str();
    sys::fs::file_status status;
    if (!sys::fs::status(joined(lib, archive), status))
      identity += (" " + archive + ":" + Twine(status.getSize()) + ":" +
                   Twine(sys::toTimeT(status.getLastModificationTime())))
                      .str();
  }
  return std::optional<RuntimePackage>(RuntimePackage{config, identity});
}

/// A hash of the runtime's sources (its tests aside): a runtime built from
/// them is reused until they change.
std::string sourcesHash(StringRef sources) {
  std::vector<std::string> paths;
  std::error_code error;
  std::string tests = joined(sources, "test");
  for (sys::fs::recursive_directory_iterator it(sources, error,
                                                /*follow=*/false),
       end;
       it != end && !error; it.increment(error)) {
    if (it->path() == tests) {
      it.no_push();
      continue;
    }
    if (it->type() == sys::fs::file_type::regular_file)
      paths.push_back(it->path());
  }
  llvm::sort(paths);
  std::string bytes;
  for (const std::string &path : paths) {
    bytes += StringRef(path).drop_front(sources.size()).str() + '\0';
    if (ErrorOr<std::unique_ptr<MemoryBuffer>> file =
            MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false))
      bytes += (*file)->getBuffer().str() + '\0';
  }
  return utohexstr(xxh3_64bits(bytes));
}

/// The runtime built from this optgen's sources into the cache (once:
/// later calls find it built), installed there as a package.
std::optional<RuntimePackage> cachedRuntime(bool cuda, Progress &progress) {
  StringRef sources = OPTGEN_RUNTIME_DIR;
  if (!sys::fs::is_directory(sources)) {
    WithColor::error(errs(), "optgen")
        << "no runtime to build runners with: this optgen is not installed "
           "(no lib/cmake/optgen beside its bin/), and its runtime's sources ('"
        << sources << "') are gone; install optgen (cmake --install)\n";
    return std::nullopt;
  }
  std::string cache = cacheDirectory();
  if (cache.empty())
    return std::nullopt;
  StringRef target = cuda ? "cuda" : "cpu";
  std::string dir = joined(cache, ("runtime-" + target + "-" OPTGEN_VERSION "-" +
                                   sourcesHash(sources))
                                      .str());
  std::unique_ptr<EntryLock> lock = EntryLock::acquire(dir, [&] {
    progress.stage("waiting for another optgen, which builds the runtime in " +
                   dir);
  });
  if (!lock || !describeEntry(dir, ("optgen " OPTGEN_VERSION "'s runtime (" +
                                    target + "), built from " + sources)
                                       .str()))
    return std::nullopt;
  std::string install = joined(dir, "install");
  RuntimePackage package{joined(install, "lib/cmake/optgen"), dir};
  std::string installed = joined(dir, "installed.ok");
  if (readStamp(installed) == package.configDir + "\n" &&
      sys::fs::exists(joined(package.configDir, "optgenConfig.cmake")))
    return package;

  sys::fs::remove(installed);
  CMakeBuild runtime{dir,
                     sources.str(),
                     {"-DCMAKE_BUILD_TYPE=Release",
                      "-DCMAKE_INSTALL_PREFIX=" + install,
                      "-DOPTGEN_RUNTIME_INSTALL=ON",
                      "-DOPTGEN_VERSION=" OPTGEN_VERSION,
                      "-DOPTGEN_RUNTIME_TESTS=OFF",
                      cuda ? "-DOPTGEN_RUNTIME_CUDA=ON"
                           : "-DOPTGEN_RUNTIME_CUDA=OFF"},
                     ("optgen's runtime (" + target + ")").str(),
                     " (once: every spec's runner links it)"};
  if (!runtime.configureAnd(progress, [&](const CMakeBuild &build) {
        return build.make(progress, {}) &&
               execute("cmake", {"--install", build.build()},
                       StringRef(build.log())) == 0;
      }))
    return std::nullopt;
  if (!writeEntryFile(installed, package.configDir + "\n"))
    return std::nullopt;
  return package;
}

/// The runtime runners link: an installed optgen's, else one built into
/// the cache.
std::optional<RuntimePackage> runtimePackage(bool cuda, bool emulated,
                                             Progress &progress) {
  FailureOr<std::optional<RuntimePackage>> installed =
      installedRuntime(cuda, emulated);
  if (failed(installed))
    return std::nullopt;
  if (*installed)
    return *installed;
  return cachedRuntime(cuda, progress);
}

} // namespace

std::string optgen::buildRunner(const GeneratedFiles &files,
                                TargetAttr target, StringRef buildDir,
                                bool emulated) {
  Progress progress;
  std::string runner, optimizer;
  // A device target's code is CUDA: it links the runtime's cuda component,
  // or the emulated device.
  bool cuda = target.isDevice();
  for (const auto &[name, text] : files) {
    // NAME_runner.cpp, NAME the optimizer's name; its CMake target's is
    // legalised as the generated CMakeLists.txt's.
    if (StringRef stem = name; stem.consume_back("_runner.cpp")) {
      optimizer = stem.str();
      runner = legalIdentifier(stem) + "_runner";
    }
  }
  emulated = emulated && cuda;
  std::string flavour =
      target.getName().str() + (emulated ? "-emulated" : "");
  // The emulated device needs no CUDA toolkit: it is in the runtime built
  // for the CPU.
  std::optional<RuntimePackage> runtime =
      runtimePackage(cuda && !emulated, emulated, progress);
  if (!runtime)
    return "";

  // The runner's key: its files and the runtime it links.
  std::string keyed = runtime->identity + '\0';
  for (const auto &[name, text] : files)
    keyed += name + '\0' + text + '\0';
  std::string key = utohexstr(xxh3_64bits(keyed));
  std::string dir = buildDir.str();
  if (dir.empty()) {
    std::string cache = cacheDirectory();
    if (cache.empty())
      return "";
    dir = joined(cache, optimizer + "-" + flavour + "-" + key);
  }
  std::unique_ptr<EntryLock> lock = EntryLock::acquire(dir, [&] {
    progress.stage("waiting for another optgen, which builds the runner in " +
                   dir);
  });
  if (!lock ||
      !describeEntry(dir, "the runner of optimizer '" + optimizer + "' (" +
                              flavour + "), linking " + runtime->configDir))
    return "";
  // The generated files are this entry's own: replacing them is no loss.
  std::string src = joined(dir, "src");
  if (failed(writeFiles(src, files, /*force=*/true)))
    return "";

  std::vector<std::string> options = {"-DCMAKE_BUILD_TYPE=Release",
                                      "-DOPTGEN_BUILD_RUNNER=ON",
                                      "-Doptgen_DIR=" + runtime->configDir};
  if (cuda)
    options.push_back(emulated ? "-DOPTGEN_CUDA_EMULATED=ON"
                               : "-DOPTGEN_CUDA_EMULATED=OFF");
  CMakeBuild build{dir, src, options, "the runner of '" + optimizer + "'", ""};
  std::string executable = joined(build.build(), runner);
  std::string built = joined(dir, "runner.ok");

  // A runner is trusted only as the stamp of its last build describes it:
  // built from these files against this runtime, of this size and hash.
  std::optional<std::string> hash = fileHash(executable);
  std::optional<std::string> stamp = readStamp(built);
  if (hash && stamp && *stamp == key + "\n" + *hash + "\n" &&
      build.isConfigured())
    return executable;
  if (hash && (!stamp || !StringRef(*stamp).ends_with("\n" + *hash + "\n"))) {
    WithColor::warning(errs(), "optgen")
        << "the cached runner '" << executable
        << "' is not the one last built (interrupted, or damaged): "
           "building it again\n";
    sys::fs::remove(executable);
  }
  sys::fs::remove(built);
  if (!build.configureAnd(progress, [&](const CMakeBuild &build) {
        return build.make(progress, {runner});
      }))
    return "";
  hash = fileHash(executable);
  if (!hash) {
    WithColor::error(errs(), "optgen")
        << "the build left no runner '" << executable << "'\n";
    return "";
  }
  if (!writeEntryFile(built, key + "\n" + *hash + "\n"))
    return "";
  progress.finish(runner);
  return executable;
}
