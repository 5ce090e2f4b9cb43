//===- Names.cpp - Legal C-family names and strings from spec text --------===//

#include "optgen/Target/CFamily/Names.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <cstdio>

using namespace llvm;
using namespace optgen;

bool optgen::isReservedName(StringRef name) {
  static const llvm::StringSet<> keywords = {
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor",
      "bool", "break", "case", "catch", "char", "char16_t", "char32_t",
      "char8_t", "class", "compl", "concept", "const", "consteval",
      "constexpr", "constinit", "const_cast", "continue", "co_await",
      "co_return", "co_yield", "decltype", "default", "delete", "do",
      "double", "dynamic_cast", "else", "enum", "explicit", "export",
      "extern", "false", "float", "for", "friend", "goto", "if", "inline",
      "int", "long", "mutable", "namespace", "new", "noexcept", "not",
      "not_eq", "nullptr", "operator", "or", "or_eq", "private", "protected",
      "public", "register", "reinterpret_cast", "requires", "return", "short",
      "signed", "sizeof", "static", "static_assert", "static_cast", "struct",
      "switch", "template", "this", "thread_local", "throw", "true", "try",
      "typedef", "typeid", "typename", "union", "unsigned", "using",
      "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq",
      // C's keywords and alternative spellings C++ may meet in headers.
      "restrict", "_Bool", "_Complex", "_Imaginary",
      // Macros of the C and C++ libraries and of GCC's GNU modes whose
      // names have lowercase letters (all-uppercase names are taken for
      // macros as a whole below: EOF, NULL, HUGE_VAL, INT_MAX, M_PI, ...).
      "errno", "unix", "linux", "i386", "sun", "sparc", "mips", "vax",
      "assert", "offsetof", "setjmp", "va_start", "va_arg", "va_end",
      "va_copy", "stdin", "stdout", "stderr", "math_errhandling", "major",
      "minor", "makedev", "alloca", "errno_t",
      // CMake's own targets (the optimizer's name is a target's).
      "all", "clean", "help", "install", "test", "package", "package_source",
      "edit_cache", "rebuild_cache", "list_install_components", "depend",
      "preinstall", "ALL_BUILD", "ZERO_CHECK", "RUN_TESTS",
      // Names the generated code itself uses.
      "call", "optgen", "std", "row", "i", "j", "k", "R", "C", "shape",
      "rank", "rows", "cols", "main", "size", "int64_t", "Tile", "NAN",
      "INFINITY", "makeSpec", "compiledStep", "globalContribution",
      "finishGlobals",
      // And CUDA kernels: their own variables, CUDA's built-in ones.
      "member", "n", "workspace", "slots", "first", "stride", "element",
      "rowStep", "colStep", "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize"};
  if (keywords.contains(name))
    return true;
  // optgen's namespaces and the runtime's CMake targets (optgen_runtime,
  // optgen_runtime_core, ...) begin so.
  if (name.starts_with("optgen"))
    return true;
  // Macros are spelled in uppercase: a name without a lowercase letter may
  // be one of any header's (EOF, NULL, HUGE_VAL, EDOM, M_PI, SIGINT, ...).
  return llvm::none_of(name, [](char c) { return llvm::isLower(c); });
}

std::string optgen::legalIdentifier(StringRef text) {
  std::string name;
  for (char c : text)
    name += llvm::isAlnum(c) ? c : '_';
  while (!name.empty() && name.front() == '_')
    name.erase(name.begin());
  if (name.empty() || llvm::isDigit(name.front()))
    name = "v" + name;
  size_t doubled;
  while ((doubled = name.find("__")) != std::string::npos)
    name.erase(doubled, 1);
  if (isReservedName(name))
    name += "_";
  return name;
}

std::string optgen::cppString(StringRef text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\' || c == '?' || c < 0x20 || c >= 0x7f) {
      char escape[5];
      std::snprintf(escape, sizeof escape, "\\%03o", c);
      out += escape;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string optgen::commentText(StringRef text) {
  std::string out;
  for (unsigned char c : text.trim())
    out += (c == '\\' || c < 0x20 || c >= 0x7f) ? '?' : static_cast<char>(c);
  return out;
}

std::string NameTable::unique(StringRef base) {
  std::string name = legalIdentifier(base);
  if (used.insert(name).second)
    return name;
  // `int_` + `_1` would be reserved (a double underscore): join on one.
  std::string stem = name;
  while (stem.size() > 1 && stem.back() == '_')
    stem.pop_back();
  for (unsigned n = 1;; ++n) {
    std::string candidate = stem + "_" + std::to_string(n);
    if (used.insert(candidate).second)
      return candidate;
  }
}
