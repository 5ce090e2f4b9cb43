//===- Lexer.h - Tokens of optgen spec files --------------------*- C++ -*-===//
//
// Splits a spec buffer into tokens for the parser. The lexer stops at the
// buffer's end pointer, never at a NUL byte, so a NUL inside a spec is an
// ordinary (rejected) character instead of a silent end of file. Malformed
// input becomes a single Error token that carries the message; the parser
// reports it and stops, so the lexer never has to recover.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_FRONTEND_LEXER_H
#define OPTGEN_FRONTEND_LEXER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SMLoc.h"

#include <optional>
#include <string>

namespace optgen {

enum class TokenKind {
  Eof,
  Error,
  Identifier,
  Number,
  String,

  // Reserved words. Keep them contiguous: isKeyword() relies on it.
  KwOptimizer,
  KwConst,
  KwRule,
  KwHyper,
  KwState,
  KwLet,
  KwIf,
  KwElse,
  KwFor,
  KwIn,
  KwGroup,
  KwMatch,
  KwWhere,
  KwDistribute,
  KwOnNonFinite,
  KwGlobal,
  KwFn,
  KwReturn,

  // Punctuation.
  LParen,       // (
  RParen,       // )
  LBracket,     // [
  RBracket,     // ]
  LBrace,       // {
  RBrace,       // }
  Comma,        // ,
  Semicolon,    // ;
  Colon,        // :
  Equal,        // =
  Question,     // ?
  Plus,         // +
  Minus,        // -
  Star,         // *
  Slash,        // /
  Percent,      // %
  Caret,        // ^
  At,           // @
  Less,         // <
  LessEqual,    // <=
  Greater,      // >
  GreaterEqual, // >=
  EqualEqual,   // ==
  BangEqual,    // !=
  AmpAmp,       // &&
  PipePipe,     // ||
  Bang,         // !
};

inline bool isKeyword(TokenKind kind) {
  return kind >= TokenKind::KwOptimizer && kind <= TokenKind::KwReturn;
}

struct Token {
  TokenKind kind = TokenKind::Eof;
  /// The token's text in the buffer. For an Error token, the text the error
  /// is about; it starts where the error points.
  llvm::StringRef spelling;
  /// Number tokens: the value and whether it was written as an integer
  /// (no '.', no exponent).
  double number = 0;
  bool isInteger = false;
  /// String tokens: the decoded contents. Error tokens: the message.
  std::string text;

  bool is(TokenKind k) const { return kind == k; }
  llvm::SMLoc getLoc() const {
    return llvm::SMLoc::getFromPointer(spelling.begin());
  }
  /// One past the last character, as SourceMgr ranges expect.
  llvm::SMLoc getEndLoc() const {
    return llvm::SMLoc::getFromPointer(spelling.end());
  }
  llvm::SMRange getRange() const { return {getLoc(), getEndLoc()}; }
};

/// Quotes source text for a diagnostic ('text'), shortening long text so
/// that one huge token cannot flood the terminal.
std::string quoteSource(llvm::StringRef text);

class Lexer {
public:
  /// `buffer` must outlive the lexer and every token it returns.
  explicit Lexer(llvm::StringRef buffer)
      : cur(buffer.begin()), end(buffer.end()) {}

  /// Returns the next token; Eof (with an empty spelling at the buffer's end)
  /// once the input is exhausted.
  Token lex();

private:
  Token makeToken(TokenKind kind, const char *start);
  Token makeError(const char *start, const char *stop, std::string message);
  /// Skips whitespace and comments; returns an Error token for an
  /// unterminated block comment.
  std::optional<Token> skipTrivia();
  Token lexIdentifier(const char *start);
  Token lexNumber(const char *start);
  Token lexString(const char *start);

  const char *cur;
  const char *const end;
};

} // namespace optgen

#endif // OPTGEN_FRONTEND_LEXER_H
