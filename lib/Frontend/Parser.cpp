//===- Parser.cpp - Parser of optgen spec files ---------------------------===//
//
// Recursive descent with one function per grammar rule; each function's
// comment gives its rule. Two limits keep hostile input from exhausting the
// stack:
//  - `blockDepth` and `exprDepth` count the open constructs that make this
//    parser recurse (blocks; brackets, calls, unary operators, '^'
//    exponents, '?:' branches, tuple types), which bounds its recursion even
//    where no tree node is built, e.g. for redundant parentheses;
//  - every parsed expression carries the height of its tree, which bounds
//    the recursion of the destructors and of the passes that walk the tree;
//    a left-associative chain such as `a + b + c + ...` deepens the tree
//    without recursing here.
// Source ranges are half-open, [first character, one past the last), as
// llvm::SourceMgr expects.
//
//===----------------------------------------------------------------------===//

#include "optgen/Frontend/Parser.h"
#include "optgen/Frontend/Lexer.h"

#include <algorithm>
#include <initializer_list>

using namespace optgen;
using llvm::SMLoc;
using llvm::SMRange;
using llvm::StringRef;
using llvm::Twine;

namespace {

/// An expression together with the height of its tree (a leaf has height 1).
struct Parsed {
  ast::ExprPtr expr;
  unsigned height = 0;
  explicit operator bool() const { return expr != nullptr; }
};

/// What Parser::error returns: it converts to `false` and to an empty result,
/// so that a parse function of any result type can `return error(...)`.
struct Failure {
  operator bool() const { return false; }
  operator Parsed() const { return {}; }
  template <typename T> operator std::unique_ptr<T>() const { return nullptr; }
};

/// Holds one level of a nesting counter for as long as it lives.
class NestingScope {
public:
  explicit NestingScope(unsigned &depth) : counter(depth) { ++counter; }
  ~NestingScope() { --counter; }
  NestingScope(const NestingScope &) = delete;
  NestingScope &operator=(const NestingScope &) = delete;
  bool tooDeep() const { return counter > kMaxNestingDepth; }

private:
  unsigned &counter;
};

/// Binary operators by precedence level, loosest first; parseBinary climbs
/// these levels.
enum class Level { Or, And, Compare, Add, Mul, Unary };

class Parser {
public:
  Parser(llvm::SourceMgr &sourceMgr, unsigned bufferId,
         const SyntaxErrorFn &onError)
      : sourceMgr(sourceMgr), bufferId(bufferId), onError(onError),
        lexer(sourceMgr.getMemoryBuffer(bufferId)->getBuffer()) {}

  std::unique_ptr<ast::Module> parseModule();

private:
  // Tokens.
  void consume();
  bool consumeIf(TokenKind kind);

  // Errors.
  Failure error(SMLoc loc, const Twine &message);
  Failure errorExpected(const Twine &what);
  Failure errorTooDeep(SMLoc loc, StringRef what);
  Failure errorUnmatched();
  bool expectClosing(TokenKind close, SMLoc open, StringRef alternative);
  std::string lineCol(SMLoc loc) const;

  // Declarations and statements.
  std::unique_ptr<ast::Decl> parseDecl();
  std::unique_ptr<ast::Decl> parseConst();
  std::unique_ptr<ast::Decl> parseRule();
  std::unique_ptr<ast::Decl> parseFunction();
  std::unique_ptr<ast::Decl> parseGroup();
  std::unique_ptr<ast::Decl> parseDistribute();
  std::unique_ptr<ast::Decl> parseOnNonFinite();
  std::unique_ptr<ast::Decl> parseGlobal();
  bool parseSetting(ast::GroupDecl::Setting &setting);
  bool parseType(ast::TypeAnnotation &type);
  bool parseBlock(ast::Block &block, StringRef what);
  ast::StmtPtr parseStmt();
  ast::StmtPtr parseBindings();
  bool parseBinding(ast::Binding &binding, StringRef keyword);
  ast::StmtPtr parseAssign();
  ast::StmtPtr parseIf();
  ast::StmtPtr parseFor();
  ast::StmtPtr parseReturn();
  bool parseIdentifier(std::string &name, SMRange &range, const Twine &what);

  // Expressions.
  Parsed parseExpr();
  Parsed parseBinary(Level level);
  Parsed parseUnary();
  Parsed parsePower();
  Parsed parseSubscript(Parsed base, SMLoc start);
  Parsed parsePrimary();
  Parsed parseNameOrCall();
  Parsed parseParenthesized();
  Parsed parseList();
  bool parseElements(std::vector<ast::ExprPtr> &elements, unsigned &height,
                     TokenKind close, SMLoc open);
  Parsed makeNode(ast::ExprPtr node, std::initializer_list<unsigned> children,
                  SMLoc loc);

  llvm::SourceMgr &sourceMgr;
  unsigned bufferId;
  const SyntaxErrorFn &onError;
  Lexer lexer;
  Token tok;
  /// End of the last consumed token: where the construct just parsed ends.
  SMLoc prevEnd;
  /// Open nesting constructs: blocks, and expressions or types.
  unsigned blockDepth = 0;
  unsigned exprDepth = 0;
  bool failed = false;
};

} // namespace

/// The binary operator a token spells, with its precedence level.
static std::optional<std::pair<ast::BinaryOp, Level>>
binaryOperator(TokenKind kind) {
  using ast::BinaryOp;
  switch (kind) {
  case TokenKind::PipePipe:
    return {{BinaryOp::Or, Level::Or}};
  case TokenKind::AmpAmp:
    return {{BinaryOp::And, Level::And}};
  case TokenKind::Less:
    return {{BinaryOp::Lt, Level::Compare}};
  case TokenKind::LessEqual:
    return {{BinaryOp::Le, Level::Compare}};
  case TokenKind::Greater:
    return {{BinaryOp::Gt, Level::Compare}};
  case TokenKind::GreaterEqual:
    return {{BinaryOp::Ge, Level::Compare}};
  case TokenKind::EqualEqual:
    return {{BinaryOp::Eq, Level::Compare}};
  case TokenKind::BangEqual:
    return {{BinaryOp::Ne, Level::Compare}};
  case TokenKind::Plus:
    return {{BinaryOp::Add, Level::Add}};
  case TokenKind::Minus:
    return {{BinaryOp::Sub, Level::Add}};
  case TokenKind::Star:
    return {{BinaryOp::Mul, Level::Mul}};
  case TokenKind::Slash:
    return {{BinaryOp::Div, Level::Mul}};
  case TokenKind::Percent:
    return {{BinaryOp::Mod, Level::Mul}};
  case TokenKind::At:
    return {{BinaryOp::MatMul, Level::Mul}};
  default:
    return std::nullopt;
  }
}

/// Describes a token for "found ..." in a message.
static std::string describe(const Token &tok) {
  switch (tok.kind) {
  case TokenKind::Eof:
    return "end of file";
  case TokenKind::String:
    return "a string";
  default:
    if (isKeyword(tok.kind))
      return "keyword " + quoteSource(tok.spelling);
    return quoteSource(tok.spelling);
  }
}

/// The spelling of a closing bracket token, for messages.
static StringRef closingSpelling(TokenKind kind) {
  switch (kind) {
  case TokenKind::RParen:
    return ")";
  case TokenKind::RBracket:
    return "]";
  default:
    return "}";
  }
}

//===----------------------------------------------------------------------===//
// Tokens and errors
//===----------------------------------------------------------------------===//

void Parser::consume() {
  // An Error token has been reported and ends the parse; stay on it so that
  // every caller still waiting for a token fails too.
  if (tok.is(TokenKind::Error))
    return;
  prevEnd = tok.getEndLoc();
  tok = lexer.lex();
  if (tok.is(TokenKind::Error))
    error(tok.getLoc(), tok.text);
}

bool Parser::consumeIf(TokenKind kind) {
  if (!tok.is(kind))
    return false;
  consume();
  return true;
}

Failure Parser::error(SMLoc loc, const Twine &message) {
  // Only the first error is reported; anything after it is an echo.
  if (!failed) {
    failed = true;
    onError(loc, message);
  }
  return {};
}

Failure Parser::errorExpected(const Twine &what) {
  // Something missing at the end of the file is reported right after the
  // last token, where it is missing, rather than past any trailing lines.
  SMLoc loc = tok.getLoc();
  if (tok.is(TokenKind::Eof) && prevEnd.isValid())
    loc = prevEnd;
  return error(loc, "expected " + what + ", found " + describe(tok));
}

Failure Parser::errorTooDeep(SMLoc loc, StringRef what) {
  return error(loc, what + " nested too deeply (the limit is " +
                        Twine(kMaxNestingDepth) + ")");
}

Failure Parser::errorUnmatched() {
  StringRef opening = tok.is(TokenKind::RParen)     ? "("
                      : tok.is(TokenKind::RBracket) ? "["
                                                    : "{";
  return error(tok.getLoc(), "unexpected " + quoteSource(tok.spelling) +
                                 " with no matching '" + opening + "'");
}

/// Consumes the `close` bracket matching the one at `open`. `alternative` is
/// the other token the caller accepts there (',' or ':'), if any, so that
/// the message names everything that may come next.
bool Parser::expectClosing(TokenKind close, SMLoc open, StringRef alternative) {
  if (consumeIf(close))
    return true;
  std::string expected = "'" + closingSpelling(close).str() + "'";
  if (!alternative.empty())
    expected = "'" + alternative.str() + "' or " + expected;
  return errorExpected(expected + " to close the '" +
                       StringRef(open.getPointer(), 1) + "' at " +
                       lineCol(open));
}

std::string Parser::lineCol(SMLoc loc) const {
  auto [line, col] = sourceMgr.getLineAndColumn(loc, bufferId);
  return (Twine(line) + ":" + Twine(col)).str();
}

/// Parses an identifier; `what` names it in the error message.
bool Parser::parseIdentifier(std::string &name, SMRange &range,
                             const Twine &what) {
  if (!tok.is(TokenKind::Identifier))
    return errorExpected(what);
  name = tok.spelling.str();
  range = tok.getRange();
  consume();
  return true;
}

//===----------------------------------------------------------------------===//
// Declarations
//===----------------------------------------------------------------------===//

/// spec := 'optimizer' IDENT decl* EOF
std::unique_ptr<ast::Module> Parser::parseModule() {
  tok = lexer.lex();
  if (tok.is(TokenKind::Error))
    return error(tok.getLoc(), tok.text);
  if (!tok.is(TokenKind::KwOptimizer))
    return errorExpected("'optimizer NAME' at the start of a spec");
  consume();
  std::string name;
  SMRange nameRange;
  if (!parseIdentifier(name, nameRange,
                       "the optimizer's name after 'optimizer'"))
    return nullptr;
  consumeIf(TokenKind::Semicolon);

  std::vector<ast::DeclPtr> decls;
  while (!tok.is(TokenKind::Eof)) {
    ast::DeclPtr decl = parseDecl();
    if (!decl)
      return nullptr;
    decls.push_back(std::move(decl));
    consumeIf(TokenKind::Semicolon);
  }
  return std::make_unique<ast::Module>(std::move(name), nameRange,
                                       std::move(decls));
}

/// decl := const | rule | fn | global | group | distribute | on_nonfinite
std::unique_ptr<ast::Decl> Parser::parseDecl() {
  switch (tok.kind) {
  case TokenKind::KwConst:
    return parseConst();
  case TokenKind::KwRule:
    return parseRule();
  case TokenKind::KwFn:
    return parseFunction();
  case TokenKind::KwGroup:
    return parseGroup();
  case TokenKind::KwDistribute:
    return parseDistribute();
  case TokenKind::KwOnNonFinite:
    return parseOnNonFinite();
  case TokenKind::KwGlobal:
    return parseGlobal();
  case TokenKind::RParen:
  case TokenKind::RBracket:
  case TokenKind::RBrace:
    return errorUnmatched();
  default:
    return errorExpected(
        "a declaration (const, rule, fn, global, group, distribute or "
        "on_nonfinite)");
  }
}

/// const := 'const' IDENT '=' expr
std::unique_ptr<ast::Decl> Parser::parseConst() {
  SMLoc start = tok.getLoc();
  consume();
  std::string name;
  SMRange nameRange;
  if (!parseIdentifier(name, nameRange, "a name after 'const'"))
    return nullptr;
  if (!consumeIf(TokenKind::Equal))
    return errorExpected("'=' after 'const " + name + "'");
  Parsed value = parseExpr();
  if (!value)
    return nullptr;
  return std::make_unique<ast::ConstDecl>(SMRange(start, prevEnd),
                                          std::move(name), nameRange,
                                          std::move(value.expr));
}

/// rule  := 'rule' IDENT '(' input (',' input)* ')' block
/// input := IDENT (':' type)?
std::unique_ptr<ast::Decl> Parser::parseRule() {
  SMLoc start = tok.getLoc();
  consume();
  std::string name;
  SMRange nameRange;
  if (!parseIdentifier(name, nameRange, "a rule name after 'rule'"))
    return nullptr;
  SMLoc open = tok.getLoc();
  if (!consumeIf(TokenKind::LParen))
    return errorExpected("'(' and the inputs of rule " + quoteSource(name));

  std::vector<ast::RuleDecl::Input> inputs;
  do {
    ast::RuleDecl::Input input;
    if (!parseIdentifier(input.name, input.range, "an input name"))
      return nullptr;
    if (consumeIf(TokenKind::Colon)) {
      ast::TypeAnnotation type;
      if (!parseType(type))
        return nullptr;
      input.type = std::move(type);
    }
    inputs.push_back(std::move(input));
  } while (consumeIf(TokenKind::Comma));
  if (!expectClosing(TokenKind::RParen, open, ","))
    return nullptr;

  ast::Block body;
  if (!parseBlock(body, "the rule body"))
    return nullptr;
  return std::make_unique<ast::RuleDecl>(SMRange(start, prevEnd),
                                         std::move(name), nameRange,
                                         std::move(inputs), std::move(body));
}

/// fn := 'fn' IDENT '(' (IDENT (',' IDENT)*)? ')' block
std::unique_ptr<ast::Decl> Parser::parseFunction() {
  SMLoc start = tok.getLoc();
  consume();
  std::string name;
  SMRange nameRange;
  if (!parseIdentifier(name, nameRange, "a function name after 'fn'"))
    return nullptr;
  SMLoc open = tok.getLoc();
  if (!consumeIf(TokenKind::LParen))
    return errorExpected("'(' and the arguments of function " +
                         quoteSource(name));
  std::vector<ast::FunctionDecl::Param> params;
  while (!tok.is(TokenKind::RParen)) {
    params.emplace_back();
    if (!parseIdentifier(params.back().name, params.back().range,
                         "an argument name"))
      return nullptr;
    if (tok.is(TokenKind::Colon))
      return error(tok.getLoc(),
                   "a function's arguments take the types of the values "
                   "passed in; they have no annotation");
    if (!consumeIf(TokenKind::Comma))
      break;
  }
  if (!expectClosing(TokenKind::RParen, open, ","))
    return nullptr;
  ast::Block body;
  if (!parseBlock(body, "the function body"))
    return nullptr;
  return std::make_unique<ast::FunctionDecl>(SMRange(start, prevEnd),
                                             std::move(name), nameRange,
                                             std::move(params), std::move(body));
}

/// global := 'global' IDENT '(' IDENT ',' IDENT ')' '=' expr
std::unique_ptr<ast::Decl> Parser::parseGlobal() {
  SMLoc start = tok.getLoc();
  consume();
  std::string name;
  SMRange nameRange;
  if (!parseIdentifier(name, nameRange, "a name after 'global'"))
    return nullptr;
  SMLoc open = tok.getLoc();
  if (!consumeIf(TokenKind::LParen))
    return errorExpected("'(' and the inputs of global " + quoteSource(name) +
                         ", as a rule names them: global " + name +
                         "(p, g) = ...");
  std::vector<ast::GlobalDecl::Input> inputs;
  do {
    inputs.emplace_back();
    if (!parseIdentifier(inputs.back().name, inputs.back().range,
                         "an input name"))
      return nullptr;
    if (tok.is(TokenKind::Colon))
      return error(tok.getLoc(),
                   "a global's inputs are every parameter and its gradient, "
                   "of any shape; they have no annotation");
  } while (consumeIf(TokenKind::Comma));
  if (!expectClosing(TokenKind::RParen, open, ","))
    return nullptr;
  if (!consumeIf(TokenKind::Equal))
    return errorExpected("'=' and the global's value after 'global " + name +
                         "(...)'");
  Parsed value = parseExpr();
  if (!value)
    return nullptr;
  return std::make_unique<ast::GlobalDecl>(SMRange(start, prevEnd),
                                           std::move(name), nameRange,
                                           std::move(inputs),
                                           std::move(value.expr));
}

/// group      := 'group' IDENT '=' IDENT '{' group_item* '}'
/// group_item := 'match' STRING (',' STRING)* | 'where' expr | setting
std::unique_ptr<ast::Decl> Parser::parseGroup() {
  SMLoc start = tok.getLoc();
  consume();
  std::string name, rule;
  SMRange nameRange, ruleRange;
  if (!parseIdentifier(name, nameRange, "a group name after 'group'"))
    return nullptr;
  if (!consumeIf(TokenKind::Equal))
    return errorExpected("'=' and a rule name after 'group " + name + "'");
  if (!parseIdentifier(rule, ruleRange,
                       "a rule name after 'group " + name + " ='"))
    return nullptr;
  SMLoc open = tok.getLoc();
  if (!consumeIf(TokenKind::LBrace))
    return errorExpected("'{' to start the body of group " + quoteSource(name));

  std::vector<std::unique_ptr<ast::StringExpr>> patterns;
  std::vector<ast::ExprPtr> predicates;
  std::vector<ast::GroupDecl::Setting> settings;
  while (!consumeIf(TokenKind::RBrace)) {
    switch (tok.kind) {
    case TokenKind::Eof:
      return errorExpected("'}' to close the body of group " +
                           quoteSource(name) + " at " + lineCol(open));
    case TokenKind::KwMatch:
      consume();
      do {
        if (!tok.is(TokenKind::String))
          return errorExpected("a quoted name pattern after 'match'");
        patterns.push_back(
            std::make_unique<ast::StringExpr>(tok.getRange(), tok.text));
        consume();
      } while (consumeIf(TokenKind::Comma));
      break;
    case TokenKind::KwWhere: {
      consume();
      Parsed predicate = parseExpr();
      if (!predicate)
        return nullptr;
      predicates.push_back(std::move(predicate.expr));
      break;
    }
    case TokenKind::Identifier:
      settings.emplace_back();
      if (!parseSetting(settings.back()))
        return nullptr;
      break;
    default:
      return errorExpected("a group item (match, where or NAME = EXPR)");
    }
    consumeIf(TokenKind::Semicolon);
  }
  return std::make_unique<ast::GroupDecl>(
      SMRange(start, prevEnd), std::move(name), nameRange, std::move(rule),
      ruleRange, std::move(patterns), std::move(predicates),
      std::move(settings));
}

/// distribute := 'distribute' IDENT ('{' setting* '}')?
std::unique_ptr<ast::Decl> Parser::parseDistribute() {
  SMLoc start = tok.getLoc();
  consume();
  std::string strategy;
  SMRange strategyRange;
  if (!parseIdentifier(strategy, strategyRange,
                       "a strategy name after 'distribute'"))
    return nullptr;

  std::vector<ast::GroupDecl::Setting> settings;
  SMLoc open = tok.getLoc();
  if (consumeIf(TokenKind::LBrace)) {
    while (!consumeIf(TokenKind::RBrace)) {
      if (tok.is(TokenKind::Eof))
        return errorExpected("'}' to close the settings of 'distribute' at " +
                             lineCol(open));
      if (!tok.is(TokenKind::Identifier))
        return errorExpected("a setting (NAME = EXPR)");
      settings.emplace_back();
      if (!parseSetting(settings.back()))
        return nullptr;
      consumeIf(TokenKind::Semicolon);
    }
  }
  return std::make_unique<ast::DistributeDecl>(
      SMRange(start, prevEnd), std::move(strategy), strategyRange,
      std::move(settings));
}

/// on_nonfinite := 'on_nonfinite' IDENT
std::unique_ptr<ast::Decl> Parser::parseOnNonFinite() {
  SMLoc start = tok.getLoc();
  consume();
  std::string policy;
  SMRange policyRange;
  if (!parseIdentifier(policy, policyRange,
                       "a policy after 'on_nonfinite' (propagate or skip)"))
    return nullptr;
  return std::make_unique<ast::OnNonFiniteDecl>(SMRange(start, prevEnd),
                                                std::move(policy), policyRange);
}

/// setting := IDENT '=' expr
bool Parser::parseSetting(ast::GroupDecl::Setting &setting) {
  if (!parseIdentifier(setting.name, setting.nameRange, "a setting name"))
    return false;
  if (!consumeIf(TokenKind::Equal))
    return errorExpected("'=' after " + quoteSource(setting.name));
  Parsed value = parseExpr();
  if (!value)
    return false;
  setting.value = std::move(value.expr);
  return true;
}

/// type := IDENT | '(' type (',' type)* ')'
bool Parser::parseType(ast::TypeAnnotation &type) {
  SMLoc start = tok.getLoc();
  if (tok.is(TokenKind::Identifier)) {
    type.name = tok.spelling.str();
    consume();
    type.range = SMRange(start, prevEnd);
    return true;
  }
  if (!tok.is(TokenKind::LParen))
    return errorExpected("a type");

  NestingScope nesting(exprDepth);
  if (nesting.tooDeep())
    return errorTooDeep(start, "type");
  consume();
  do {
    type.elements.emplace_back();
    if (!parseType(type.elements.back()))
      return false;
  } while (consumeIf(TokenKind::Comma));
  if (!expectClosing(TokenKind::RParen, start, ","))
    return false;
  type.range = SMRange(start, prevEnd);
  return true;
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

/// block := '{' stmt* '}'; `what` names the block in error messages.
bool Parser::parseBlock(ast::Block &block, StringRef what) {
  SMLoc open = tok.getLoc();
  NestingScope nesting(blockDepth);
  if (nesting.tooDeep())
    return errorTooDeep(open, "block");
  if (!consumeIf(TokenKind::LBrace))
    return errorExpected("'{' to start " + what);
  while (!consumeIf(TokenKind::RBrace)) {
    if (tok.is(TokenKind::Eof))
      return errorExpected("'}' to close " + what + " at " + lineCol(open));
    ast::StmtPtr stmt = parseStmt();
    if (!stmt)
      return false;
    block.push_back(std::move(stmt));
    consumeIf(TokenKind::Semicolon);
  }
  return true;
}

/// stmt := hyper | state | let | assignment | if | for
ast::StmtPtr Parser::parseStmt() {
  switch (tok.kind) {
  case TokenKind::KwHyper:
  case TokenKind::KwState:
  case TokenKind::KwLet:
    return parseBindings();
  case TokenKind::KwIf:
    return parseIf();
  case TokenKind::KwFor:
    return parseFor();
  case TokenKind::KwReturn:
    return parseReturn();
  case TokenKind::Identifier:
    return parseAssign();
  case TokenKind::RParen:
  case TokenKind::RBracket:
    return errorUnmatched();
  case TokenKind::LBrace:
    return error(tok.getLoc(),
                 "unexpected '{': a block may only follow a rule header, "
                 "'if', 'else' or a 'for' header");
  default:
    return errorExpected(
        "a statement (hyper, state, let, if, for, return or NAME = EXPR)");
  }
}

/// hyper := 'hyper' binding (',' binding)*
/// state := 'state' binding (',' binding)*    -- every init required
/// let   := 'let' binding                     -- init required
ast::StmtPtr Parser::parseBindings() {
  SMLoc start = tok.getLoc();
  TokenKind kind = tok.kind;
  StringRef keyword = tok.spelling;
  consume();

  std::vector<ast::Binding> items;
  do {
    items.emplace_back();
    ast::Binding &binding = items.back();
    if (!parseBinding(binding, keyword))
      return nullptr;
    if (binding.init || kind == TokenKind::KwHyper)
      continue;
    if (kind == TokenKind::KwState)
      return error(binding.nameRange.Start,
                   "state " + quoteSource(binding.name) +
                       " needs an initial value, e.g. zeros_like(p)");
    return error(binding.nameRange.Start, "let " + quoteSource(binding.name) +
                                              " needs a value, e.g. let " +
                                              binding.name + " = g * g");
  } while (kind != TokenKind::KwLet && consumeIf(TokenKind::Comma));

  SMRange range(start, prevEnd);
  if (kind == TokenKind::KwHyper)
    return std::make_unique<ast::HyperStmt>(range, std::move(items));
  if (kind == TokenKind::KwState)
    return std::make_unique<ast::StateStmt>(range, std::move(items));
  return std::make_unique<ast::LetStmt>(range, std::move(items.front()));
}

/// binding := IDENT (':' type)? ('=' expr)?
bool Parser::parseBinding(ast::Binding &binding, StringRef keyword) {
  if (!parseIdentifier(binding.name, binding.nameRange,
                       "a name after '" + keyword + "'"))
    return false;
  if (consumeIf(TokenKind::Colon)) {
    ast::TypeAnnotation type;
    if (!parseType(type))
      return false;
    binding.type = std::move(type);
  }
  if (!consumeIf(TokenKind::Equal))
    return true;
  Parsed init = parseExpr();
  if (!init)
    return false;
  binding.init = std::move(init.expr);
  return true;
}

/// assignment := IDENT '=' expr
ast::StmtPtr Parser::parseAssign() {
  SMLoc start = tok.getLoc();
  std::string target;
  SMRange targetRange;
  if (!parseIdentifier(target, targetRange, "a statement"))
    return nullptr;
  if (!consumeIf(TokenKind::Equal))
    return errorExpected("'=' after " + quoteSource(target));
  Parsed value = parseExpr();
  if (!value)
    return nullptr;
  return std::make_unique<ast::AssignStmt>(SMRange(start, prevEnd),
                                           std::move(target), targetRange,
                                           std::move(value.expr));
}

/// if := 'if' expr block ('else' (if | block))?
ast::StmtPtr Parser::parseIf() {
  SMLoc start = tok.getLoc();
  consume();
  Parsed cond = parseExpr();
  if (!cond)
    return nullptr;
  ast::Block thenBlock, elseBlock;
  if (!parseBlock(thenBlock, "the 'if' body"))
    return nullptr;

  if (consumeIf(TokenKind::KwElse)) {
    if (tok.is(TokenKind::KwIf)) {
      // `else if` nests the IfStmt in the else block, so it counts as a
      // level of block nesting; that also bounds the recursion of a long
      // else-if chain.
      NestingScope nesting(blockDepth);
      if (nesting.tooDeep())
        return errorTooDeep(tok.getLoc(), "block");
      ast::StmtPtr elseIf = parseIf();
      if (!elseIf)
        return nullptr;
      elseBlock.push_back(std::move(elseIf));
    } else if (!tok.is(TokenKind::LBrace)) {
      return errorExpected("'if' or '{' after 'else'");
    } else if (!parseBlock(elseBlock, "the 'else' body")) {
      return nullptr;
    }
  }
  return std::make_unique<ast::IfStmt>(
      SMRange(start, prevEnd), std::move(cond.expr), std::move(thenBlock),
      std::move(elseBlock));
}

/// return := 'return' expr
ast::StmtPtr Parser::parseReturn() {
  SMLoc start = tok.getLoc();
  consume();
  Parsed value = parseExpr();
  if (!value)
    return nullptr;
  return std::make_unique<ast::ReturnStmt>(SMRange(start, prevEnd),
                                           std::move(value.expr));
}

/// for := 'for' (IDENT | '(' IDENT (',' IDENT)* ')') 'in' expr block
ast::StmtPtr Parser::parseFor() {
  SMLoc start = tok.getLoc();
  consume();
  std::vector<ast::ForStmt::Var> vars;
  bool destructures = tok.is(TokenKind::LParen);
  if (destructures) {
    SMLoc open = tok.getLoc();
    consume();
    do {
      vars.emplace_back();
      if (!parseIdentifier(vars.back().name, vars.back().range,
                           "a loop variable"))
        return nullptr;
    } while (consumeIf(TokenKind::Comma));
    if (!expectClosing(TokenKind::RParen, open, ","))
      return nullptr;
  } else {
    vars.emplace_back();
    if (!parseIdentifier(vars.back().name, vars.back().range,
                         "a loop variable or '(' after 'for'"))
      return nullptr;
  }
  if (!consumeIf(TokenKind::KwIn))
    return errorExpected("'in' after the loop variables");
  Parsed iterable = parseExpr();
  if (!iterable)
    return nullptr;
  ast::Block body;
  if (!parseBlock(body, "the 'for' body"))
    return nullptr;
  return std::make_unique<ast::ForStmt>(
      SMRange(start, prevEnd), std::move(vars), destructures,
      std::move(iterable.expr), std::move(body));
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

/// Finishes a new node whose children have the given heights, refusing to
/// build a tree deeper than the limit; `loc` is where the error points.
Parsed Parser::makeNode(ast::ExprPtr node,
                        std::initializer_list<unsigned> children, SMLoc loc) {
  unsigned height = 1 + std::max(children);
  if (height > kMaxNestingDepth)
    return errorTooDeep(loc, "expression");
  return {std::move(node), height};
}

/// expr := or ('?' expr ':' expr)?
Parsed Parser::parseExpr() {
  SMLoc start = tok.getLoc();
  Parsed cond = parseBinary(Level::Or);
  if (!cond || !tok.is(TokenKind::Question))
    return cond;

  SMLoc question = tok.getLoc();
  NestingScope nesting(exprDepth);
  if (nesting.tooDeep())
    return errorTooDeep(question, "expression");
  consume();
  Parsed thenExpr = parseExpr();
  if (!thenExpr)
    return {};
  if (!consumeIf(TokenKind::Colon))
    return errorExpected("':' to go with the '?' at " + lineCol(question));
  Parsed elseExpr = parseExpr();
  if (!elseExpr)
    return {};
  return makeNode(std::make_unique<ast::TernaryExpr>(
                      SMRange(start, prevEnd), std::move(cond.expr),
                      std::move(thenExpr.expr), std::move(elseExpr.expr)),
                  {cond.height, thenExpr.height, elseExpr.height}, question);
}

/// or  := and ('||' and)*
/// and := cmp ('&&' cmp)*
/// cmp := add (('<'|'<='|'>'|'>='|'=='|'!=') add)?
/// add := mul (('+'|'-') mul)*
/// mul := unary (('*'|'/'|'%'|'@') unary)*
Parsed Parser::parseBinary(Level level) {
  if (level == Level::Unary)
    return parseUnary();
  auto next = Level(int(level) + 1);
  SMLoc start = tok.getLoc();
  Parsed lhs = parseBinary(next);
  while (lhs) {
    auto op = binaryOperator(tok.kind);
    if (!op || op->second != level)
      break;
    SMLoc opLoc = tok.getLoc();
    consume();
    Parsed rhs = parseBinary(next);
    if (!rhs)
      return {};
    lhs = makeNode(std::make_unique<ast::BinaryExpr>(
                       SMRange(start, prevEnd), op->first, opLoc,
                       std::move(lhs.expr), std::move(rhs.expr)),
                   {lhs.height, rhs.height}, opLoc);
    // `a < b < c` reads like a range test but would compare a boolean.
    if (lhs && level == Level::Compare) {
      auto again = binaryOperator(tok.kind);
      if (again && again->second == Level::Compare)
        return error(tok.getLoc(), "comparisons do not chain; use &&");
    }
  }
  return lhs;
}

/// unary := '-' unary | '!' unary | power
Parsed Parser::parseUnary() {
  if (!tok.is(TokenKind::Minus) && !tok.is(TokenKind::Bang))
    return parsePower();
  SMLoc start = tok.getLoc();
  NestingScope nesting(exprDepth);
  if (nesting.tooDeep())
    return errorTooDeep(start, "expression");
  ast::UnaryOp op =
      tok.is(TokenKind::Minus) ? ast::UnaryOp::Neg : ast::UnaryOp::Not;
  consume();
  Parsed operand = parseUnary();
  if (!operand)
    return {};
  return makeNode(std::make_unique<ast::UnaryExpr>(SMRange(start, prevEnd), op,
                                                   std::move(operand.expr)),
                  {operand.height}, start);
}

/// power   := postfix ('^' unary)?
/// postfix := primary ('[' slice_or_index ']' | '^' 'T')*
Parsed Parser::parsePower() {
  SMLoc start = tok.getLoc();
  Parsed base = parsePrimary();
  while (base) {
    if (tok.is(TokenKind::LBracket)) {
      base = parseSubscript(std::move(base), start);
      continue;
    }
    if (!tok.is(TokenKind::Caret))
      break;
    SMLoc caret = tok.getLoc();
    consume();
    // `^` before the name T is always a transpose, never a power.
    if (tok.is(TokenKind::Identifier) && tok.spelling == "T") {
      consume();
      base = makeNode(std::make_unique<ast::TransposeExpr>(
                          SMRange(start, prevEnd), std::move(base.expr)),
                      {base.height}, caret);
      continue;
    }
    NestingScope nesting(exprDepth);
    if (nesting.tooDeep())
      return errorTooDeep(caret, "expression");
    Parsed exponent = parseUnary();
    if (!exponent)
      return {};
    return makeNode(std::make_unique<ast::BinaryExpr>(
                        SMRange(start, prevEnd), ast::BinaryOp::Pow, caret,
                        std::move(base.expr), std::move(exponent.expr)),
                    {base.height, exponent.height}, caret);
  }
  return base;
}

/// slice_or_index := expr | expr? ':' expr?    (after `base` and at '[')
Parsed Parser::parseSubscript(Parsed base, SMLoc start) {
  SMLoc open = tok.getLoc();
  NestingScope nesting(exprDepth);
  if (nesting.tooDeep())
    return errorTooDeep(open, "expression");
  consume();

  Parsed lo;
  if (!tok.is(TokenKind::Colon)) {
    lo = parseExpr();
    if (!lo)
      return {};
    if (!tok.is(TokenKind::Colon)) {
      if (!expectClosing(TokenKind::RBracket, open, ":"))
        return {};
      return makeNode(std::make_unique<ast::IndexExpr>(SMRange(start, prevEnd),
                                                       std::move(base.expr),
                                                       std::move(lo.expr)),
                      {base.height, lo.height}, open);
    }
  }
  consume(); // ':'
  Parsed hi;
  if (!tok.is(TokenKind::RBracket)) {
    hi = parseExpr();
    if (!hi)
      return {};
  }
  if (!expectClosing(TokenKind::RBracket, open, ""))
    return {};
  return makeNode(std::make_unique<ast::SliceExpr>(
                      SMRange(start, prevEnd), std::move(base.expr),
                      std::move(lo.expr), std::move(hi.expr)),
                  {base.height, lo.height, hi.height}, open);
}

/// primary := NUMBER | STRING | IDENT | call | '(' ... ')' | '[' ... ']'
Parsed Parser::parsePrimary() {
  switch (tok.kind) {
  case TokenKind::Number: {
    auto number = std::make_unique<ast::NumberExpr>(tok.getRange(), tok.number,
                                                    tok.isInteger);
    consume();
    return {std::move(number), 1};
  }
  case TokenKind::String: {
    auto string = std::make_unique<ast::StringExpr>(tok.getRange(), tok.text);
    consume();
    return {std::move(string), 1};
  }
  case TokenKind::Identifier:
    return parseNameOrCall();
  case TokenKind::LParen:
    return parseParenthesized();
  case TokenKind::LBracket:
    return parseList();
  default:
    return errorExpected("an expression");
  }
}

/// IDENT | IDENT '(' (expr (',' expr)* ','?)? ')'
Parsed Parser::parseNameOrCall() {
  SMRange nameRange = tok.getRange();
  std::string name = tok.spelling.str();
  consume();
  if (!tok.is(TokenKind::LParen))
    return {std::make_unique<ast::NameExpr>(nameRange, std::move(name)), 1};

  SMLoc open = tok.getLoc();
  NestingScope nesting(exprDepth);
  if (nesting.tooDeep())
    return errorTooDeep(open, "expression");
  consume();
  std::vector<ast::ExprPtr> args;
  unsigned height = 0;
  if (!parseElements(args, height, TokenKind::RParen, open))
    return {};
  return makeNode(std::make_unique<ast::CallExpr>(
                      SMRange(nameRange.Start, prevEnd), std::move(name),
                      nameRange, std::move(args)),
                  {height}, nameRange.Start);
}

/// '(' expr ')' | '(' expr ',' (expr (',' expr)*)? ','? ')'
Parsed Parser::parseParenthesized() {
  SMLoc open = tok.getLoc();
  NestingScope nesting(exprDepth);
  if (nesting.tooDeep())
    return errorTooDeep(open, "expression");
  consume();
  Parsed first = parseExpr();
  if (!first)
    return {};
  // Without a comma this is a parenthesized expression, not a tuple.
  if (!consumeIf(TokenKind::Comma)) {
    if (!expectClosing(TokenKind::RParen, open, ","))
      return {};
    return first;
  }

  std::vector<ast::ExprPtr> elements;
  elements.push_back(std::move(first.expr));
  unsigned height = first.height;
  if (!parseElements(elements, height, TokenKind::RParen, open))
    return {};
  return makeNode(std::make_unique<ast::SequenceExpr>(ast::Expr::Kind::Tuple,
                                                      SMRange(open, prevEnd),
                                                      std::move(elements)),
                  {height}, open);
}

/// '[' (expr (',' expr)* ','?)? ']'
Parsed Parser::parseList() {
  SMLoc open = tok.getLoc();
  NestingScope nesting(exprDepth);
  if (nesting.tooDeep())
    return errorTooDeep(open, "expression");
  consume();
  std::vector<ast::ExprPtr> elements;
  unsigned height = 0;
  if (!parseElements(elements, height, TokenKind::RBracket, open))
    return {};
  return makeNode(std::make_unique<ast::SequenceExpr>(ast::Expr::Kind::List,
                                                      SMRange(open, prevEnd),
                                                      std::move(elements)),
                  {height}, open);
}

/// Parses `(expr (',' expr)* ','?)?` and the `close` bracket matching the one
/// at `open`, raising `height` to the tallest element's.
bool Parser::parseElements(std::vector<ast::ExprPtr> &elements,
                           unsigned &height, TokenKind close, SMLoc open) {
  while (!tok.is(close)) {
    Parsed element = parseExpr();
    if (!element)
      return false;
    height = std::max(height, element.height);
    elements.push_back(std::move(element.expr));
    if (!consumeIf(TokenKind::Comma))
      break;
  }
  return expectClosing(close, open, ",");
}

std::unique_ptr<ast::Module> optgen::parseSpec(llvm::SourceMgr &sourceMgr,
                                               unsigned bufferId,
                                               const SyntaxErrorFn &onError) {
  return Parser(sourceMgr, bufferId, onError).parseModule();
}
