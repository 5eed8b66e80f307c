#include "app/chat/jinja_parser.h"

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <string_view>

#include "app/chat/jinja_error.h"

namespace kvforge::jinja {
namespace {

// Sets e's height from its children's; refuses a tree taller than
// kMaxExprHeight before anything deeper is built on it.
ExprPtr sealed(ExprPtr e) {
  int below = 0;
  if (e->target) below = e->target->height;
  for (const ExprPtr& item : e->items)
    if (item) below = std::max(below, item->height);
  for (const KeywordArg& kw : e->keywords) below = std::max(below, kw.value->height);
  e->height = below + 1;
  if (e->height > kMaxExprHeight)
    throw TemplateError(e->line,
                        "expression nests deeper than " + std::to_string(kMaxExprHeight) +
                            " levels (a chain of '.', '[]', '()', '|', 'is' or operators)");
  return e;
}

class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : t_(tokens) {}

  NodeList parse_all() {
    std::string end_tag;
    return parse_body({}, end_tag);
  }

 private:
  // Keeps nesting bounded; decremented when the guard leaves scope.
  class DepthGuard {
   public:
    DepthGuard(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxParseDepth)
        throw TemplateError(p_.peek().line, "template nested deeper than " +
                                                std::to_string(kMaxParseDepth) + " levels");
    }
    ~DepthGuard() { --p_.depth_; }

   private:
    Parser& p_;
  };

  const Token& peek(size_t ahead = 0) const {
    const size_t i = std::min(pos_ + ahead, t_.size() - 1);
    return t_[i];
  }
  const Token& next() {
    const Token& tok = peek();
    if (pos_ < t_.size() - 1) ++pos_;
    return tok;
  }
  bool at_name(std::string_view n, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::kName && peek(ahead).text == n;
  }
  bool at_op(std::string_view op) const {
    return peek().kind == TokenKind::kOperator && peek().text == op;
  }
  bool skip_op(std::string_view op) {
    if (!at_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view n) {
    if (!at_name(n)) return false;
    next();
    return true;
  }
  [[noreturn]] void fail(const std::string& what) const { throw TemplateError(peek().line, what); }
  void expect_op(std::string_view op, std::string_view context) {
    if (!skip_op(op))
      fail("expected '" + std::string(op) + "' " + std::string(context) + ", got " +
           describe_token(peek()));
  }
  std::string expect_name(std::string_view context) {
    if (peek().kind != TokenKind::kName)
      fail("expected a name " + std::string(context) + ", got " + describe_token(peek()));
    return next().text;
  }
  void expect_block_end(std::string_view tag) {
    if (peek().kind != TokenKind::kBlockEnd)
      fail("expected '%}' to close '" + std::string(tag) + "', got " + describe_token(peek()));
    next();
  }

  // ---- statements -------------------------------------------------------

  // Parses nodes until a block tag named in `end_tags` (left unconsumed after
  // its name: `end_tag` receives the name) or, with no end tags, the end.
  NodeList parse_body(std::initializer_list<std::string_view> end_tags, std::string& end_tag) {
    DepthGuard guard(*this);
    NodeList body;
    while (true) {
      const Token& tok = peek();
      if (tok.kind == TokenKind::kEnd) {
        if (end_tags.size() == 0) return body;
        fail("unexpected end of template: expected '{% " + std::string(*(end_tags.end() - 1)) +
             " %}'");
      }
      if (tok.kind == TokenKind::kText) {
        auto n = make_node(Node::Kind::kText, tok.line);
        n->text = next().text;
        body.push_back(std::move(n));
      } else if (tok.kind == TokenKind::kVarBegin) {
        next();
        auto n = make_node(Node::Kind::kOutput, tok.line);
        n->expr = parse_expression();
        if (peek().kind != TokenKind::kVarEnd) fail("expected '}}', got " + describe_token(peek()));
        next();
        body.push_back(std::move(n));
      } else if (tok.kind == TokenKind::kBlockBegin) {
        const Token& name_tok = peek(1);
        for (std::string_view end : end_tags) {
          if (name_tok.kind == TokenKind::kName && name_tok.text == end) {
            next();
            next();
            end_tag = std::string(end);
            return body;
          }
        }
        next();
        body.push_back(parse_statement());
      } else {
        fail("unexpected " + describe_token(tok));
      }
    }
  }

  NodePtr parse_statement() {
    const Token& tok = peek();
    if (tok.kind != TokenKind::kName)
      fail("expected a tag name after '{%', got " + describe_token(tok));
    const std::string tag = next().text;
    if (tag == "if") return parse_if(tok.line);
    if (tag == "for") return parse_for(tok.line);
    if (tag == "set") return parse_set(tok.line);
    if (tag == "macro") return parse_macro(tok.line);
    if (tag == "generation") {
      expect_block_end(tag);
      auto n = make_node(Node::Kind::kScope, tok.line);
      std::string end;
      n->bodies.push_back(parse_body({"endgeneration"}, end));
      expect_block_end(end);
      return n;
    }
    if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) throw TemplateError(tok.line, "'" + tag + "' outside a for loop");
      expect_block_end(tag);
      return make_node(tag == "break" ? Node::Kind::kBreak : Node::Kind::kContinue, tok.line);
    }
    static constexpr std::string_view kEnds[] = {"endif", "endfor", "endset",       "endmacro",
                                                 "else",  "elif",   "endgeneration"};
    for (std::string_view e : kEnds)
      if (tag == e)
        throw TemplateError(tok.line, "'{% " + tag + " %}' without a matching opening tag");
    throw TemplateError(tok.line, "unsupported tag '{% " + tag + " %}'");
  }

  NodePtr parse_if(int line) {
    auto n = make_node(Node::Kind::kIf, line);
    n->conditions.push_back(parse_or());
    expect_block_end("if");
    while (true) {
      std::string end;
      n->bodies.push_back(parse_body({"elif", "else", "endif"}, end));
      if (end == "elif") {
        n->conditions.push_back(parse_or());
        expect_block_end("elif");
      } else if (end == "else") {
        expect_block_end("else");
        n->bodies.push_back(parse_body({"endif"}, end));
        expect_block_end("endif");
        return n;
      } else {
        expect_block_end("endif");
        return n;
      }
    }
  }

  NodePtr parse_for(int line) {
    auto n = make_node(Node::Kind::kFor, line);
    do {
      n->targets.push_back(expect_name("as a for-loop variable"));
    } while (skip_op(","));
    if (!skip_name("in")) fail("expected 'in' in for loop, got " + describe_token(peek()));
    n->expr = parse_or();
    if (skip_name("if")) n->conditions.push_back(parse_or());
    if (at_name("recursive")) fail("recursive for loops are not supported");
    expect_block_end("for");
    ++loop_depth_;
    std::string end;
    n->bodies.push_back(parse_body({"else", "endfor"}, end));
    --loop_depth_;
    if (end == "else") {
      expect_block_end("else");
      n->bodies.push_back(parse_body({"endfor"}, end));
    }
    expect_block_end("endfor");
    return n;
  }

  NodePtr parse_set(int line) {
    std::string target = expect_name("after 'set'");
    std::string attribute;
    if (skip_op(".")) attribute = expect_name("after '.' in set");
    if (skip_op("=")) {
      auto n = make_node(Node::Kind::kSet, line);
      n->targets.push_back(std::move(target));
      n->attribute = std::move(attribute);
      n->expr = parse_expression();
      expect_block_end("set");
      return n;
    }
    if (!attribute.empty() || peek().kind != TokenKind::kBlockEnd)
      fail("expected '=' in set, got " + describe_token(peek()));
    next();
    auto n = make_node(Node::Kind::kSetBlock, line);
    n->targets.push_back(std::move(target));
    std::string end;
    n->bodies.push_back(parse_body({"endset"}, end));
    expect_block_end("endset");
    return n;
  }

  NodePtr parse_macro(int line) {
    auto n = make_node(Node::Kind::kMacro, line);
    n->text = expect_name("after 'macro'");
    expect_op("(", "after the macro name");
    while (!at_op(")")) {
      MacroParam p;
      p.name = expect_name("as a macro parameter");
      if (skip_op("=")) p.default_value = parse_expression();
      n->params.push_back(std::move(p));
      if (!skip_op(",")) break;
    }
    expect_op(")", "to close the macro parameters");
    expect_block_end("macro");
    const int saved_loops = loop_depth_;
    loop_depth_ = 0;
    std::string end;
    n->bodies.push_back(parse_body({"endmacro"}, end));
    loop_depth_ = saved_loops;
    expect_block_end("endmacro");
    return n;
  }

  // ---- expressions ------------------------------------------------------

  ExprPtr parse_expression() {
    DepthGuard guard(*this);
    ExprPtr e = parse_or();
    while (at_name("if")) {
      const int line = next().line;
      auto c = make_expr(Expr::Kind::kCondition, line);
      c->target = parse_or();
      c->items.push_back(std::move(e));
      c->items.push_back(skip_name("else") ? parse_expression() : nullptr);
      e = sealed(std::move(c));
    }
    return e;
  }

  ExprPtr binary(std::string op, ExprPtr left, ExprPtr right, int line) {
    auto b = make_expr(Expr::Kind::kBinary, line);
    b->name = std::move(op);
    b->target = std::move(left);
    b->items.push_back(std::move(right));
    return sealed(std::move(b));
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (at_name("or")) {
      const int line = next().line;
      e = binary("or", std::move(e), parse_and(), line);
    }
    return e;
  }
  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (at_name("and")) {
      const int line = next().line;
      e = binary("and", std::move(e), parse_not(), line);
    }
    return e;
  }
  ExprPtr parse_not() {
    if (at_name("not")) {
      DepthGuard guard(*this);
      auto u = make_expr(Expr::Kind::kUnary, next().line);
      u->name = "not";
      u->target = parse_not();
      return sealed(std::move(u));
    }
    return parse_compare();
  }
  ExprPtr parse_compare() {
    ExprPtr e = parse_math1();
    while (true) {
      const Token& tok = peek();
      if (tok.kind == TokenKind::kOperator &&
          (tok.text == "==" || tok.text == "!=" || tok.text == "<" || tok.text == ">" ||
           tok.text == "<=" || tok.text == ">=")) {
        std::string op = next().text;
        e = binary(std::move(op), std::move(e), parse_math1(), tok.line);
      } else if (at_name("in")) {
        next();
        e = binary("in", std::move(e), parse_math1(), tok.line);
      } else if (at_name("not") && at_name("in", 1)) {
        next();
        next();
        e = binary("not in", std::move(e), parse_math1(), tok.line);
      } else {
        return e;
      }
    }
  }
  template <typename Sub>
  ExprPtr parse_left_assoc(std::initializer_list<std::string_view> ops, Sub sub) {
    ExprPtr e = (this->*sub)();
    while (true) {
      bool matched = false;
      for (std::string_view op : ops) {
        if (at_op(op)) {
          const int line = next().line;
          e = binary(std::string(op), std::move(e), (this->*sub)(), line);
          matched = true;
          break;
        }
      }
      if (!matched) return e;
    }
  }
  ExprPtr parse_math1() { return parse_left_assoc({"+", "-"}, &Parser::parse_concat); }
  ExprPtr parse_concat() { return parse_left_assoc({"~"}, &Parser::parse_math2); }
  ExprPtr parse_math2() { return parse_left_assoc({"*", "/", "//", "%"}, &Parser::parse_pow); }
  ExprPtr parse_pow() { return parse_left_assoc({"**"}, &Parser::parse_unary); }

  ExprPtr parse_unary() {
    DepthGuard guard(*this);
    if (at_op("-") || at_op("+")) {
      auto u = make_expr(Expr::Kind::kUnary, peek().line);
      u->name = next().text;
      u->target = parse_unary();
      return sealed(std::move(u));
    }
    return parse_filters(parse_postfix(parse_primary()));
  }

  ExprPtr parse_primary() {
    const Token& tok = peek();
    switch (tok.kind) {
      case TokenKind::kName: {
        next();
        auto e = make_expr(Expr::Kind::kLiteral, tok.line);
        if (tok.text == "true" || tok.text == "True")
          e->value = Value(true);
        else if (tok.text == "false" || tok.text == "False")
          e->value = Value(false);
        else if (tok.text == "none" || tok.text == "None")
          e->value = Value::none();
        else {
          e->kind = Expr::Kind::kName;
          e->name = tok.text;
        }
        return e;
      }
      case TokenKind::kString: {
        auto e = make_expr(Expr::Kind::kLiteral, tok.line);
        std::string s;
        while (peek().kind == TokenKind::kString) s += next().text;  // "a" "b" concatenates
        e->value = Value(std::move(s));
        return e;
      }
      case TokenKind::kInt: {
        next();
        auto e = make_expr(Expr::Kind::kLiteral, tok.line);
        e->value = Value(int_literal(tok));
        return e;
      }
      case TokenKind::kFloat: {
        next();
        auto e = make_expr(Expr::Kind::kLiteral, tok.line);
        e->value = Value(std::strtod(tok.text.c_str(), nullptr));
        return e;
      }
      case TokenKind::kOperator:
        if (tok.text == "(") return parse_paren();
        if (tok.text == "[") return parse_list("]", "list");
        if (tok.text == "{") return parse_dict();
        break;
      default:
        break;
    }
    fail("expected an expression, got " + describe_token(tok));
  }

  ExprPtr parse_paren() {
    const int line = next().line;
    if (skip_op(")")) return make_expr(Expr::Kind::kList, line);
    ExprPtr first = parse_expression();
    if (skip_op(")")) return first;
    auto list = make_expr(Expr::Kind::kList, line);  // a tuple
    list->items.push_back(std::move(first));
    while (skip_op(",")) {
      if (at_op(")")) break;
      list->items.push_back(parse_expression());
    }
    expect_op(")", "to close the parenthesis");
    return sealed(std::move(list));
  }

  ExprPtr parse_list(std::string_view close, std::string_view what) {
    auto list = make_expr(Expr::Kind::kList, next().line);
    while (!at_op(close)) {
      list->items.push_back(parse_expression());
      if (!skip_op(",")) break;
    }
    expect_op(close, "to close the " + std::string(what));
    return sealed(std::move(list));
  }

  ExprPtr parse_dict() {
    auto dict = make_expr(Expr::Kind::kDict, next().line);
    while (!at_op("}")) {
      dict->items.push_back(parse_expression());
      expect_op(":", "after a dict key");
      dict->items.push_back(parse_expression());
      if (!skip_op(",")) break;
    }
    expect_op("}", "to close the dict");
    return sealed(std::move(dict));
  }

  // An integer token's value; past int64 it is the template's error, not an exception of stoll.
  static int64_t int_literal(const Token& tok) {
    int64_t v = 0;
    const auto [p, ec] = std::from_chars(tok.text.data(), tok.text.data() + tok.text.size(), v);
    if (ec != std::errc() || p != tok.text.data() + tok.text.size())
      throw TemplateError(tok.line, "integer literal out of range: " + tok.text);
    return v;
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      const int line = peek().line;
      if (skip_op(".")) {
        if (peek().kind == TokenKind::kInt) {
          auto item = make_expr(Expr::Kind::kGetItem, line);
          auto index = make_expr(Expr::Kind::kLiteral, line);
          index->value = Value(int_literal(next()));
          item->target = std::move(e);
          item->items.push_back(std::move(index));
          e = sealed(std::move(item));
          continue;
        }
        auto attr = make_expr(Expr::Kind::kGetAttr, line);
        attr->name = expect_name("after '.'");
        attr->target = std::move(e);
        e = sealed(std::move(attr));
      } else if (at_op("[")) {
        e = parse_subscript(std::move(e));
      } else if (at_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr target) {
    DepthGuard guard(*this);
    const int line = next().line;
    ExprPtr parts[3];
    int colons = 0;
    while (true) {
      if (!at_op(":") && !at_op("]")) parts[colons] = parse_expression();
      if (colons < 2 && skip_op(":")) {
        ++colons;
        continue;
      }
      break;
    }
    expect_op("]", "to close the subscript");
    if (colons == 0) {
      if (!parts[0]) throw TemplateError(line, "empty subscript '[]'");
      auto e = make_expr(Expr::Kind::kGetItem, line);
      e->target = std::move(target);
      e->items.push_back(std::move(parts[0]));
      return sealed(std::move(e));
    }
    auto e = make_expr(Expr::Kind::kSlice, line);
    e->target = std::move(target);
    for (auto& p : parts) e->items.push_back(std::move(p));
    return sealed(std::move(e));
  }

  // Arguments after '(' (consumed here) up to ')'.
  void parse_args(Expr& call) {
    expect_op("(", "to open the arguments");
    while (!at_op(")")) {
      if (peek().kind == TokenKind::kName && peek(1).kind == TokenKind::kOperator &&
          peek(1).text == "=") {
        KeywordArg kw;
        kw.name = next().text;
        next();
        kw.value = parse_expression();
        call.keywords.push_back(std::move(kw));
      } else {
        if (!call.keywords.empty()) fail("positional argument after a keyword argument");
        call.items.push_back(parse_expression());
      }
      if (!skip_op(",")) break;
    }
    expect_op(")", "to close the arguments");
  }

  ExprPtr parse_call(ExprPtr target) {
    DepthGuard guard(*this);
    auto call = make_expr(Expr::Kind::kCall, peek().line);
    call->target = std::move(target);
    parse_args(*call);
    return sealed(std::move(call));
  }

  ExprPtr parse_filters(ExprPtr e) {
    while (true) {
      const int line = peek().line;
      if (skip_op("|")) {
        DepthGuard guard(*this);
        auto f = make_expr(Expr::Kind::kFilter, line);
        f->name = expect_name("after '|'");
        f->target = std::move(e);
        if (at_op("(")) parse_args(*f);
        e = sealed(std::move(f));
      } else if (skip_name("is")) {
        DepthGuard guard(*this);
        auto t = make_expr(Expr::Kind::kTest, line);
        t->negated = skip_name("not");
        t->name = expect_name("after 'is'");
        t->target = std::move(e);
        if (at_op("(")) {
          parse_args(*t);
        } else if (starts_test_argument()) {
          t->items.push_back(parse_postfix(parse_primary()));
        }
        e = sealed(std::move(t));
      } else if (at_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  // `x is equalto 3`, `x is sameas none`: a test may take one bare argument.
  bool starts_test_argument() const {
    const Token& tok = peek();
    switch (tok.kind) {
      case TokenKind::kString:
      case TokenKind::kInt:
      case TokenKind::kFloat:
        return true;
      case TokenKind::kName:
        return tok.text != "else" && tok.text != "or" && tok.text != "and" && tok.text != "if" &&
               tok.text != "is" && tok.text != "in" && tok.text != "not";
      case TokenKind::kOperator:
        return tok.text == "[" || tok.text == "{";
      default:
        return false;
    }
  }

  const std::vector<Token>& t_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

NodeList parse_template(const std::vector<Token>& tokens) {
  if (tokens.empty() || tokens.back().kind != TokenKind::kEnd)
    throw TemplateError(1, "internal: token list must end with an end token");
  return Parser(tokens).parse_all();
}

}  // namespace kvforge::jinja
