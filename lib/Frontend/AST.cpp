//===- AST.cpp - Abstract syntax tree of an optgen spec -------------------===//
//
// Operator spellings and the `--emit=ast` dump: one node per line, indented
// two spaces per level, each ending in `@line:col`. Lines without a location
// (`then`, `else`, `body`, `where`) label the children that follow them.
//
//===----------------------------------------------------------------------===//

#include "optgen/Frontend/AST.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ErrorHandling.h"

#include <charconv>

using namespace optgen;
using namespace optgen::ast;

llvm::StringRef ast::spelling(UnaryOp op) {
  switch (op) {
  case UnaryOp::Neg:
    return "-";
  case UnaryOp::Not:
    return "!";
  }
  llvm_unreachable("unknown unary operator");
}

llvm::StringRef ast::spelling(BinaryOp op) {
  switch (op) {
  case BinaryOp::Add:
    return "+";
  case BinaryOp::Sub:
    return "-";
  case BinaryOp::Mul:
    return "*";
  case BinaryOp::Div:
    return "/";
  case BinaryOp::Mod:
    return "%";
  case BinaryOp::Pow:
    return "^";
  case BinaryOp::MatMul:
    return "@";
  case BinaryOp::Lt:
    return "<";
  case BinaryOp::Le:
    return "<=";
  case BinaryOp::Gt:
    return ">";
  case BinaryOp::Ge:
    return ">=";
  case BinaryOp::Eq:
    return "==";
  case BinaryOp::Ne:
    return "!=";
  case BinaryOp::And:
    return "&&";
  case BinaryOp::Or:
    return "||";
  }
  llvm_unreachable("unknown binary operator");
}

namespace {

class Dumper {
public:
  using LineColFn = std::function<std::pair<unsigned, unsigned>(llvm::SMLoc)>;

  Dumper(llvm::raw_ostream &os, const LineColFn &lineCol)
      : os(os), lineCol(lineCol) {}

  void dumpModule(const Module &module);

private:
  llvm::raw_ostream &line(unsigned indent) { return os.indent(2 * indent); }
  /// Ends a node's line with its location.
  void endLine(llvm::SMLoc loc);
  void dumpDecl(const Decl &decl, unsigned indent);
  void dumpSetting(const GroupDecl::Setting &setting, unsigned indent);
  void dumpBlock(const Block &block, unsigned indent);
  void dumpStmt(const Stmt &stmt, unsigned indent);
  void dumpBinding(const Binding &binding, unsigned indent);
  void dumpType(const TypeAnnotation &type);
  void printType(const TypeAnnotation &type);
  void dumpExpr(const Expr &expr, unsigned indent);
  void dumpNumber(const NumberExpr &number);
  void dumpString(llvm::StringRef value);

  llvm::raw_ostream &os;
  const LineColFn &lineCol;
};

} // namespace

void Dumper::endLine(llvm::SMLoc loc) {
  auto [lineNo, col] = lineCol(loc);
  os << " @" << lineNo << ':' << col << '\n';
}

void Dumper::dumpModule(const Module &module) {
  os << "optimizer " << module.getName();
  endLine(module.getNameRange().Start);
  for (const DeclPtr &decl : module.getDecls())
    dumpDecl(*decl, 1);
}

void Dumper::dumpDecl(const Decl &decl, unsigned indent) {
  if (const auto *constant = llvm::dyn_cast<ConstDecl>(&decl)) {
    line(indent) << "const " << constant->getName();
    endLine(constant->getLoc());
    dumpExpr(constant->getValue(), indent + 1);
    return;
  }
  if (const auto *rule = llvm::dyn_cast<RuleDecl>(&decl)) {
    line(indent) << "rule " << rule->getName();
    endLine(rule->getLoc());
    for (const RuleDecl::Input &input : rule->getInputs()) {
      line(indent + 1) << "input " << input.name;
      if (input.type)
        dumpType(*input.type);
      endLine(input.range.Start);
    }
    dumpBlock(rule->getBody(), indent + 1);
    return;
  }
  if (const auto *group = llvm::dyn_cast<GroupDecl>(&decl)) {
    line(indent) << "group " << group->getName() << " = " << group->getRule();
    endLine(group->getLoc());
    for (const auto &pattern : group->getPatterns()) {
      line(indent + 1) << "match ";
      dumpString(pattern->getValue());
      endLine(pattern->getLoc());
    }
    for (const ExprPtr &predicate : group->getPredicates()) {
      line(indent + 1) << "where\n";
      dumpExpr(*predicate, indent + 2);
    }
    for (const GroupDecl::Setting &setting : group->getSettings())
      dumpSetting(setting, indent + 1);
    return;
  }
  if (const auto *function = llvm::dyn_cast<FunctionDecl>(&decl)) {
    line(indent) << "fn " << function->getName();
    endLine(function->getLoc());
    for (const FunctionDecl::Param &param : function->getParams()) {
      line(indent + 1) << "arg " << param.name;
      endLine(param.range.Start);
    }
    dumpBlock(function->getBody(), indent + 1);
    return;
  }
  if (const auto *global = llvm::dyn_cast<GlobalDecl>(&decl)) {
    line(indent) << "global " << global->getName();
    endLine(global->getLoc());
    for (const GlobalDecl::Input &input : global->getInputs()) {
      line(indent + 1) << "input " << input.name;
      endLine(input.range.Start);
    }
    dumpExpr(global->getValue(), indent + 1);
    return;
  }
  if (const auto *policy = llvm::dyn_cast<OnNonFiniteDecl>(&decl)) {
    line(indent) << "on_nonfinite " << policy->getPolicy();
    endLine(policy->getLoc());
    return;
  }
  const auto &distribute = llvm::cast<DistributeDecl>(decl);
  line(indent) << "distribute " << distribute.getStrategy();
  endLine(distribute.getLoc());
  for (const GroupDecl::Setting &setting : distribute.getSettings())
    dumpSetting(setting, indent + 1);
}

void Dumper::dumpSetting(const GroupDecl::Setting &setting, unsigned indent) {
  line(indent) << "setting " << setting.name;
  endLine(setting.nameRange.Start);
  dumpExpr(*setting.value, indent + 1);
}

void Dumper::dumpBlock(const Block &block, unsigned indent) {
  for (const StmtPtr &stmt : block)
    dumpStmt(*stmt, indent);
}

void Dumper::dumpStmt(const Stmt &stmt, unsigned indent) {
  switch (stmt.getKind()) {
  case Stmt::Kind::Hyper:
    line(indent) << "hyper";
    endLine(stmt.getLoc());
    for (const Binding &binding : llvm::cast<HyperStmt>(stmt).getItems())
      dumpBinding(binding, indent + 1);
    return;
  case Stmt::Kind::State:
    line(indent) << "state";
    endLine(stmt.getLoc());
    for (const Binding &binding : llvm::cast<StateStmt>(stmt).getItems())
      dumpBinding(binding, indent + 1);
    return;
  case Stmt::Kind::Let:
    line(indent) << "let";
    endLine(stmt.getLoc());
    dumpBinding(llvm::cast<LetStmt>(stmt).getBinding(), indent + 1);
    return;
  case Stmt::Kind::Assign: {
    const auto &assign = llvm::cast<AssignStmt>(stmt);
    line(indent) << "assign " << assign.getTarget();
    endLine(assign.getLoc());
    dumpExpr(assign.getValue(), indent + 1);
    return;
  }
  case Stmt::Kind::If: {
    const auto &ifStmt = llvm::cast<IfStmt>(stmt);
    line(indent) << "if";
    endLine(ifStmt.getLoc());
    dumpExpr(ifStmt.getCond(), indent + 1);
    line(indent + 1) << "then\n";
    dumpBlock(ifStmt.getThen(), indent + 2);
    if (!ifStmt.getElse().empty()) {
      line(indent + 1) << "else\n";
      dumpBlock(ifStmt.getElse(), indent + 2);
    }
    return;
  }
  case Stmt::Kind::For: {
    const auto &forStmt = llvm::cast<ForStmt>(stmt);
    line(indent) << (forStmt.getDestructures() ? "for destructuring" : "for");
    endLine(forStmt.getLoc());
    for (const ForStmt::Var &var : forStmt.getVars()) {
      line(indent + 1) << "var " << var.name;
      endLine(var.range.Start);
    }
    dumpExpr(forStmt.getIterable(), indent + 1);
    line(indent + 1) << "body\n";
    dumpBlock(forStmt.getBody(), indent + 2);
    return;
  }
  case Stmt::Kind::Return:
    line(indent) << "return";
    endLine(stmt.getLoc());
    dumpExpr(llvm::cast<ReturnStmt>(stmt).getValue(), indent + 1);
    return;
  }
}

void Dumper::dumpBinding(const Binding &binding, unsigned indent) {
  line(indent) << "binding " << binding.name;
  if (binding.type)
    dumpType(*binding.type);
  endLine(binding.nameRange.Start);
  if (binding.init)
    dumpExpr(*binding.init, indent + 1);
}

/// Prints ` : TYPE` as written, tuples as `(a, b)`.
void Dumper::dumpType(const TypeAnnotation &type) {
  os << " : ";
  printType(type);
}

void Dumper::printType(const TypeAnnotation &type) {
  if (!type.isTuple()) {
    os << type.name;
    return;
  }
  os << '(';
  llvm::interleaveComma(type.elements, os,
                        [&](const TypeAnnotation &e) { printType(e); });
  os << ')';
}

void Dumper::dumpExpr(const Expr &expr, unsigned indent) {
  llvm::raw_ostream &out = line(indent);
  switch (expr.getKind()) {
  case Expr::Kind::Number:
    out << "number ";
    dumpNumber(llvm::cast<NumberExpr>(expr));
    endLine(expr.getLoc());
    return;
  case Expr::Kind::String:
    out << "string ";
    dumpString(llvm::cast<StringExpr>(expr).getValue());
    endLine(expr.getLoc());
    return;
  case Expr::Kind::Name:
    out << "name " << llvm::cast<NameExpr>(expr).getName();
    endLine(expr.getLoc());
    return;
  case Expr::Kind::Call: {
    const auto &call = llvm::cast<CallExpr>(expr);
    out << "call " << call.getCallee();
    endLine(call.getLoc());
    for (const ExprPtr &arg : call.getArgs())
      dumpExpr(*arg, indent + 1);
    return;
  }
  case Expr::Kind::Unary: {
    const auto &unary = llvm::cast<UnaryExpr>(expr);
    out << "unary '" << spelling(unary.getOp()) << "'";
    endLine(unary.getLoc());
    dumpExpr(unary.getOperand(), indent + 1);
    return;
  }
  case Expr::Kind::Binary: {
    // A binary node is shown at its operator, where its diagnostics point.
    const auto &binary = llvm::cast<BinaryExpr>(expr);
    out << "binary '" << spelling(binary.getOp()) << "'";
    endLine(binary.getOpLoc());
    dumpExpr(binary.getLhs(), indent + 1);
    dumpExpr(binary.getRhs(), indent + 1);
    return;
  }
  case Expr::Kind::Ternary: {
    const auto &ternary = llvm::cast<TernaryExpr>(expr);
    out << "ternary";
    endLine(ternary.getLoc());
    dumpExpr(ternary.getCond(), indent + 1);
    dumpExpr(ternary.getThen(), indent + 1);
    dumpExpr(ternary.getElse(), indent + 1);
    return;
  }
  case Expr::Kind::Tuple:
  case Expr::Kind::List: {
    const auto &sequence = llvm::cast<SequenceExpr>(expr);
    out << (expr.getKind() == Expr::Kind::Tuple ? "tuple" : "list");
    endLine(sequence.getLoc());
    for (const ExprPtr &element : sequence.getElements())
      dumpExpr(*element, indent + 1);
    return;
  }
  case Expr::Kind::Index: {
    const auto &index = llvm::cast<IndexExpr>(expr);
    out << "index";
    endLine(index.getLoc());
    dumpExpr(index.getBase(), indent + 1);
    dumpExpr(index.getIndex(), indent + 1);
    return;
  }
  case Expr::Kind::Slice: {
    // The header shows which bounds are present, since either may be
    // omitted: `slice [lo:]` has the base and one more child.
    const auto &slice = llvm::cast<SliceExpr>(expr);
    out << "slice [" << (slice.getLo() ? "lo" : "") << ':'
        << (slice.getHi() ? "hi" : "") << ']';
    endLine(slice.getLoc());
    dumpExpr(slice.getBase(), indent + 1);
    if (const Expr *lo = slice.getLo())
      dumpExpr(*lo, indent + 1);
    if (const Expr *hi = slice.getHi())
      dumpExpr(*hi, indent + 1);
    return;
  }
  case Expr::Kind::Transpose:
    out << "transpose";
    endLine(expr.getLoc());
    dumpExpr(llvm::cast<TransposeExpr>(expr).getOperand(), indent + 1);
    return;
  }
}

/// Prints the shortest text that reads back as the same double; a float that
/// happens to be integral keeps a ".0" so it stays distinguishable from an
/// integer literal.
void Dumper::dumpNumber(const NumberExpr &number) {
  char buffer[32];
  std::to_chars_result result =
      std::to_chars(buffer, buffer + sizeof(buffer), number.getValue());
  llvm::StringRef text(buffer, result.ptr - buffer);
  os << text;
  if (!number.getIsInteger() &&
      text.find_first_not_of("-0123456789") == llvm::StringRef::npos)
    os << ".0";
}

/// Prints a string value quoted, with the language's escapes and `\xNN` for
/// other control bytes, so that every node stays on one line.
void Dumper::dumpString(llvm::StringRef value) {
  os << '"';
  for (unsigned char c : value) {
    switch (c) {
    case '\\':
      os << "\\\\";
      break;
    case '"':
      os << "\\\"";
      break;
    case '\n':
      os << "\\n";
      break;
    case '\t':
      os << "\\t";
      break;
    default:
      if (c < 0x20 || c == 0x7f)
        os << "\\x" << llvm::hexdigit(c >> 4) << llvm::hexdigit(c & 15);
      else
        os << c;
    }
  }
  os << '"';
}

void ast::dump(
    const Module &module, llvm::raw_ostream &os,
    const std::function<std::pair<unsigned, unsigned>(llvm::SMLoc)> &lineCol) {
  Dumper(os, lineCol).dumpModule(module);
}
