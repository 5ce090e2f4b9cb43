//===- Parser.h - Parser of optgen spec files -------------------*- C++ -*-===//
//
// A recursive-descent parser over the tokens of Lexer.h. It stops at the first
// error, which it reports through the callback with the location of the token
// at fault. Nesting is bounded (kMaxNestingDepth), so no input can exhaust the
// stack of the parser or of the passes that walk its tree.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_FRONTEND_PARSER_H
#define OPTGEN_FRONTEND_PARSER_H

#include "optgen/Frontend/AST.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/SourceMgr.h"

#include <functional>
#include <memory>

namespace optgen {

/// Receives a syntax error: where it is and what is wrong.
using SyntaxErrorFn = std::function<void(llvm::SMLoc, const llvm::Twine &)>;

/// Deepest nesting of expressions and blocks a spec may use.
constexpr unsigned kMaxNestingDepth = 200;

/// Parses the buffer `bufferId` of `sourceMgr`. Returns null after reporting
/// an error through `onError`.
std::unique_ptr<ast::Module> parseSpec(llvm::SourceMgr &sourceMgr,
                                       unsigned bufferId,
                                       const SyntaxErrorFn &onError);

} // namespace optgen

#endif // OPTGEN_FRONTEND_PARSER_H
