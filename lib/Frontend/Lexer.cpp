//===- Lexer.cpp - Tokens of optgen spec files ----------------------------===//
//
// Every scan is bounded by `end`, not by a terminating NUL, so the lexer is
// safe on arbitrary bytes. Errors are returned as Error tokens whose spelling
// starts where the message points.
//
//===----------------------------------------------------------------------===//

#include "optgen/Frontend/Lexer.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/Error.h"

#include <algorithm>

using namespace optgen;

static bool isIdentifierStart(char c) { return llvm::isAlpha(c) || c == '_'; }
static bool isIdentifierChar(char c) { return llvm::isAlnum(c) || c == '_'; }

/// Quotes one byte for a message: 'c' when it is printable ASCII, '\xNN'
/// otherwise, so that control bytes never reach the terminal.
static std::string quoteByte(unsigned char c) {
  if (llvm::isPrint(c))
    return std::string("'") + char(c) + "'";
  return std::string("'\\x") + llvm::hexdigit(c >> 4) + llvm::hexdigit(c & 15) +
         "'";
}

std::string optgen::quoteSource(llvm::StringRef text) {
  constexpr size_t kMaxQuoted = 40;
  if (text.size() <= kMaxQuoted)
    return ("'" + text + "'").str();
  return ("'" + text.take_front(kMaxQuoted) + "...'").str();
}

Token Lexer::makeToken(TokenKind kind, const char *start) {
  Token tok;
  tok.kind = kind;
  tok.spelling = llvm::StringRef(start, cur - start);
  return tok;
}

Token Lexer::makeError(const char *start, const char *stop,
                       std::string message) {
  Token tok;
  tok.kind = TokenKind::Error;
  tok.spelling = llvm::StringRef(start, stop - start);
  tok.text = std::move(message);
  return tok;
}

std::optional<Token> Lexer::skipTrivia() {
  while (cur != end) {
    switch (*cur) {
    case ' ':
    case '\t':
    case '\n':
    case '\r':
    case '\f':
    case '\v':
      ++cur;
      continue;
    case '/':
      if (end - cur < 2)
        return std::nullopt;
      if (cur[1] == '/') {
        // Comments may hold any bytes; only the newline ends this one.
        cur = std::find(cur + 2, end, '\n');
        continue;
      }
      if (cur[1] == '*') {
        llvm::StringRef rest(cur + 2, end - cur - 2);
        size_t close = rest.find("*/");
        if (close == llvm::StringRef::npos)
          return makeError(cur, cur + 2, "unterminated comment");
        cur = rest.data() + close + 2;
        continue;
      }
      return std::nullopt;
    default:
      return std::nullopt;
    }
  }
  return std::nullopt;
}

Token Lexer::lex() {
  if (std::optional<Token> error = skipTrivia())
    return std::move(*error);

  const char *start = cur;
  if (cur == end)
    return makeToken(TokenKind::Eof, start);

  char c = *cur++;
  if (isIdentifierStart(c))
    return lexIdentifier(start);
  // `.5` is lexed as a (malformed) number so that the message says what is
  // wrong with it.
  if (llvm::isDigit(c) || (c == '.' && cur != end && llvm::isDigit(*cur)))
    return lexNumber(start);

  // Consumes `next` if it follows, for two-character operators.
  auto follows = [&](char next) {
    if (cur == end || *cur != next)
      return false;
    ++cur;
    return true;
  };
  switch (c) {
  case '"':
    return lexString(start);
  case '(':
    return makeToken(TokenKind::LParen, start);
  case ')':
    return makeToken(TokenKind::RParen, start);
  case '[':
    return makeToken(TokenKind::LBracket, start);
  case ']':
    return makeToken(TokenKind::RBracket, start);
  case '{':
    return makeToken(TokenKind::LBrace, start);
  case '}':
    return makeToken(TokenKind::RBrace, start);
  case ',':
    return makeToken(TokenKind::Comma, start);
  case ';':
    return makeToken(TokenKind::Semicolon, start);
  case ':':
    return makeToken(TokenKind::Colon, start);
  case '?':
    return makeToken(TokenKind::Question, start);
  case '+':
    return makeToken(TokenKind::Plus, start);
  case '-':
    return makeToken(TokenKind::Minus, start);
  case '*':
    return makeToken(TokenKind::Star, start);
  case '/':
    return makeToken(TokenKind::Slash, start);
  case '%':
    return makeToken(TokenKind::Percent, start);
  case '^':
    return makeToken(TokenKind::Caret, start);
  case '@':
    return makeToken(TokenKind::At, start);
  case '=':
    return makeToken(follows('=') ? TokenKind::EqualEqual : TokenKind::Equal,
                     start);
  case '!':
    return makeToken(follows('=') ? TokenKind::BangEqual : TokenKind::Bang,
                     start);
  case '<':
    return makeToken(follows('=') ? TokenKind::LessEqual : TokenKind::Less,
                     start);
  case '>':
    return makeToken(
        follows('=') ? TokenKind::GreaterEqual : TokenKind::Greater, start);
  case '&':
    if (follows('&'))
      return makeToken(TokenKind::AmpAmp, start);
    return makeError(start, cur,
                     "unexpected character '&' (did you mean '&&'?)");
  case '|':
    if (follows('|'))
      return makeToken(TokenKind::PipePipe, start);
    return makeError(start, cur,
                     "unexpected character '|' (did you mean '||'?)");
  default:
    return makeError(start, cur, "unexpected character " + quoteByte(c));
  }
}

Token Lexer::lexIdentifier(const char *start) {
  while (cur != end && isIdentifierChar(*cur))
    ++cur;
  TokenKind kind =
      llvm::StringSwitch<TokenKind>(llvm::StringRef(start, cur - start))
          .Case("optimizer", TokenKind::KwOptimizer)
          .Case("const", TokenKind::KwConst)
          .Case("rule", TokenKind::KwRule)
          .Case("hyper", TokenKind::KwHyper)
          .Case("state", TokenKind::KwState)
          .Case("let", TokenKind::KwLet)
          .Case("if", TokenKind::KwIf)
          .Case("else", TokenKind::KwElse)
          .Case("for", TokenKind::KwFor)
          .Case("in", TokenKind::KwIn)
          .Case("group", TokenKind::KwGroup)
          .Case("match", TokenKind::KwMatch)
          .Case("where", TokenKind::KwWhere)
          .Case("distribute", TokenKind::KwDistribute)
          .Case("on_nonfinite", TokenKind::KwOnNonFinite)
          .Case("global", TokenKind::KwGlobal)
          .Case("fn", TokenKind::KwFn)
          .Case("return", TokenKind::KwReturn)
          .Default(TokenKind::Identifier);
  return makeToken(kind, start);
}

Token Lexer::lexNumber(const char *start) {
  // Take the longest run that could be meant as part of the number, so that
  // `12abc`, `1.2.3` or `1e+` is one malformed number instead of a number
  // followed by a confusing second token.
  const char *stop = start;
  while (stop != end && (isIdentifierChar(*stop) || *stop == '.' ||
                         ((*stop == '+' || *stop == '-') &&
                          (stop[-1] == 'e' || stop[-1] == 'E'))))
    ++stop;
  cur = stop;
  llvm::StringRef text(start, stop - start);

  // The run must be exactly digits ('.' digits)? ([eE] [+-]? digits)?.
  const char *p = start;
  auto skipDigits = [&] {
    const char *first = p;
    while (p != stop && llvm::isDigit(*p))
      ++p;
    return p != first;
  };
  bool wellFormed = skipDigits();
  bool isInteger = true;
  if (wellFormed && p != stop && *p == '.') {
    ++p;
    isInteger = false;
    wellFormed = skipDigits();
  }
  if (wellFormed && p != stop && (*p == 'e' || *p == 'E')) {
    ++p;
    isInteger = false;
    if (p != stop && (*p == '+' || *p == '-'))
      ++p;
    wellFormed = skipDigits();
  }
  if (!wellFormed || p != stop)
    return makeError(start, stop, "malformed number " + quoteSource(text));

  // APFloat, unlike strtod, reports overflow in its result and ignores the C
  // locale. The syntax was checked above, so only overflow is left to report;
  // underflow rounds towards zero as in C.
  llvm::APFloat value(llvm::APFloat::IEEEdouble());
  llvm::APFloat::opStatus status = llvm::cantFail(
      value.convertFromString(text, llvm::APFloat::rmNearestTiesToEven),
      "number syntax was checked before conversion");
  if (status & llvm::APFloat::opOverflow)
    return makeError(start, stop, "number out of range " + quoteSource(text));

  Token tok = makeToken(TokenKind::Number, start);
  tok.number = value.convertToDouble();
  tok.isInteger = isInteger;
  return tok;
}

Token Lexer::lexString(const char *start) {
  // Find the closing quote before decoding, so that an unterminated string is
  // reported as such whatever it contains.
  const char *close = cur;
  while (true) {
    if (close == end || *close == '\n' || *close == '\r')
      return makeError(start, start + 1, "unterminated string");
    if (*close == '"')
      break;
    // An escaped character never closes the string, but a newline still
    // ends the line (and so the string) after a backslash.
    if (*close == '\\' && close + 1 != end && close[1] != '\n' &&
        close[1] != '\r')
      ++close;
    ++close;
  }

  std::string value;
  for (const char *p = cur; p != close;) {
    unsigned char c = *p;
    if (c == '\\') {
      // The scan above guarantees an escaped character before `close`.
      unsigned char escaped = p[1];
      switch (escaped) {
      case '\\':
      case '"':
        value += char(escaped);
        break;
      case 'n':
        value += '\n';
        break;
      case 't':
        value += '\t';
        break;
      default: {
        std::string shown = llvm::isPrint(escaped)
                                ? std::string("'\\") + char(escaped) + "'"
                                : "'\\' followed by " + quoteByte(escaped);
        return makeError(p, p + 2,
                         "unknown escape sequence " + shown +
                             " (expected \\\\, \\\", \\n or \\t)");
      }
      }
      p += 2;
      continue;
    }
    // Raw control bytes other than tab are almost surely corruption, and
    // rejecting them keeps NUL (which no escape produces) out of the value.
    if ((c < 0x20 && c != '\t') || c == 0x7f)
      return makeError(p, p + 1,
                       "control character " + quoteByte(c) + " in string");
    if (c < 0x80) {
      value += char(c);
      ++p;
      continue;
    }
    auto *bytes = reinterpret_cast<const llvm::UTF8 *>(p);
    if (!llvm::isLegalUTF8Sequence(bytes,
                                   reinterpret_cast<const llvm::UTF8 *>(close)))
      return makeError(p, p + 1, "invalid UTF-8 in string");
    unsigned length = llvm::getNumBytesForUTF8(c);
    value.append(p, length);
    p += length;
  }

  cur = close + 1;
  Token tok = makeToken(TokenKind::String, start);
  tok.text = std::move(value);
  return tok;
}
