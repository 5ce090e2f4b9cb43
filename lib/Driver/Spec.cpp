//===- Spec.cpp - Loading a spec: parse, -D, MLIRGen, --shapes ------------===//

#include "optgen/Driver/Spec.h"

#include "dialect/OptgenDialect.h"
#include "optgen/Driver/ShapesFile.h"
#include "optgen/Frontend/MLIRGen.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

using namespace llvm;
using namespace mlir;
using namespace optgen;

std::unique_ptr<MemoryBuffer> optgen::openInput(StringRef path,
                                                std::string &error) {
  if (path == "-") {
    ErrorOr<std::unique_ptr<MemoryBuffer>> input = MemoryBuffer::getSTDIN();
    if (!input)
      error = "cannot read standard input: " + input.getError().message();
    return input ? std::move(*input) : nullptr;
  }
  // Opened without waiting (a fifo's open would wait for a writer), then
  // judged by what was opened, not by a name that may change meanwhile.
  int fd = ::open(path.str().c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot open '" + path.str() + "': " + std::strerror(errno);
    return nullptr;
  }
  struct stat status;
  if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
    error = "'" + path.str() + "' is " +
            (S_ISDIR(status.st_mode)    ? "a folder"
             : S_ISFIFO(status.st_mode) ? "a fifo"
             : S_ISCHR(status.st_mode)  ? "a character device"
                                        : "not a regular file") +
            ": optgen reads its inputs from regular files (or '-', standard "
            "input)";
    ::close(fd);
    return nullptr;
  }
  ErrorOr<std::unique_ptr<MemoryBuffer>> input = MemoryBuffer::getOpenFile(
      fd, path, static_cast<uint64_t>(status.st_size));
  ::close(fd);
  if (!input) {
    error = "cannot read '" + path.str() + "': " + input.getError().message();
    return nullptr;
  }
  return std::move(*input);
}

SyntaxErrorFn optgen::syntaxErrorsAsDiagnostics(MLIRContext &context,
                                                SourceMgr &sourceMgr) {
  return [&context, &sourceMgr](SMLoc at, const Twine &message) {
    unsigned id = sourceMgr.FindBufferContainingLoc(at);
    auto [line, col] = sourceMgr.getLineAndColumn(at, id);
    emitError(FileLineColLoc::get(
        &context, sourceMgr.getMemoryBuffer(id)->getBufferIdentifier(), line,
        col))
        << message;
  };
}

FailureOr<Defines> optgen::parseDefines(SourceMgr &sourceMgr,
                                        ArrayRef<std::string> defines,
                                        const SyntaxErrorFn &onError) {
  Defines parsed;
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
    parsed.overrides.push_back(
        cast<ast::ConstDecl>(module->getDecls().front().get()));
    parsed.modules.push_back(std::move(module));
  }
  return parsed;
}

LogicalResult optgen::addShapes(ModuleOp module, StringRef shapesFile) {
  std::vector<NamedShape> shapes;
  std::string error;
  if (!readShapes(shapesFile.str(), shapes, error)) {
    WithColor::error(errs(), "optgen") << error << "\n";
    return failure();
  }
  MLIRContext *context = module.getContext();
  OpBuilder builder(context);
  Location file = FileLineColLoc::get(context, shapesFile, 0, 0);
  for (auto optimizer : module.getOps<OptimizerOp>()) {
    builder.setInsertionPointToEnd(&optimizer.getBlock());
    for (DistributeOp distribute : optimizer.getBlock().getOps<DistributeOp>())
      builder.setInsertionPoint(distribute);
    for (const auto &[name, shape] : shapes)
      builder.create<ParamOp>(NameLoc::get(builder.getStringAttr(name), file),
                              name, shape, FlatSymbolRefAttr());
  }
  return success();
}

/// The file at `path` in a new context for a command's IR, whose errors are
/// printed with their source line; null after reporting why not.
static std::unique_ptr<LoadedSpec> openLoaded(StringRef path) {
  std::string message;
  std::unique_ptr<MemoryBuffer> input = openInput(path, message);
  if (!input) {
    WithColor::error(errs(), "optgen") << message << "\n";
    return nullptr;
  }
  auto loaded = std::make_unique<LoadedSpec>();
  loaded->context.getOrLoadDialect<OptgenDialect>();
  // Errors point at the spec; a dump of the IR would bury them.
  loaded->context.printOpOnDiagnostic(false);
  loaded->handler = std::make_unique<SourceMgrDiagnosticHandler>(
      loaded->sourceMgr, &loaded->context);
  loaded->specId =
      loaded->sourceMgr.AddNewSourceBuffer(std::move(input), SMLoc());
  return loaded;
}

std::unique_ptr<LoadedSpec> optgen::loadSpec(StringRef path,
                                             ArrayRef<std::string> defines,
                                             StringRef shapesFile) {
  std::unique_ptr<LoadedSpec> loaded = openLoaded(path);
  if (!loaded)
    return nullptr;
  SyntaxErrorFn onSyntaxError =
      syntaxErrorsAsDiagnostics(loaded->context, loaded->sourceMgr);
  loaded->spec = parseSpec(loaded->sourceMgr, loaded->specId, onSyntaxError);
  if (!loaded->spec)
    return nullptr;
  FailureOr<Defines> parsed =
      parseDefines(loaded->sourceMgr, defines, onSyntaxError);
  if (failed(parsed))
    return nullptr;
  loaded->defines = std::move(*parsed);
  loaded->module = mlirGen(loaded->context, loaded->sourceMgr, *loaded->spec,
                           loaded->defines.overrides);
  if (!loaded->module ||
      (!shapesFile.empty() && failed(addShapes(*loaded->module, shapesFile))))
    return nullptr;
  return loaded;
}

std::unique_ptr<LoadedSpec> optgen::loadIR(StringRef path) {
  std::unique_ptr<LoadedSpec> loaded = openLoaded(path);
  if (!loaded)
    return nullptr;
  loaded->module = parseSourceFile<ModuleOp>(loaded->sourceMgr,
                                            ParserConfig(&loaded->context));
  if (!loaded->module)
    return nullptr;
  return loaded;
}
