//===- optgen.cpp - The optgen compiler driver ----------------------------===//
//
// The command line of optgen: `optgen compile` prints a stage of a spec's
// compilation (or writes the generated code), `optgen run` replays a case
// on the compiled code or the interpreter, `optgen explain` reads the
// schedule of a distributed step. The work is done by the libraries:
// loading a spec (optgen/Driver/Spec.h), the stages' pipelines
// (optgen/Pipelines/Pipelines.h), emission and the runner's build
// (optgen/Driver/Emission.h, Runner.h), explain's analysis
// (optgen/Driver/Explain.h).
//
//===----------------------------------------------------------------------===//

#include "InterpreterStepper.h"
#include "NewCase.h"

#include "dialect/OptgenDialect.h"
#include "dialect/TargetDescription.h"
#include "optgen/Driver/Cache.h"
#include "optgen/Driver/Emission.h"
#include "optgen/Driver/Explain.h"
#include "optgen/Driver/Runner.h"
#include "optgen/Driver/Simulate.h"
#include "optgen/Driver/Spec.h"
#include "optgen/Frontend/MLIRGen.h"
#include "optgen/Pipelines/Pipelines.h"
#include "optgen/runtime/ExitCodes.h"
#include "optgen/runtime/FileIO.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/ToolUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"

#include <chrono>
#include <cmath>

using namespace llvm;
using namespace optgen;
using runtime::ExitFailure;
using runtime::ExitSpecError;
using runtime::ExitSuccess;
using runtime::ExitUsage;

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

cl::SubCommand caseCommand(
    "case", "Write a case to fill in: 'optgen case new SPEC --shapes "
            "MODEL.safetensors -o CASE.safetensors' (random values, the "
            "spec's groups with every hyperparameter)");

cl::list<std::string> caseWords(cl::Positional, cl::OneOrMore,
                                cl::desc("new <spec.opt>"),
                                cl::sub(caseCommand), cl::cat(optgenCategory));
cl::opt<int64_t> caseSteps("steps",
                           cl::desc("Steps of the case: a gradient each"),
                           cl::value_desc("S"), cl::init(3),
                           cl::sub(caseCommand), cl::cat(optgenCategory));
cl::opt<uint64_t> caseSeed("seed",
                           cl::desc("Seed of the random values (the same "
                                    "seed, the same case)"),
                           cl::value_desc("N"), cl::init(0),
                           cl::sub(caseCommand), cl::cat(optgenCategory));
cl::opt<double> caseGradScale(
    "grad-scale",
    cl::desc("Standard deviation of the gradients (parameters: 1)"),
    cl::value_desc("X"), cl::init(0.1), cl::sub(caseCommand),
    cl::cat(optgenCategory));

cl::SubCommand cacheCommand(
    "cache", "List or remove the runtimes and runners optgen run built (its "
             "cache: $OPTGEN_CACHE_DIR, else $XDG_CACHE_HOME/optgen or "
             "~/.cache/optgen)");

cl::opt<std::string> specFile(cl::Positional,
                              cl::desc("<spec.opt> (explain: or optgen IR, "
                                       "a .mlir file with a schedule)"),
                              cl::Required, cl::sub(compileCommand),
                              cl::sub(runCommand), cl::sub(explainCommand),
                              cl::cat(optgenCategory));

cl::opt<std::string> outputFile(
    "o",
    cl::desc("Write the output to FILE (default: standard output); with "
             "--target, FILE is the directory the generated files go to"),
    cl::value_desc("FILE"), cl::init("-"), cl::sub(compileCommand),
    cl::sub(caseCommand), cl::cat(optgenCategory));

enum class Stage { AST, MLIR, Planned, Kernels, Executable, Launches, Code };
cl::opt<Stage> emit(
    "emit", cl::desc("What to print:"), cl::init(Stage::MLIR),
    cl::values(
        clEnumValN(Stage::AST, "ast", "the syntax tree of the spec"),
        clEnumValN(Stage::MLIR, "mlir",
                   "the spec in the optgen dialect (the default), with "
                   "--shapes the model's parameters as optgen.param ops"),
        clEnumValN(Stage::Planned, "planned",
                   "with --shapes: mlir after the optgen-plan pipeline "
                   "(parameters bound and bucketed, rules specialised, with "
                   "--world-size the distributed step's schedule)"),
        clEnumValN(Stage::Kernels, "kernels",
                   "planned (or mlir, without --shapes) after the "
                   "optgen-lower-to-kernels pipeline: the rules' math fused "
                   "into kernels"),
        clEnumValN(Stage::Executable, "executable",
                   "kernels after the optgen-lower-to-executable pipeline: "
                   "accumulator types and every tensor's buffer decided"),
        clEnumValN(Stage::Launches, "launches",
                   "executable after the optgen-lower-to-launches pipeline: "
                   "how the target runs each rule (a GPU's host scalars, "
                   "its kernels' launches and their grids)"),
        clEnumValN(Stage::Code, "code",
                   "the generated code for --target (the default with it)")),
    cl::sub(compileCommand), cl::cat(optgenCategory));

/// --target's help: each target's name and summary, as cl::values would
/// list them (the catalogue is TargetDescription.cpp's).
const std::string &targetHelp() {
  static const std::string help = [] {
    std::string text = "Generate code for (compile), or run on (run):";
    for (StringRef name : optgen::targetNames())
      text += "\n    =" + name.str() + std::string(14 - name.size(), ' ') +
              "-   " + optgen::targetSummary(name).str();
    return text;
  }();
  return help;
}

cl::opt<std::string> target("target", cl::desc(targetHelp()),
                            cl::value_desc("TARGET"), cl::sub(compileCommand),
                            cl::sub(runCommand), cl::cat(optgenCategory));

enum class Device { Auto, Gpu, Emulated };
cl::opt<Device> device(
    "device", cl::desc("With --target=cuda, where the case is replayed:"),
    cl::init(Device::Auto),
    cl::values(clEnumValN(Device::Auto, "auto",
                          "the GPU where one is, else the emulated device "
                          "(saying so)"),
               clEnumValN(Device::Gpu, "gpu",
                          "the GPU; without one, exit 77"),
               clEnumValN(Device::Emulated, "emulated",
                          "optgen's emulated CUDA device, on the CPU "
                          "(docs/EMULATION.md)")),
    cl::sub(runCommand), cl::cat(optgenCategory));

cl::list<std::string>
    defines("D",
            cl::desc("Set the spec's constant NAME to VALUE (an expression of "
                     "literals, e.g. -D compute=f32)"),
            cl::value_desc("NAME=VALUE"), cl::Prefix, cl::sub(compileCommand),
            cl::sub(runCommand), cl::sub(explainCommand),
            cl::sub(caseCommand), cl::cat(optgenCategory));

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
cl::opt<std::string> saveStateFile(
    "save-state",
    cl::desc("Write the optimizer state after the last step to FILE (a "
             "checkpoint, docs/RELIABILITY.md)"),
    cl::value_desc("FILE.safetensors"), cl::sub(runCommand),
    cl::cat(optgenCategory));
cl::opt<std::string> loadStateFile(
    "load-state",
    cl::desc("Start from the optimizer state in FILE (a checkpoint)"),
    cl::value_desc("FILE.safetensors"), cl::sub(runCommand),
    cl::cat(optgenCategory));
cl::list<std::string> saveAt(
    "save-at",
    cl::desc("After step K, save the run's checkpoint (optimizer state and "
             "parameters) into the folder DIR, and go on"),
    cl::value_desc("K DIR"), cl::multi_val(2), cl::sub(runCommand),
    cl::cat(optgenCategory));
cl::opt<std::string> resumeDir(
    "resume",
    cl::desc("Resume the replay from the checkpoint a --save-at wrote into "
             "DIR (on any number of ranks)"),
    cl::value_desc("DIR"), cl::sub(runCommand), cl::cat(optgenCategory));
cl::opt<bool> skipNonFinite(
    "skip-nonfinite",
    cl::desc("A step in which a gradient holds a NaN or an infinity changes "
             "nothing and is counted (the report's skipped_steps); by "
             "default the rule's math sees it"),
    cl::sub(runCommand), cl::cat(optgenCategory));
cl::opt<double> tolerance(
    "tolerance",
    cl::desc("Fail (exit 4) when a parameter's update error against the "
             "case's expect/ tensors is above X; the case must have them"),
    cl::value_desc("X"), cl::init(-1), cl::sub(runCommand),
    cl::cat(optgenCategory));
cl::opt<bool> force(
    "force",
    cl::desc("With -o DIR: replace files there that optgen did not write"),
    cl::sub(compileCommand), cl::cat(optgenCategory));

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
    cl::sub(explainCommand), cl::sub(caseCommand), cl::cat(optgenCategory));

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

cl::opt<bool> simulate(
    "simulate",
    cl::desc("Also predict one step's timeline per rank on a model machine "
             "(--machine), beside nanochat's own scheme on the same "
             "parameters (docs/DISTRIBUTED.md)"),
    cl::sub(explainCommand), cl::cat(optgenCategory));

cl::opt<std::string> shardGroupOption(
    "shard-group",
    cl::desc("With --world-size: shard within groups of G consecutive ranks "
             "and average across the groups (hybrid sharding), overriding "
             "the spec's shard_group; 'auto': the G whose step the cost "
             "model predicts fastest on --machine"),
    cl::value_desc("G|auto"), cl::sub(compileCommand),
    cl::sub(explainCommand), cl::cat(optgenCategory));

cl::opt<std::string> machineName(
    "machine",
    cl::desc("The machine --simulate and --shard-group auto model: "
             "h100-nvlink, h100-ib (the default), h200-nvlink, h200-ib or "
             "cpu; the options below override its figures"),
    cl::value_desc("NAME"), cl::init("h100-ib"), cl::sub(compileCommand), cl::sub(explainCommand),
    cl::cat(optgenCategory));

// Overrides of the machine's figures, in the units people quote them in.
cl::opt<double> gemmTflops("gemm-tflops",
                           cl::desc("Matrix products with 16-bit inputs, "
                                    "TFLOP/s"),
                           cl::sub(compileCommand), cl::sub(explainCommand), cl::cat(optgenCategory));
cl::opt<double> gemmF32Tflops("gemm-f32-tflops",
                              cl::desc("Matrix products with f32 inputs, "
                                       "TFLOP/s"),
                              cl::sub(compileCommand), cl::sub(explainCommand),
                              cl::cat(optgenCategory));
cl::opt<double> symmetricCost(
    "symmetric-cost",
    cl::desc("A symmetric product's time over a full one's (1: multiplied "
             "in full; about 0.6: one triangle, syrk)"),
    cl::sub(compileCommand), cl::sub(explainCommand), cl::cat(optgenCategory));
cl::opt<double> memBandwidth("mem-bw",
                             cl::desc("Memory bandwidth of elementwise "
                                      "kernels, GB/s"),
                             cl::sub(compileCommand), cl::sub(explainCommand),
                             cl::cat(optgenCategory));
cl::opt<double> launchMicros("launch-us",
                             cl::desc("Fixed cost of a kernel launch or "
                                      "product call, microseconds"),
                             cl::sub(compileCommand), cl::sub(explainCommand),
                             cl::cat(optgenCategory));
cl::opt<double> linkBandwidth("link-bw",
                              cl::desc("Ring bandwidth within a node, GB/s "
                                       "a rank"),
                              cl::sub(compileCommand), cl::sub(explainCommand),
                              cl::cat(optgenCategory));
cl::opt<double> linkLatency("link-latency",
                            cl::desc("Latency of a ring step within a node, "
                                     "microseconds"),
                            cl::sub(compileCommand), cl::sub(explainCommand), cl::cat(optgenCategory));
cl::opt<double> netBandwidth("net-bw",
                             cl::desc("Ring bandwidth between nodes, GB/s a "
                                      "rank"),
                             cl::sub(compileCommand), cl::sub(explainCommand),
                             cl::cat(optgenCategory));
cl::opt<double> netLatency("net-latency",
                           cl::desc("Latency of a ring step between nodes, "
                                    "microseconds"),
                           cl::sub(compileCommand), cl::sub(explainCommand), cl::cat(optgenCategory));
cl::opt<int> ranksPerNode("ranks-per-node",
                          cl::desc("Consecutive ranks that share a node (0: "
                                   "every rank on one)"),
                          cl::sub(compileCommand), cl::sub(explainCommand), cl::cat(optgenCategory));

cl::list<std::string> cacheArgs(
    cl::Positional,
    cl::desc("list | clean ENTRY... | clean --all | clean --older-than DAYS"),
    cl::sub(cacheCommand), cl::cat(optgenCategory));
cl::opt<bool> cleanAll("all", cl::desc("clean: remove every entry"),
                       cl::sub(cacheCommand), cl::cat(optgenCategory));
cl::opt<unsigned> cleanOlderThan(
    "older-than", cl::desc("clean: remove the entries not used for DAYS days"),
    cl::value_desc("DAYS"), cl::sub(cacheCommand), cl::cat(optgenCategory));

cl::opt<bool> splitInputFile(
    "split-input-file",
    cl::desc("Treat each part of the spec between '// -----' lines as a "
             "separate spec (for tests)"),
    cl::sub(compileCommand), cl::cat(optgenCategory));

cl::opt<bool> printDebugInfo(
    "mlir-print-debuginfo",
    cl::desc("Print the IR with its locations (the spec lines and names "
             "that optgen-translate cites in generated code)"),
    cl::sub(compileCommand), cl::cat(optgenCategory));

cl::opt<bool> verifyDiagnostics(
    "verify-diagnostics",
    cl::desc("Check the reported errors against the spec's "
             "'// expected-error {{...}}' comments (for tests)"),
    cl::sub(compileCommand), cl::cat(optgenCategory));

/// Runs the pipeline `build` makes on `module`; failure after diagnostics.
LogicalResult runPipeline(mlir::ModuleOp module,
                          function_ref<void(mlir::OpPassManager &)> build) {
  mlir::PassManager pm(module->getContext());
  build(pm);
  return pm.run(module);
}

/// --shard-group: 0 when not given, -1 for auto, else the group size;
/// nullopt after an error.
std::optional<int> parsedShardGroup() {
  if (shardGroupOption.empty())
    return 0;
  if (shardGroupOption == "auto")
    return -1;
  int group = 0;
  if (StringRef(shardGroupOption).getAsInteger(10, group) || group < 1) {
    WithColor::error(errs(), "optgen")
        << "--shard-group takes a number of ranks (at least 1) or 'auto', "
           "not '"
        << shardGroupOption << "'\n";
    return std::nullopt;
  }
  return group;
}

/// Whether the command line's --world-size, when given, is a number of
/// ranks (0 is none: it used to read as "not given"); false after the
/// error.
bool validWorldSize() {
  if (!worldSize.getNumOccurrences() || worldSize >= 1)
    return true;
  WithColor::error(errs(), "optgen")
      << "--world-size is " << worldSize
      << ": it is a number of ranks, at least 1\n";
  return false;
}

/// Whether --target, when given, names a known target; false after the
/// error, which lists them.
bool validTarget() {
  if (!target.getNumOccurrences() ||
      llvm::is_contained(targetNames(), target.getValue()))
    return true;
  WithColor::error(errs(), "optgen")
      << "unknown target '" << target << "'; the targets are "
      << listTargets() << "\n";
  return false;
}

/// optgen-plan with the command line's world size (at least `minWorldSize`)
/// and shard group.
LogicalResult plan(mlir::ModuleOp module, int minWorldSize = 0) {
  PlanPipelineOptions options;
  options.worldSize = std::max<int>(worldSize, minWorldSize);
  options.shardGroup = std::max(parsedShardGroup().value_or(0), 0);
  return runPipeline(module, [&](mlir::OpPassManager &pm) {
    buildPlanPipeline(pm, options);
  });
}

LogicalResult lowerToKernels(mlir::ModuleOp module) {
  return runPipeline(module, buildLowerToKernelsPipeline);
}

/// optgen-lower-to-executable for --target (the default target without
/// it): the target's description goes on the module, and every later
/// pass and printer reads it from there.
LogicalResult lowerToExecutableFor(mlir::ModuleOp module, StringRef name) {
  return runPipeline(module, [&](mlir::OpPassManager &pm) {
    ExecutablePipelineOptions options;
    options.target = name.str();
    buildLowerToExecutablePipeline(pm, options);
  });
}

LogicalResult lowerToExecutable(mlir::ModuleOp module) {
  return lowerToExecutableFor(module, target.getValue());
}

LogicalResult lowerToLaunches(mlir::ModuleOp module) {
  return runPipeline(module, buildLowerToLaunchesPipeline);
}

void printIR(mlir::ModuleOp module, raw_ostream &os) {
  mlir::OpPrintingFlags flags;
  if (printDebugInfo)
    flags.enableDebugInfo();
  module->print(os, flags);
  os << "\n";
}

/// The machine --simulate and --shard-group auto model: the preset with the command line's
/// overrides; nullopt after an error.
std::optional<runtime::Machine> simulatedMachine() {
  const runtime::Machine *preset = runtime::findMachine(machineName);
  if (!preset) {
    raw_ostream &error = WithColor::error(errs(), "optgen");
    error << "unknown machine '" << machineName << "'; the presets are";
    for (const runtime::Machine &m : runtime::machinePresets())
      error << " " << m.name;
    error << "\n";
    return std::nullopt;
  }
  runtime::Machine machine = *preset;
  bool changed = false;
  // A rate (of products, of bytes) is a finite number above 0: the model
  // divides by it; a cost (a latency, a fraction) or a count, one from 0.
  enum Figure { Rate, Cost, Count };
  auto set = [&](auto &option, auto &field, double scale, Figure figure) {
    if (!option.getNumOccurrences())
      return true;
    double value = option;
    if (!std::isfinite(value) || value < 0 || (figure == Rate && value == 0) ||
        !std::isfinite(value * scale)) {
      WithColor::error(errs(), "optgen")
          << "--" << option.ArgStr << " is " << format("%g", value) << ": it is "
          << (figure == Rate   ? "a rate, a finite number above 0"
              : figure == Cost ? "a cost, a finite number from 0"
                               : "a count, from 0")
          << "\n";
      return false;
    }
    field = option * scale;
    changed = true;
    return true;
  };
  if (!set(gemmTflops, machine.gemm16, 1e12, Rate) ||
      !set(gemmF32Tflops, machine.gemm32, 1e12, Rate) ||
      !set(symmetricCost, machine.symmetricCost, 1, Cost) ||
      !set(memBandwidth, machine.memory, 1e9, Rate) ||
      !set(launchMicros, machine.launchOverhead, 1e-6, Cost) ||
      !set(linkBandwidth, machine.linkBandwidth, 1e9, Rate) ||
      !set(linkLatency, machine.linkLatency, 1e-6, Cost) ||
      !set(netBandwidth, machine.netBandwidth, 1e9, Rate) ||
      !set(netLatency, machine.netLatency, 1e-6, Cost) ||
      !set(ranksPerNode, machine.ranksPerNode, 1, Count))
    return std::nullopt;
  if (changed)
    machine.name += " (changed)";
  return machine;
}

/// What a failed compile exits with: the spec's error unless compileBuffer
/// says otherwise (a part of a split file may fail either way; the last
/// failure is reported).
runtime::ExitCode compileFailure = ExitSpecError;

/// Compiles one spec buffer (the whole file, or one part of a split file):
/// each stage is the previous one with its pipeline applied. A failure that
/// is not the spec's sets compileFailure.
/// `optgen compile` without --target: compiles a copy of `module` for each
/// target, as far as its code, so that a spec is checked for every target
/// and not first by a build. What a target cannot compile is a warning at
/// the spec's line that names the target; no target compiling the spec is
/// an error.
LogicalResult checkTargets(mlir::ModuleOp module, const MemoryBuffer *spec) {
  SmallVector<StringRef> compiled, refused;
  for (StringRef name : targetNames()) {
    mlir::OwningOpRef<mlir::ModuleOp> copy = module.clone();
    SmallVector<std::pair<mlir::Location, std::string>> lacks;
    bool lowered;
    {
      mlir::ScopedDiagnosticHandler collect(
          module.getContext(), [&](mlir::Diagnostic &diagnostic) {
            if (diagnostic.getSeverity() == mlir::DiagnosticSeverity::Error)
              lacks.emplace_back(diagnostic.getLocation(), diagnostic.str());
            return success();
          });
      GeneratedFiles files;
      lowered = (shapesFile.empty() || succeeded(plan(*copy))) &&
                succeeded(lowerToKernels(*copy)) &&
                succeeded(lowerToExecutableFor(*copy, name)) &&
                succeeded(lowerToLaunches(*copy)) &&
                succeeded(emitTargetFiles(*copy, spec, files));
    }
    (lowered ? compiled : refused).push_back(name);
    for (auto &[at, message] : lacks)
      mlir::emitWarning(at) << "--target=" << name << ": " << message;
  }
  if (!compiled.empty())
    return success();
  return mlir::emitError(module.getLoc())
         << "no target compiles this spec (" << llvm::join(refused, ", ")
         << "): the warnings say what each lacks";
}

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
  auto finish = [&](LogicalResult result,
                    runtime::ExitCode code = ExitSpecError) {
    if (failed(result))
      compileFailure = code;
    return verifier ? verifier->verify() : result;
  };

  SyntaxErrorFn onSyntaxError = syntaxErrorsAsDiagnostics(context, sourceMgr);
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

  FailureOr<Defines> parsed = parseDefines(sourceMgr, defines, onSyntaxError);
  if (failed(parsed))
    return finish(failure());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlirGen(context, sourceMgr, *spec, parsed->overrides);
  if (!module ||
      (!shapesFile.empty() && failed(addShapes(*module, shapesFile))))
    return finish(failure());
  if (emit == Stage::MLIR) {
    printIR(*module, os);
    // (--verify-diagnostics checks the front end's diagnostics.)
    if (target.empty() && !verifyDiagnostics)
      return finish(checkTargets(*module, sourceMgr.getMemoryBuffer(specId)));
    return finish(success());
  }

  if (!shapesFile.empty() && failed(plan(*module)))
    return finish(failure());
  if (emit == Stage::Planned) {
    if (shapesFile.empty()) {
      WithColor::error(errs(), "optgen") << "--emit=planned needs --shapes\n";
      return finish(failure(), ExitUsage);
    }
    printIR(*module, os);
    return finish(success());
  }

  if (failed(lowerToKernels(*module)))
    return finish(failure());
  // --shard-group auto: the rules' work is known now.
  if (!shapesFile.empty() && parsedShardGroup() == -1) {
    std::optional<runtime::Machine> machine = simulatedMachine();
    if (!machine)
      return finish(failure(), ExitUsage);
    for (OptimizerOp optimizer : module->getOps<OptimizerOp>())
      if (failed(chooseShardGroup(optimizer, worldSize, *machine)))
        return finish(failure());
  }
  if (emit == Stage::Kernels) {
    printIR(*module, os);
    return finish(success());
  }
  if (failed(lowerToExecutable(*module)))
    return finish(failure());
  if (emit == Stage::Executable) {
    printIR(*module, os);
    return finish(success());
  }
  if (failed(lowerToLaunches(*module)))
    return finish(failure());
  if (emit == Stage::Launches) {
    printIR(*module, os);
    return finish(success());
  }

  if (target.empty()) {
    WithColor::error(errs(), "optgen") << "--emit=code needs --target\n";
    return finish(failure(), ExitUsage);
  }
  GeneratedFiles files;
  const MemoryBuffer *specBuffer = sourceMgr.getMemoryBuffer(specId);
  if (failed(emitTargetFiles(*module, specBuffer, files)))
    return finish(failure());
  if (outputFile != "-")
    return finish(writeFiles(outputFile, files, force), ExitFailure);
  printFiles(files, os);
  return finish(success());
}

int compile() {
  if (!validTarget())
    return ExitUsage;
  if (!target.empty() && !emit.getNumOccurrences())
    emit = Stage::Code;
  if (!validWorldSize())
    return ExitUsage;
  std::optional<int> group = parsedShardGroup();
  if (!group)
    return ExitUsage;
  if (*group && (worldSize < 1 || shapesFile.empty())) {
    WithColor::error(errs(), "optgen")
        << "--shard-group needs --shapes and --world-size\n";
    return ExitUsage;
  }
  if (*group < 0 && (emit == Stage::Planned || emit == Stage::AST ||
                     emit == Stage::MLIR)) {
    WithColor::error(errs(), "optgen")
        << "--shard-group auto counts the work of the lowered rules: it "
           "applies from --emit=kernels on\n";
    return ExitUsage;
  }
  std::string message;
  std::unique_ptr<MemoryBuffer> input = openInput(specFile, message);
  if (!input) {
    WithColor::error(errs(), "optgen") << message << "\n";
    return ExitFailure;
  }
  bool toDirectory = emit == Stage::Code && outputFile != "-";
  bool toFile = !toDirectory && outputFile != "-";
  // An output never replaces an input.
  for (const std::string &in : {specFile.getValue(), shapesFile.getValue()}) {
    bool same = false;
    if (toFile && !in.empty() && !sys::fs::equivalent(outputFile, in, same) &&
        same) {
      WithColor::error(errs(), "optgen")
          << "-o '" << outputFile << "' is the file '" << in
          << "' it reads: an output never overwrites an input\n";
      return ExitUsage;
    }
  }
  // Into memory, then replacing the file at once: a failed compile leaves
  // the previous output as it was.
  std::string text;
  raw_string_ostream os(text);
  LogicalResult result =
      splitInputFile
          ? mlir::splitAndProcessBuffer(std::move(input), compileBuffer, os,
                                        "// -----", "// -----")
          : compileBuffer(std::move(input), os);
  os.flush();
  if (!toFile) {
    outs() << text;
    outs().flush();
    return failed(result) ? compileFailure : ExitSuccess;
  }
  if (failed(result))
    return compileFailure;
  std::string error = runtime::writeFile(outputFile, text.data(), text.size());
  if (!error.empty()) {
    WithColor::error(errs(), "optgen") << error << "\n";
    return ExitFailure;
  }
  return ExitSuccess;
}

int explain() {
  std::optional<runtime::Machine> machine;
  if (simulate && !(machine = simulatedMachine()))
    return ExitUsage;
  if (!validWorldSize())
    return ExitUsage;
  // Optgen IR (a compiled stage, possibly edited) carries its schedule.
  std::optional<int> group = parsedShardGroup();
  if (!group)
    return ExitUsage;
  bool fromIR = StringRef(specFile).ends_with(".mlir");
  if (fromIR && (!shapesFile.empty() || worldSize || !defines.empty() ||
                 *group)) {
    WithColor::error(errs(), "optgen")
        << "'" << specFile
        << "' is optgen IR, which carries its schedule: --shapes, "
           "--world-size, --shard-group and -D apply to specs\n";
    return ExitUsage;
  }
  if (*group && (shapesFile.empty() || worldSize < 1)) {
    WithColor::error(errs(), "optgen")
        << "--shard-group needs --shapes and --world-size\n";
    return ExitUsage;
  }
  if (*group < 0 && !machine && !(machine = simulatedMachine()))
    return ExitUsage;
  std::unique_ptr<LoadedSpec> loaded =
      fromIR ? loadIR(specFile) : loadSpec(specFile, defines, shapesFile);
  if (!loaded)
    return ExitSpecError;
  mlir::ModuleOp module = *loaded->module;
  auto optimizers = module.getOps<OptimizerOp>();
  if (optimizers.empty()) {
    WithColor::error(errs(), "optgen")
        << "'" << specFile << "' holds no optimizer\n";
    return ExitSpecError;
  }
  OptimizerOp optimizer = *optimizers.begin();
  std::optional<double> planSeconds;
  std::string shardGroupJson;
  if (!fromIR) {
    if (shapesFile.empty()) {
      if (simulate) {
        WithColor::error(errs(), "optgen")
            << "--simulate needs --shapes (and --world-size)\n";
        return ExitUsage;
      }
      printDistributionPolicy(optimizer, outs());
      return ExitSuccess;
    }
    // Folded, every state has a known size.
    auto start = std::chrono::steady_clock::now();
    if (failed(plan(module, /*minWorldSize=*/1)))
      return ExitSpecError;
    planSeconds = std::chrono::duration<double>(
                      std::chrono::steady_clock::now() - start)
                      .count();
    if (failed(lowerToKernels(module)))
      return ExitSpecError;
    if (*group < 0) {
      // Choosing the group is part of planning.
      auto choosing = std::chrono::steady_clock::now();
      FailureOr<SmallVector<ShardGroupChoice>> choices =
          chooseShardGroup(optimizer, worldSize, *machine);
      if (failed(choices))
        return ExitSpecError;
      *planSeconds += std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - choosing)
                          .count();
      outs() << "shard group chosen by the cost model on " << machine->name
             << ": " << choices->front().groupSize
             << " ranks (predicted step time by group size:";
      SmallVector<ShardGroupChoice> byGroup(*choices);
      llvm::sort(byGroup, [](const ShardGroupChoice &a,
                             const ShardGroupChoice &b) {
        return a.groupSize < b.groupSize;
      });
      for (const ShardGroupChoice &choice : byGroup)
        outs() << " " << choice.groupSize << ": "
               << format("%.3f", 1e3 * choice.stepSeconds) << " ms"
               << (&choice == &byGroup.back() ? ")" : ",");
      outs() << "\n";
      std::string json = "[";
      for (const ShardGroupChoice &choice : byGroup)
        json += (json.size() > 1 ? ", " : "") +
                formatv("{{\"group_size\": {0}, \"step_ms\": {1:F6}}",
                        choice.groupSize, 1e3 * choice.stepSeconds)
                    .str();
      shardGroupJson = json + "]";
    }
  }
  auto schedules = optimizer.getBlock().getOps<ScheduleOp>();
  if (schedules.empty()) {
    optimizer.emitError("optimizer '")
        << optimizer.getSymName()
        << "' has no optgen.schedule (compile it with --shapes and "
           "--world-size)";
    return ExitSpecError;
  }
  ScheduleOp schedule = *schedules.begin();
  FailureOr<StepExplanation> step = explainSchedule(schedule);
  if (failed(step))
    return ExitSpecError;
  printExplanation(*step, outs());
  std::vector<std::pair<std::string, std::string>> extra;
  if (planSeconds)
    extra.push_back({"plan_seconds", std::to_string(*planSeconds)});
  if (!shardGroupJson.empty())
    extra.push_back({"shard_group_choices", shardGroupJson});
  if (simulate) {
    FailureOr<SimulatedScheme> ours = simulateSchedule(schedule, *machine);
    FailureOr<SimulatedScheme> theirs =
        simulateNanochatScheme(schedule, *machine);
    if (failed(ours) || failed(theirs))
      return ExitSpecError;
    printSimulation(*machine, *ours, *theirs, outs());
    std::string json;
    raw_string_ostream jsonStream(json);
    writeSimulationJson(*machine, *ours, *theirs, jsonStream);
    extra.push_back({"simulation", json});
  }
  if (!explainReport.empty()) {
    std::string json;
    raw_string_ostream report(json);
    writeExplanationJson(*step, report, extra);
    std::string error = runtime::writeFile(explainReport, json.data(), json.size());
    if (!error.empty()) {
      WithColor::error(errs(), "optgen") << error << "\n";
      return ExitFailure;
    }
  }
  return ExitSuccess;
}

int runCase() {
  if (!validTarget())
    return ExitUsage;
  if (tolerance.getNumOccurrences() &&
      !(tolerance >= 0 && std::isfinite(tolerance))) {
    WithColor::error(errs(), "optgen")
        << "--tolerance takes a number at least 0 (an update error, e.g. "
           "1e-5), not "
        << tolerance << "\n";
    return ExitUsage;
  }
  std::unique_ptr<LoadedSpec> loaded = loadSpec(specFile, defines, "");
  if (!loaded)
    return ExitSpecError;
  mlir::ModuleOp module = *loaded->module;
  auto optimizer = *module.getOps<OptimizerOp>().begin();
  if (interpret) {
    if (splitGrads) {
      WithColor::error(errs(), "optgen")
          << "--split-grads needs compiled code: the interpreter runs one "
             "rank\n";
      return ExitUsage;
    }
    if (!saveStateFile.empty() || !loadStateFile.empty() ||
        !saveAt.empty() || !resumeDir.empty()) {
      WithColor::error(errs(), "optgen")
          << "the interpreter keeps no optimizer checkpoints: --save-state, "
             "--load-state, --save-at and --resume need compiled code\n";
      return ExitUsage;
    }
    return runCaseOnInterpreter(optimizer, caseFile, outFile, reportFile,
                                repeat, skipNonFinite, tolerance);
  }

  // The default target unless --target says otherwise; a CUDA runner
  // without a GPU says so and exits 77 (CTest's skip), which optgen run
  // passes on.
  GeneratedFiles files;
  const MemoryBuffer *spec = loaded->sourceMgr.getMemoryBuffer(loaded->specId);
  if (failed(lowerToKernels(module)) || failed(lowerToExecutable(module)) ||
      failed(lowerToLaunches(module)) ||
      failed(emitTargetFiles(module, spec, files)))
    return ExitSpecError;
  // Without a GPU (no NVIDIA device node) a device target's case replays on
  // the emulated device, which runs the same .cu text.
  TargetAttr lowered = getTarget(module);
  bool emulated = false;
  if (lowered.isDevice()) {
    emulated = device == Device::Emulated ||
               (device == Device::Auto && !sys::fs::exists("/dev/nvidia0"));
    if (emulated && device == Device::Auto)
      errs() << "optgen: no GPU here: replaying on the emulated CUDA device "
                "(--device=emulated; what it proves: docs/EMULATION.md)\n";
  } else if (device.getNumOccurrences()) {
    WithColor::error(errs(), "optgen")
        << "--device is for a GPU target (--target=cuda)\n";
    return ExitUsage;
  }
  std::string runner = buildRunner(files, lowered, buildDir, emulated);
  if (runner.empty())
    return ExitFailure;
  std::vector<std::string> args{"--case", caseFile, "--repeat",
                                std::to_string(repeat)};
  if (!outFile.empty())
    args.insert(args.end(), {"--out", outFile});
  if (!reportFile.empty())
    args.insert(args.end(), {"--report", reportFile});
  if (splitGrads)
    args.push_back("--split-grads");
  if (!saveStateFile.empty())
    args.insert(args.end(), {"--save-state", saveStateFile});
  if (!loadStateFile.empty())
    args.insert(args.end(), {"--load-state", loadStateFile});
  if (!saveAt.empty())
    args.insert(args.end(), {"--save-at", saveAt[0], saveAt[1]});
  if (!resumeDir.empty())
    args.insert(args.end(), {"--resume", resumeDir});
  if (skipNonFinite)
    args.push_back("--skip-nonfinite");
  if (tolerance.getNumOccurrences()) {
    std::string text;
    raw_string_ostream(text) << format("%.17g", tolerance.getValue());
    args.insert(args.end(), {"--tolerance", text});
  }
  int code = execute(runner, args);
  return code < 0 ? ExitFailure : code;
}

int newCase() {
  if (caseWords.size() != 2 || caseWords[0] != "new") {
    WithColor::error(errs(), "optgen")
        << "the case command is 'optgen case new SPEC --shapes "
           "MODEL.safetensors -o CASE.safetensors'\n";
    return ExitUsage;
  }
  if (shapesFile.empty() || outputFile == "-") {
    WithColor::error(errs(), "optgen")
        << "optgen case new needs --shapes (the model's parameters) and -o "
           "(the case to write)\n";
    return ExitUsage;
  }
  // The gradients are f32 normal samples times the scale: above 1e30 a
  // sample of a few deviations is no f32 (an infinity).
  if (caseSteps < 1 || caseSteps > 1000000 || !(caseGradScale >= 0) ||
      !(caseGradScale <= 1e30)) {
    WithColor::error(errs(), "optgen")
        << "--steps takes 1 to 1000000 steps and --grad-scale a number from "
           "0 to 1e30 (the gradients are f32), not "
        << caseSteps << " and " << format("%g", caseGradScale.getValue())
        << "\n";
    return ExitUsage;
  }
  const std::string &spec = caseWords[1];
  for (const std::string &in : {spec, shapesFile.getValue()}) {
    bool same = false;
    if (!sys::fs::equivalent(outputFile, in, same) && same) {
      WithColor::error(errs(), "optgen")
          << "-o '" << outputFile << "' is the file '" << in
          << "' it reads: an output never overwrites an input\n";
      return ExitUsage;
    }
  }
  std::unique_ptr<LoadedSpec> loaded = loadSpec(spec, defines, shapesFile);
  if (!loaded || failed(plan(*loaded->module)))
    return ExitSpecError;
  auto optimizers = loaded->module->getOps<OptimizerOp>();
  NewCaseOptions options;
  options.outPath = outputFile;
  options.steps = caseSteps;
  options.seed = caseSeed;
  options.gradScale = caseGradScale;
  return writeNewCase(*optimizers.begin(), options);
}

/// `optgen --version`: optgen's own version, and the LLVM and MLIR it was
/// built with (LLVM's printer would print only LLVM's).
void printVersion(raw_ostream &os) {
  os << "optgen " << OPTGEN_VERSION << "\n"
     << "  built with LLVM and MLIR " << LLVM_VERSION_STRING << "\n"
     << "  targets: " << listTargets() << "\n";
}

/// `optgen help [COMMAND]` is `optgen [COMMAND] --help`: the arguments to
/// parse instead of argv, or nullopt after reporting a command that does
/// not exist.
std::optional<SmallVector<const char *>> helpArguments(int argc, char **argv) {
  SmallVector<const char *> args{argv[0]};
  if (argc > 3) {
    WithColor::error(errs(), "optgen")
        << "'optgen help' takes at most one command\n";
    return std::nullopt;
  }
  if (argc == 3) {
    StringRef name = argv[2];
    auto commands = cl::getRegisteredSubcommands();
    if (name == "help" ||
        llvm::none_of(commands, [&](cl::SubCommand *command) {
          return command->getName() == name;
        })) {
      raw_ostream &error = WithColor::error(errs(), "optgen");
      error << "no command '" << name << "'; the commands are";
      SmallVector<StringRef> names;
      for (cl::SubCommand *command : commands)
        if (!command->getName().empty())
          names.push_back(command->getName());
      llvm::sort(names);
      for (StringRef known : names)
        error << " " << known;
      error << " (and help)\n";
      return std::nullopt;
    }
    args.push_back(argv[2]);
  }
  args.push_back("--help");
  return args;
}

/// `optgen cache list`, `optgen cache clean ...` (optgen/Driver/Cache.h).
int cache() {
  StringRef action = cacheArgs.empty() ? "" : StringRef(cacheArgs.front());
  if (action == "list" && cacheArgs.size() == 1 && !cleanAll &&
      !cleanOlderThan.getNumOccurrences())
    return listCache(outs());
  if (action == "clean")
    return cleanCache(ArrayRef<std::string>(cacheArgs).drop_front(), cleanAll,
                      cleanOlderThan.getNumOccurrences()
                          ? std::optional<unsigned>(cleanOlderThan)
                          : std::nullopt,
                      outs());
  WithColor::error(errs(), "optgen")
      << "optgen cache takes 'list' (alone) or 'clean' (ENTRY..., --all or "
         "--older-than DAYS)\n";
  return ExitUsage;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(optgenCategory);
  cl::SetVersionPrinter(printVersion);
  std::optional<SmallVector<const char *>> help;
  if (argc >= 2 && StringRef(argv[1]) == "help" &&
      !(help = helpArguments(argc, argv)))
    return ExitUsage;
  // Errors in the command line are reported (not exited on with 1), so
  // that they exit with ExitUsage.
  if (!cl::ParseCommandLineOptions(
          help ? static_cast<int>(help->size()) : argc,
          help ? help->data() : argv,
          "optgen: a compiler for optimizer steps\n\n"
          "  optgen compile SPEC [--emit=ast|mlir|kernels] [-o FILE] [-D NAME=VALUE]\n"
          "  optgen compile SPEC --target=cpu -o DIR [--shapes MODEL.safetensors]\n"
          "  optgen compile SPEC --shapes MODEL.safetensors [--world-size N] "
          "--emit=planned\n"
          "  optgen explain SPEC [--shapes MODEL.safetensors --world-size N]\n"
          "             [--simulate [--machine h100-ib|h200-nvlink|cpu|...]]\n"
          "  optgen explain COMPILED.mlir\n"
          "  optgen run SPEC --case CASE.safetensors [--out OUT.safetensors]\n"
          "             [--interpret | --target=cpu | --target=cuda [--device=gpu|emulated]]\n"
          "             [--repeat R] [--report R.json]\n"
          "             [--tolerance X] [--save-state F | --load-state F |\n"
          "             --save-at K DIR | --resume DIR]\n"
          "  optgen case new SPEC --shapes MODEL.safetensors -o CASE.safetensors\n"
          "             [--steps S] [--seed N] [--grad-scale X] [-D NAME=VALUE]\n"
          "  optgen cache list | clean ENTRY... | clean --all | clean --older-than DAYS\n"
          "  optgen help [COMMAND]\n"
          "  optgen --version\n\n"
          "'optgen help COMMAND' (or 'optgen COMMAND --help') lists the "
          "options of a command.\n\n"
          "Exit status: 0 done; 1 the work failed (a file, a build, a "
          "step); 2 a\n"
          "wrong command line; 3 the spec (or -D, --shapes, IR) has errors; "
          "4 optgen run\n"
          "--tolerance: an error above the tolerance; 77 optgen run "
          "--target=cuda --device=gpu: no GPU.\n",
          &errs()))
    return ExitUsage;
  if (compileCommand)
    return compile();
  if (runCommand)
    return runCase();
  if (explainCommand)
    return explain();
  if (caseCommand)
    return newCase();
  if (cacheCommand)
    return cache();
  errs() << "optgen: no command given; run 'optgen help'\n";
  return ExitUsage;
}
