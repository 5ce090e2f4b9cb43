//===- optgen.cpp - The optgen compiler driver ----------------------------===//
//
// `optgen compile SPEC --emit=ast|mlir [-o FILE]`: reads a spec, reports any
// error at its location with the source line and a caret, and prints the
// requested stage.
//
//===----------------------------------------------------------------------===//

#include "InterpreterStepper.h"
#include "ShapesFile.h"

#include "dialect/OptgenDialect.h"
#include "optgen/Frontend/MLIRGen.h"
#include "optgen/Frontend/Parser.h"
#include "optgen/Target/Cpu/EmitCpu.h"
#include "optgen/Transforms/Passes.h"
#include "optgen/Transforms/Planning.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/ToolUtilities.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/xxhash.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;
using namespace optgen;

namespace {

cl::OptionCategory optgenCategory("optgen options");

cl::SubCommand compileCommand(
    "compile", "Compile an optimizer spec (check it, and print a stage)");

cl::SubCommand runCommand(
    "run", "Replay a case file (initial parameters, the gradient of each "
           "step) on the compiled optimizer or the reference interpreter");

cl::SubCommand explainCommand(
    "explain", "Show the plan of a distributed step: per rank what it "
               "updates, its optimizer state, its traffic");

cl::opt<std::string> specFile(cl::Positional, cl::desc("<spec.opt>"),
                              cl::Required, cl::sub(compileCommand),
                              cl::sub(runCommand), cl::sub(explainCommand),
                              cl::cat(optgenCategory));

cl::opt<std::string> outputFile(
    "o",
    cl::desc("Write the output to FILE (default: standard output); with "
             "--target, FILE is the directory the generated files go to"),
    cl::value_desc("FILE"), cl::init("-"), cl::sub(compileCommand),
    cl::cat(optgenCategory));

enum class Stage { AST, MLIR, Planned, Kernels, Code };
cl::opt<Stage> emit(
    "emit", cl::desc("What to print:"), cl::init(Stage::MLIR),
    cl::values(
        clEnumValN(Stage::AST, "ast", "the syntax tree of the spec"),
        clEnumValN(Stage::MLIR, "mlir",
                   "the spec in the optgen dialect (the default)"),
        clEnumValN(Stage::Planned, "planned",
                   "with --shapes: the parameters bound to groups and "
                   "bucketed by shape"),
        clEnumValN(Stage::Kernels, "kernels",
                   "the rules with their math fused into kernels"),
        clEnumValN(Stage::Code, "code",
                   "the generated code for --target (the default with it)")),
    cl::sub(compileCommand), cl::cat(optgenCategory));

enum class Target { None, Cpu };
cl::opt<Target> target(
    "target", cl::desc("Generate code for (compile), or run on (run):"),
    cl::init(Target::None),
    cl::values(clEnumValN(Target::Cpu, "cpu",
                          "C++ for the CPU (a header, a source file and a "
                          "CMakeLists.txt linking optgen's runtime)")),
    cl::sub(compileCommand), cl::sub(runCommand), cl::cat(optgenCategory));

cl::list<std::string>
    defines("D",
            cl::desc("Set the spec's constant NAME to VALUE (an expression of "
                     "literals, e.g. -D compute=f32)"),
            cl::value_desc("NAME=VALUE"), cl::Prefix, cl::sub(compileCommand),
            cl::sub(runCommand), cl::sub(explainCommand),
            cl::cat(optgenCategory));

cl::opt<std::string> caseFile(
    "case",
    cl::desc("The case to replay: a safetensors file with param/<name>, "
             "grad/<step>/<name> and optionally expect/<name> and the groups "
             "(the format of test/golden/README.md)"),
    cl::value_desc("CASE.safetensors"), cl::Required, cl::sub(runCommand),
    cl::cat(optgenCategory));
cl::opt<std::string> outFile(
    "out", cl::desc("Write param/<name> after the last step to FILE"),
    cl::value_desc("FILE.safetensors"), cl::sub(runCommand),
    cl::cat(optgenCategory));
cl::opt<bool> interpret(
    "interpret",
    cl::desc("Step on the fp64 reference interpreter, not compiled code"),
    cl::sub(runCommand), cl::cat(optgenCategory));
cl::opt<int> repeat("repeat",
                    cl::desc("Replay N times, each from the case's start, "
                             "for timing"),
                    cl::value_desc("N"), cl::init(1), cl::sub(runCommand),
                    cl::cat(optgenCategory));
cl::opt<std::string> reportFile(
    "report",
    cl::desc("Write a JSON report: steps, step_ms_median, target, and each "
             "parameter's update error when the case has expect/<name>"),
    cl::value_desc("FILE.json"), cl::sub(runCommand), cl::cat(optgenCategory));
cl::opt<bool> splitGrads(
    "split-grads",
    cl::desc("Under mpirun: give each rank a different gradient whose mean "
             "over the ranks is the case's"),
    cl::sub(runCommand), cl::cat(optgenCategory));
cl::opt<std::string> buildDir(
    "build-dir",
    cl::desc("Where to build the compiled runner (default: a directory under "
             "the user's cache, one per generated code)"),
    cl::value_desc("DIR"), cl::sub(runCommand), cl::cat(optgenCategory));

cl::opt<std::string> shapesFile(
    "shapes",
    cl::desc("Read the model's parameter names and shapes from FILE's "
             "header (a model, or a case's param/<name> tensors) so that the "
             "plan is fixed in the generated code"),
    cl::value_desc("FILE.safetensors"), cl::sub(compileCommand),
    cl::sub(explainCommand), cl::cat(optgenCategory));

cl::opt<int> worldSize(
    "world-size",
    cl::desc("Plan the distributed step on N ranks (with --shapes, for "
             "distribute zero2; --emit=planned shows it)"),
    cl::value_desc("N"), cl::init(0), cl::sub(compileCommand),
    cl::sub(explainCommand), cl::cat(optgenCategory));

cl::opt<std::string> explainReport(
    "report", cl::desc("Also write the plan's numbers as JSON"),
    cl::value_desc("FILE.json"), cl::sub(explainCommand),
    cl::cat(optgenCategory));

cl::opt<bool> splitInputFile(
    "split-input-file",
    cl::desc("Treat each part of the spec between '// -----' lines as a "
             "separate spec (for tests)"),
    cl::sub(compileCommand), cl::cat(optgenCategory));

cl::opt<bool> verifyDiagnostics(
    "verify-diagnostics",
    cl::desc("Check the reported errors against the spec's "
             "'// expected-error {{...}}' comments (for tests)"),
    cl::sub(compileCommand), cl::cat(optgenCategory));

/// Reports syntax errors as MLIR diagnostics, with the same form and the
/// same --verify-diagnostics checks as every later error.
SyntaxErrorFn syntaxErrorsAsDiagnostics(mlir::MLIRContext &context,
                                        SourceMgr &sourceMgr) {
  return [&context, &sourceMgr](SMLoc at, const Twine &message) {
    unsigned id = sourceMgr.FindBufferContainingLoc(at);
    auto [line, col] = sourceMgr.getLineAndColumn(at, id);
    mlir::emitError(mlir::FileLineColLoc::get(
        &context, sourceMgr.getMemoryBuffer(id)->getBufferIdentifier(), line,
        col))
        << message;
  };
}

/// Adds each -D NAME=VALUE to `sourceMgr` as a one-constant spec and parses
/// it, so values are written, and their errors reported, as in a spec.
LogicalResult parseDefines(SourceMgr &sourceMgr,
                           std::vector<std::unique_ptr<ast::Module>> &parsed,
                           std::vector<const ast::ConstDecl *> &overrides,
                           const SyntaxErrorFn &onError) {
  for (const std::string &define : defines) {
    size_t equals = define.find('=');
    if (equals == std::string::npos || equals == 0) {
      WithColor::error(errs(), "optgen")
          << "-D expects NAME=VALUE, got '" << define << "'\n";
      return failure();
    }
    std::string text = "optimizer command_line const " +
                       define.substr(0, equals) + " = " +
                       define.substr(equals + 1) + "\n";
    unsigned id = sourceMgr.AddNewSourceBuffer(
        MemoryBuffer::getMemBufferCopy(text, "-D " + define), SMLoc());
    std::unique_ptr<ast::Module> module = parseSpec(sourceMgr, id, onError);
    if (!module)
      return failure();
    if (module->getDecls().size() != 1 ||
        !isa<ast::ConstDecl>(module->getDecls().front().get())) {
      WithColor::error(errs(), "optgen")
          << "-D expects NAME=VALUE, got '" << define << "'\n";
      return failure();
    }
    overrides.push_back(cast<ast::ConstDecl>(module->getDecls().front().get()));
    parsed.push_back(std::move(module));
  }
  return success();
}

/// Adds the parameters of --shapes to the optimizer and plans them.
LogicalResult planShapes(mlir::MLIRContext &context, mlir::ModuleOp module) {
  std::vector<NamedShape> shapes;
  std::string error;
  if (!readShapes(shapesFile, shapes, error)) {
    WithColor::error(errs(), "optgen") << error << "\n";
    return failure();
  }
  mlir::OpBuilder builder(&context);
  for (auto optimizer : module.getOps<OptimizerOp>()) {
    builder.setInsertionPointToEnd(&optimizer.getBlock());
    for (DistributeOp distribute : optimizer.getBlock().getOps<DistributeOp>())
      builder.setInsertionPoint(distribute);
    for (const auto &[name, shape] : shapes)
      builder.create<ParamOp>(
          mlir::NameLoc::get(builder.getStringAttr(name),
                             mlir::FileLineColLoc::get(&context, shapesFile,
                                                       0, 0)),
          name, shape, mlir::FlatSymbolRefAttr());
  }
  mlir::PassManager pm(&context);
  mlir::OpPassManager &optimizers = pm.nest<OptimizerOp>();
  optimizers.addPass(createBindParams());
  optimizers.addPass(createBucket());
  optimizers.addPass(createSpecializeShapes());
  if (worldSize > 0) {
    optimizers.addPass(createPlanShards({worldSize}));
    optimizers.addPass(createScheduleCollectives());
  }
  return pm.run(module);
}

/// The passes that prepare each rule for the emitters.
LogicalResult prepareKernels(mlir::MLIRContext &context,
                             mlir::ModuleOp module) {
  mlir::PassManager pm(&context);
  mlir::OpPassManager &rules =
      pm.nest<OptimizerOp>().nest<RuleOp>();
  // Twice: folding shape queries makes types known, which lets more fold.
  for (int round = 0; round < 2; ++round) {
    rules.addPass(createInferShapes());
    rules.addPass(mlir::createCanonicalizerPass());
  }
  rules.addPass(mlir::createCSEPass());
  rules.addPass(createLowerMatmuls());
  rules.addPass(createFoldGemmAccumulate());
  rules.addPass(createMarkSymmetric());
  rules.addPass(createFuseKernels());
  // The CPU accumulates sums in double: cheap there, and closest to the
  // fp64 reference.
  rules.addPass(createSetAccumulators({"f64"}));
  rules.addPass(createAssignBuffers());
  return pm.run(module);
}

/// The generated files of the optimizer in `module`.
LogicalResult emitFiles(mlir::ModuleOp module, SourceMgr &sourceMgr,
                        unsigned specId,
                        std::map<std::string, std::string> &files) {
  const MemoryBuffer *buffer = sourceMgr.getMemoryBuffer(specId);
  CpuEmitOptions options;
  options.specName = sys::path::filename(buffer->getBufferIdentifier()).str();
  options.sourceLine = [buffer](unsigned line) {
    StringRef rest = buffer->getBuffer();
    for (unsigned i = 1; i < line && !rest.empty(); ++i)
      rest = rest.split('\n').second;
    return rest.split('\n').first.str();
  };
  options.runtimeDir = OPTGEN_RUNTIME_DIR;
  for (auto optimizer : module.getOps<OptimizerOp>())
    if (failed(emitCpu(optimizer, options, files)))
      return failure();
  return success();
}

/// Writes `files` into `dir`, leaving files whose contents are unchanged
/// alone (so that rebuilds stay incremental).
LogicalResult writeFiles(StringRef dir,
                         const std::map<std::string, std::string> &files) {
  if (std::error_code error = sys::fs::create_directories(dir)) {
    WithColor::error(errs(), "optgen")
        << "cannot create '" << dir << "': " << error.message() << "\n";
    return failure();
  }
  for (const auto &[name, text] : files) {
    SmallString<256> path(dir);
    sys::path::append(path, name);
    if (auto existing = MemoryBuffer::getFile(path);
        existing && (*existing)->getBuffer() == text)
      continue;
    std::error_code error;
    raw_fd_ostream file(path, error);
    if (error) {
      WithColor::error(errs(), "optgen")
          << "cannot write '" << path << "': " << error.message() << "\n";
      return failure();
    }
    file << text;
  }
  return success();
}

/// Compiles one spec buffer (the whole file, or one part of a split file).
LogicalResult compileBuffer(std::unique_ptr<MemoryBuffer> buffer,
                            raw_ostream &os) {
  mlir::MLIRContext context;
  context.getOrLoadDialect<OptgenDialect>();
  // Errors point at the spec; a dump of the IR would bury them.
  context.printOpOnDiagnostic(false);
  SourceMgr sourceMgr;
  unsigned specId = sourceMgr.AddNewSourceBuffer(std::move(buffer), SMLoc());

  std::unique_ptr<mlir::SourceMgrDiagnosticHandler> handler;
  mlir::SourceMgrDiagnosticVerifierHandler *verifier = nullptr;
  if (verifyDiagnostics) {
    auto v = std::make_unique<mlir::SourceMgrDiagnosticVerifierHandler>(
        sourceMgr, &context);
    verifier = v.get();
    handler = std::move(v);
  } else {
    handler =
        std::make_unique<mlir::SourceMgrDiagnosticHandler>(sourceMgr, &context);
  }

  SyntaxErrorFn onSyntaxError = syntaxErrorsAsDiagnostics(context, sourceMgr);

  auto finish = [&](LogicalResult result) {
    return verifier ? verifier->verify() : result;
  };

  std::unique_ptr<ast::Module> spec =
      parseSpec(sourceMgr, specId, onSyntaxError);
  if (!spec)
    return finish(failure());
  if (emit == Stage::AST) {
    ast::dump(*spec, os, [&](SMLoc at) {
      return sourceMgr.getLineAndColumn(at, specId);
    });
    return finish(success());
  }

  std::vector<std::unique_ptr<ast::Module>> defineModules;
  std::vector<const ast::ConstDecl *> overrides;
  if (failed(parseDefines(sourceMgr, defineModules, overrides, onSyntaxError)))
    return finish(failure());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlirGen(context, sourceMgr, *spec, overrides);
  if (!module)
    return finish(failure());
  if (emit == Stage::MLIR) {
    module->print(os);
    return finish(success());
  }
  if (!shapesFile.empty() && failed(planShapes(context, *module)))
    return finish(failure());
  if (emit == Stage::Planned) {
    if (shapesFile.empty()) {
      WithColor::error(errs(), "optgen") << "--emit=planned needs --shapes\n";
      return finish(failure());
    }
    module->print(os);
    return finish(success());
  }

  if (failed(prepareKernels(context, *module)))
    return finish(failure());
  if (emit == Stage::Kernels) {
    module->print(os);
    return finish(success());
  }
  if (target == Target::None) {
    WithColor::error(errs(), "optgen") << "--emit=code needs --target\n";
    return finish(failure());
  }
  std::map<std::string, std::string> files;
  if (failed(emitFiles(*module, sourceMgr, specId, files)))
    return finish(failure());
  if (outputFile != "-")
    return finish(writeFiles(outputFile, files));
  for (const auto &[name, text] : files)
    os << "// ----- " << name << "\n" << text;
  return finish(success());
}

int compile() {
  if (target != Target::None && !emit.getNumOccurrences())
    emit = Stage::Code;
  std::string message;
  std::unique_ptr<MemoryBuffer> input = mlir::openInputFile(specFile, &message);
  if (!input) {
    WithColor::error(errs(), "optgen") << message << "\n";
    return 1;
  }
  bool toDirectory = emit == Stage::Code && outputFile != "-";
  std::unique_ptr<ToolOutputFile> output =
      mlir::openOutputFile(toDirectory ? "-" : outputFile.getValue(), &message);
  if (!output) {
    WithColor::error(errs(), "optgen") << message << "\n";
    return 1;
  }
  LogicalResult result =
      splitInputFile
          ? mlir::splitAndProcessBuffer(std::move(input), compileBuffer,
                                        output->os(), "// -----", "// -----")
          : compileBuffer(std::move(input), output->os());
  if (failed(result))
    return 1;
  output->keep();
  return 0;
}

/// Runs `program` with `args`, its output to `log` when given; returns its
/// exit code, or -1 after reporting why it could not run.
int execute(StringRef program, ArrayRef<std::string> args,
            std::optional<StringRef> log = std::nullopt) {
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

/// Builds (or reuses) the runner of the generated `files` and returns the
/// path of its executable, or an empty string after reporting a failure.
std::string buildRunner(const std::map<std::string, std::string> &files) {
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
  auto closeLock = llvm::make_scope_exit([&] {
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

/// A spec read, parsed (with its -D overrides) and generated as MLIR; its
/// errors go to the terminal with the source line.
struct LoadedSpec {
  mlir::MLIRContext context;
  SourceMgr sourceMgr;
  unsigned specId = 0;
  std::unique_ptr<mlir::SourceMgrDiagnosticHandler> handler;
  std::unique_ptr<ast::Module> spec;
  std::vector<std::unique_ptr<ast::Module>> defineModules;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

/// The spec of the command line, or null after reporting why not.
std::unique_ptr<LoadedSpec> loadSpec() {
  std::string message;
  std::unique_ptr<MemoryBuffer> input = mlir::openInputFile(specFile, &message);
  if (!input) {
    WithColor::error(errs(), "optgen") << message << "\n";
    return nullptr;
  }
  auto loaded = std::make_unique<LoadedSpec>();
  loaded->context.getOrLoadDialect<OptgenDialect>();
  loaded->context.printOpOnDiagnostic(false);
  loaded->specId =
      loaded->sourceMgr.AddNewSourceBuffer(std::move(input), SMLoc());
  loaded->handler = std::make_unique<mlir::SourceMgrDiagnosticHandler>(
      loaded->sourceMgr, &loaded->context);
  SyntaxErrorFn onSyntaxError =
      syntaxErrorsAsDiagnostics(loaded->context, loaded->sourceMgr);
  loaded->spec = parseSpec(loaded->sourceMgr, loaded->specId, onSyntaxError);
  std::vector<const ast::ConstDecl *> overrides;
  if (!loaded->spec ||
      failed(parseDefines(loaded->sourceMgr, loaded->defineModules, overrides,
                          onSyntaxError)))
    return nullptr;
  loaded->module = mlirGen(loaded->context, loaded->sourceMgr, *loaded->spec,
                           overrides);
  if (!loaded->module)
    return nullptr;
  return loaded;
}

/// Elements of optimizer state rank `rank` keeps for `param` stepped by
/// `rule`, as the runtime allocates them: all of them, those of its part
/// (states shaped like the parameter shrink to the part), or none.
std::optional<int64_t> stateElements(RuleOp rule, int64_t numel,
                                     int64_t part) {
  int64_t total = 0;
  for (StateOp state : getRuleStates(rule)) {
    int64_t elements = 1;
    if (auto type = dyn_cast<SymbolicTensorType>(state.getType())) {
      if (type.getAnyRank())
        elements = numel;
      for (mlir::Attribute dim : type.getDims()) {
        auto size = dyn_cast<mlir::IntegerAttr>(dim);
        if (!size) {
          state.emitError("the size of this state is not known at compile "
                          "time");
          return std::nullopt;
        }
        elements *= size.getInt();
      }
    }
    if (part == 0)
      elements = 0;
    else if (part != numel && elements == numel)
      elements = part;
    total += elements;
  }
  return total;
}

/// Without shapes: how each group's parameters will be shared out.
int explainPolicy(OptimizerOp optimizer) {
  DistributeOp distribute;
  for (DistributeOp d : optimizer.getBlock().getOps<DistributeOp>())
    distribute = d;
  bool zero2 =
      distribute && distribute.getStrategy() == DistributeStrategy::zero2;
  outs() << "optimizer " << optimizer.getSymName() << ": distribute "
         << (zero2 ? "zero2" : "none");
  if (zero2)
    outs() << " (small_numel " << distribute.getSmallNumel().value_or(0)
           << ")";
  outs() << "\n";
  if (!zero2) {
    outs() << "every rank runs the whole step on its own gradients\n";
    return 0;
  }
  outs() << "tensors under small_numel elements: gradients all-reduced in "
            "one packed collective, updated on every rank\n";
  for (GroupOp group : optimizer.getBlock().getOps<GroupOp>()) {
    auto rule = mlir::SymbolTable::lookupNearestSymbolFrom<RuleOp>(
        group, group.getRuleAttr());
    outs() << "group " << group.getSymName() << " (rule " << rule.getSymName()
           << "): "
           << (isElementwiseRule(rule)
                   ? "packed with the other elementwise rules' parameters, "
                     "split by element over the ranks"
                   : "each parameter owned whole by one rank (longest job "
                     "first), one reduce-scatter and all-gather per shape")
           << "\n";
  }
  outs() << "(give --shapes FILE.safetensors and --world-size N for the plan "
            "per rank)\n";
  return 0;
}

int explain() {
  if (worldSize < 0) {
    WithColor::error(errs(), "optgen") << "--world-size must be positive\n";
    return 1;
  }
  std::unique_ptr<LoadedSpec> loaded = loadSpec();
  if (!loaded)
    return 1;
  mlir::MLIRContext &context = loaded->context;
  mlir::OwningOpRef<mlir::ModuleOp> &module = loaded->module;
  if (shapesFile.empty())
    return explainPolicy(*module->getOps<OptimizerOp>().begin());
  if (worldSize == 0)
    worldSize = 1;
  // Specialised and folded, every state has a known size.
  if (failed(planShapes(context, *module)) ||
      failed(prepareKernels(context, *module)))
    return 1;
  auto optimizer = *module->getOps<OptimizerOp>().begin();
  runtime::Plan plan;
  FailureOr<runtime::ShardPlan> shards =
      planShardsFor(optimizer, worldSize, plan);
  if (failed(shards))
    return 1;

  // The rule each parameter runs: its bucket's specialised copy.
  SmallVector<ParamOp> params(optimizer.getBlock().getOps<ParamOp>());
  llvm::StringMap<RuleOp> ruleOf;
  for (BucketOp bucket : optimizer.getBlock().getOps<BucketOp>())
    for (mlir::Attribute name : bucket.getParams())
      ruleOf[cast<mlir::StringAttr>(name).getValue()] =
          mlir::SymbolTable::lookupNearestSymbolFrom<RuleOp>(optimizer,
                                                       bucket.getRuleAttr());
  auto numelOf = [&](size_t p) {
    int64_t n = 1;
    for (int64_t d : params[p].getShape())
      n *= d;
    return n;
  };

  struct Rank {
    int64_t stateBytes = 0, sent = 0, received = 0;
    std::vector<std::string> updates;
  };
  std::vector<Rank> ranks(worldSize);
  int reduceScatters = 0, allGathers = 0, allReduces = 0;
  for (const runtime::ShardUnit &unit : shards->units) {
    int64_t total = 0;
    for (int64_t c : unit.counts)
      total += c;
    if (unit.kind == runtime::ShardUnit::Kind::Small) {
      ++allReduces;
      for (int r = 0; r < worldSize; ++r) {
        ranks[r].sent += 4 * total;
        ranks[r].received += 4 * total;
        for (size_t p : unit.params) {
          std::optional<int64_t> elements = stateElements(
              ruleOf[params[p].getName()], numelOf(p), numelOf(p));
          if (!elements)
            return 1;
          ranks[r].stateBytes += 4 * *elements;
          ranks[r].updates.push_back(params[p].getName().str() + " (all)");
        }
      }
      continue;
    }
    ++reduceScatters;
    ++allGathers;
    int64_t at = 0;
    std::vector<int64_t> start(worldSize, 0);
    for (int r = 1; r < worldSize; ++r)
      start[r] = start[r - 1] + unit.counts[r - 1];
    for (int r = 0; r < worldSize; ++r) {
      ranks[r].sent += 4 * (total + unit.counts[r]);
      ranks[r].received += 4 * (unit.counts[r] + total);
    }
    for (auto [k, p] : llvm::enumerate(unit.params)) {
      int64_t numel = numelOf(p);
      for (int r = 0; r < worldSize; ++r) {
        int64_t first = std::max(at, start[r]);
        int64_t last = std::min(at + numel, start[r] + unit.counts[r]);
        int64_t part = unit.kind == runtime::ShardUnit::Kind::Owned
                           ? (unit.owner[k] == r ? numel : 0)
                           : std::max<int64_t>(last - first, 0);
        std::optional<int64_t> elements =
            stateElements(ruleOf[params[p].getName()], numel, part);
        if (!elements)
          return 1;
        ranks[r].stateBytes += 4 * *elements;
        if (part == numel)
          ranks[r].updates.push_back(params[p].getName().str());
        else if (part > 0)
          ranks[r].updates.push_back(
              (params[p].getName() + "[" + Twine(first - at) + ":" +
               Twine(last - at) + "]")
                  .str());
      }
      at += numel;
    }
  }

  // A rank alone skips the collectives (they would be copies).
  if (worldSize == 1)
    for (Rank &rank : ranks)
      rank.sent = rank.received = 0;
  outs() << "optimizer " << optimizer.getSymName() << " on " << worldSize
         << " rank" << (worldSize == 1 ? "" : "s") << ": " << params.size()
         << " parameters\n";
  outs() << "collectives per step: "
         << allReduces + reduceScatters + allGathers << " (" << allReduces
         << " all-reduce, " << reduceScatters << " reduce-scatter, "
         << allGathers << " all-gather)\n";
  outs() << "load imbalance of owned matrices (max/mean of estimated cost): "
         << format("%.3f", runtime::ownedImbalance(*shards)) << "\n\n";
  outs() << "rank  state bytes   sent/step   received/step  updates\n";
  for (auto [r, rank] : llvm::enumerate(ranks)) {
    outs() << format("%4d  %11lld  %10lld  %14lld  ", static_cast<int>(r),
                     static_cast<long long>(rank.stateBytes),
                     static_cast<long long>(rank.sent),
                     static_cast<long long>(rank.received));
    llvm::interleaveComma(rank.updates, outs());
    outs() << "\n";
  }
  outs() << "\n(bytes: f32 payloads each rank gives to and gets from the "
            "collectives)\n";
  if (!explainReport.empty()) {
    std::error_code error;
    raw_fd_ostream report(explainReport, error);
    if (error) {
      WithColor::error(errs(), "optgen") << "cannot write '" << explainReport
                                         << "': " << error.message() << "\n";
      return 1;
    }
    report << "{\"world_size\": " << worldSize
           << ", \"collectives_per_step\": "
           << allReduces + reduceScatters + allGathers
           << ", \"imbalance\": "
           << format("%.6f", runtime::ownedImbalance(*shards))
           << ", \"ranks\": [";
    for (auto [r, rank] : llvm::enumerate(ranks))
      report << (r ? ", " : "") << "{\"rank\": " << r
             << ", \"state_bytes\": " << rank.stateBytes
             << ", \"sent_bytes\": " << rank.sent
             << ", \"received_bytes\": " << rank.received << "}";
    report << "]}\n";
  }
  return 0;
}

int runCase() {
  std::unique_ptr<LoadedSpec> loaded = loadSpec();
  if (!loaded)
    return 1;
  mlir::MLIRContext &context = loaded->context;
  mlir::OwningOpRef<mlir::ModuleOp> &module = loaded->module;
  SourceMgr &sourceMgr = loaded->sourceMgr;
  unsigned specId = loaded->specId;
  auto optimizer = *module->getOps<OptimizerOp>().begin();
  if (interpret) {
    if (splitGrads) {
      WithColor::error(errs(), "optgen")
          << "--split-grads needs compiled code: the interpreter runs one "
             "rank\n";
      return 1;
    }
    return runCaseOnInterpreter(optimizer, caseFile, outFile, reportFile,
                                repeat);
  }

  std::map<std::string, std::string> files;
  if (failed(prepareKernels(context, *module)) ||
      failed(emitFiles(*module, sourceMgr, specId, files)))
    return 1;
  std::string runner = buildRunner(files);
  if (runner.empty())
    return 1;
  std::vector<std::string> args{"--case", caseFile, "--repeat",
                                std::to_string(repeat)};
  if (!outFile.empty())
    args.insert(args.end(), {"--out", outFile});
  if (!reportFile.empty())
    args.insert(args.end(), {"--report", reportFile});
  if (splitGrads)
    args.push_back("--split-grads");
  int code = execute(runner, args);
  return code < 0 ? 1 : code;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(optgenCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "optgen: a compiler for optimizer steps\n\n"
      "  optgen compile SPEC [--emit=ast|mlir|kernels] [-o FILE] [-D NAME=VALUE]\n"
      "  optgen compile SPEC --target=cpu -o DIR [--shapes MODEL.safetensors]\n"
      "  optgen compile SPEC --shapes MODEL.safetensors [--world-size N] "
      "--emit=planned\n"
      "  optgen explain SPEC [--shapes MODEL.safetensors --world-size N]\n"
      "  optgen run SPEC --case CASE.safetensors [--out OUT.safetensors]\n"
      "             [--interpret | --target=cpu] [--repeat R] [--report R.json]\n\n"
      "Run 'optgen compile --help', 'optgen run --help' or 'optgen explain "
      "--help' for the options of a command.\n");
  if (compileCommand)
    return compile();
  if (runCommand)
    return runCase();
  if (explainCommand)
    return explain();
  errs() << "optgen: no command given; run 'optgen --help'\n";
  return 1;
}
