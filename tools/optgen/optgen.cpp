//===- optgen.cpp - The optgen compiler driver ----------------------------===//
//
// `optgen compile SPEC --emit=ast|mlir [-o FILE]`: reads a spec, reports any
// error at its location with the source line and a caret, and prints the
// requested stage.
//
//===----------------------------------------------------------------------===//

#include "dialect/OptgenDialect.h"
#include "optgen/Frontend/MLIRGen.h"
#include "optgen/Frontend/Parser.h"
#include "optgen/Target/Cpu/EmitCpu.h"
#include "optgen/Transforms/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/ToolUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
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

cl::opt<std::string> specFile(cl::Positional, cl::desc("<spec.opt>"),
                              cl::Required, cl::sub(compileCommand), cl::cat(optgenCategory));

cl::opt<std::string> outputFile(
    "o",
    cl::desc("Write the output to FILE (default: standard output); with "
             "--target, FILE is the directory the generated files go to"),
    cl::value_desc("FILE"), cl::init("-"), cl::sub(compileCommand),
    cl::cat(optgenCategory));

enum class Stage { AST, MLIR, Kernels, Code };
cl::opt<Stage> emit(
    "emit", cl::desc("What to print:"), cl::init(Stage::MLIR),
    cl::values(
        clEnumValN(Stage::AST, "ast", "the syntax tree of the spec"),
        clEnumValN(Stage::MLIR, "mlir",
                   "the spec in the optgen dialect (the default)"),
        clEnumValN(Stage::Kernels, "kernels",
                   "the rules with their math fused into kernels"),
        clEnumValN(Stage::Code, "code",
                   "the generated code for --target (the default with it)")),
    cl::sub(compileCommand), cl::cat(optgenCategory));

enum class Target { None, Cpu };
cl::opt<Target> target(
    "target", cl::desc("Generate code for:"), cl::init(Target::None),
    cl::values(clEnumValN(Target::Cpu, "cpu",
                          "C++ for the CPU (a header, a source file and a "
                          "CMakeLists.txt linking optgen's runtime)")),
    cl::sub(compileCommand), cl::cat(optgenCategory));

cl::list<std::string>
    defines("D",
            cl::desc("Set the spec's constant NAME to VALUE (an expression of "
                     "literals, e.g. -D compute=f32)"),
            cl::value_desc("NAME=VALUE"), cl::Prefix, cl::sub(compileCommand), cl::cat(optgenCategory));

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

/// The passes that prepare each rule for the emitters.
LogicalResult prepareKernels(mlir::MLIRContext &context,
                             mlir::ModuleOp module) {
  mlir::PassManager pm(&context);
  mlir::OpPassManager &rules =
      pm.nest<OptimizerOp>().nest<RuleOp>();
  rules.addPass(mlir::createCanonicalizerPass());
  rules.addPass(mlir::createCSEPass());
  rules.addPass(createFuseKernels());
  return pm.run(module);
}

/// Emits the code of every optimizer in `module`: into the directory -o
/// names, or to `os` with a header line per file.
LogicalResult writeCode(mlir::ModuleOp module, SourceMgr &sourceMgr,
                        unsigned specId, raw_ostream &os) {
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
  for (auto optimizer : module.getOps<OptimizerOp>()) {
    std::map<std::string, std::string> files;
    if (failed(emitCpu(optimizer, options, files)))
      return failure();
    if (outputFile == "-") {
      for (const auto &[name, text] : files)
        os << "// ----- " << name << "\n" << text;
      continue;
    }
    if (std::error_code error = sys::fs::create_directories(outputFile)) {
      WithColor::error(errs(), "optgen")
          << "cannot create '" << outputFile << "': " << error.message()
          << "\n";
      return failure();
    }
    for (const auto &[name, text] : files) {
      SmallString<256> path(outputFile);
      sys::path::append(path, name);
      std::error_code error;
      raw_fd_ostream file(path, error);
      if (error) {
        WithColor::error(errs(), "optgen")
            << "cannot write '" << path << "': " << error.message() << "\n";
        return failure();
      }
      file << text;
    }
  }
  return success();
}

/// Compiles one spec buffer (the whole file, or one part of a split file).
LogicalResult compileBuffer(std::unique_ptr<MemoryBuffer> buffer,
                            raw_ostream &os) {
  mlir::MLIRContext context;
  context.getOrLoadDialect<OptgenDialect>();
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

  // Syntax errors become MLIR diagnostics too, with the same form and the
  // same --verify-diagnostics checks as every later error.
  auto onSyntaxError = [&](SMLoc at, const Twine &message) {
    unsigned id = sourceMgr.FindBufferContainingLoc(at);
    auto [line, col] = sourceMgr.getLineAndColumn(at, id);
    mlir::emitError(mlir::FileLineColLoc::get(
        &context, sourceMgr.getMemoryBuffer(id)->getBufferIdentifier(), line,
        col))
        << message;
  };

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
  return finish(writeCode(*module, sourceMgr, specId, os));
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

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(optgenCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "optgen: a compiler for optimizer steps\n\n"
      "  optgen compile SPEC [--emit=ast|mlir|kernels] [-o FILE] [-D NAME=VALUE]\n"
      "  optgen compile SPEC --target=cpu -o DIR\n\n"
      "Run 'optgen compile --help' for the options of a command.\n");
  if (compileCommand)
    return compile();
  errs() << "optgen: no command given; run 'optgen --help'\n";
  return 1;
}
