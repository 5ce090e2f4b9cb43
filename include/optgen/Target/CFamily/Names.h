//===- Names.h - Legal C-family names and strings from spec text -*- C++ -*-===//
//
// Every identifier, string and comment that a printer writes from spec text
// (rule, state and hyperparameter names, globs, file names) goes through
// these, so no spec can inject code into the C++ or CUDA that optgen emits.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_TARGET_CFAMILY_NAMES_H
#define OPTGEN_TARGET_CFAMILY_NAMES_H

#include "llvm/ADT/StringRef.h"

#include <set>
#include <string>

namespace optgen {

/// Whether `name` may not name anything in generated code: a C or C++
/// keyword, a macro of the C and C++ libraries or of GCC's GNU modes (any
/// all-uppercase name counts as one), a CMake target name of CMake's or of
/// optgen's runtime (`optgen*`), or a name the generated code itself uses.
bool isReservedName(llvm::StringRef name);

/// `text` as a C++ identifier: only [A-Za-z0-9_], not starting with a digit
/// or an underscore (reserved forms), no double underscore, not reserved.
std::string legalIdentifier(llvm::StringRef text);

/// `text` as a C++ string literal: printable ASCII as itself, everything
/// else (quotes, backslashes, newlines, bytes >= 0x80) as octal escapes.
std::string cppString(llvm::StringRef text);

/// Spec text made safe inside a `//` comment: no backslashes (a trailing one
/// would continue the comment onto the next line), printable ASCII only.
std::string commentText(llvm::StringRef text);

/// Hands out distinct legal identifiers.
class NameTable {
public:
  std::string unique(llvm::StringRef base);

private:
  std::set<std::string> used;
};

} // namespace optgen

#endif // OPTGEN_TARGET_CFAMILY_NAMES_H
