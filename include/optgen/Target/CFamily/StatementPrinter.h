//===- StatementPrinter.h - Printing statements of generated code -*- C++ -*-===//
//
// What every printer of statements does: indentation, a comment with the
// spec line a statement comes from (when it changes), and names that the
// spec chose, made unique. The CPU printer's rules and the CUDA printer's
// kernels print through it.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_TARGET_CFAMILY_STATEMENTPRINTER_H
#define OPTGEN_TARGET_CFAMILY_STATEMENTPRINTER_H

#include "optgen/Target/CFamily/Names.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <optional>
#include <string>

namespace optgen {

class StatementPrinter {
public:
  /// Prints to `os`; comments cite `specFile` and quote `sourceLine`'s
  /// text of a line (empty: no quote).
  StatementPrinter(llvm::raw_ostream &os, std::string specFile,
                   std::function<std::string(unsigned)> sourceLine)
      : os(os), specFile(std::move(specFile)),
        sourceLine(std::move(sourceLine)) {}

  /// The stream at the start of a new line, indented.
  llvm::raw_ostream &line();
  /// A comment with the spec line `op` comes from, when it changes.
  void noteSource(mlir::Operation *op);
  /// A unique name for `value`: the spec's, or `fallback`.
  std::string nameFor(mlir::Value value, llvm::StringRef fallback);
  /// Prints elementwise math `op` on `operands` (its operands' expressions)
  /// as a constant named for its result (nameFor, `fallback`); the name,
  /// or empty (nothing printed) for an op that is not elementwise math.
  std::string printMath(mlir::Operation *op,
                        llvm::ArrayRef<std::string> operands,
                        llvm::StringRef fallback);

  /// Prints the read of a scalar that every target's generated code reads
  /// alike: a hyperparameter from the array `hypers` (a tuple's elements by
  /// tuple_get; the tuple itself is its offset), a global from
  /// `call.globals`, a constant. The scalar's expression; empty, with
  /// nothing printed, for another op; nullopt after a diagnostic.
  std::optional<std::string>
  printScalarRead(mlir::Operation *op,
                  llvm::StringRef hypers = "call.hypers");

  llvm::raw_ostream &os;
  NameTable names;
  unsigned indent = 1;
  /// The spec line last cited (0: none yet).
  unsigned lastLine = 0;

private:
  std::string specFile;
  std::function<std::string(unsigned)> sourceLine;
};

} // namespace optgen

#endif // OPTGEN_TARGET_CFAMILY_STATEMENTPRINTER_H
