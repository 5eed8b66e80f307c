// Syntax tree of a parsed template: expressions (Expr) and statements (Node).
// Each node keeps the line it came from for error messages.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "app/chat/jinja_value.h"

namespace kvforge::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;
struct Node;
using NodePtr = std::unique_ptr<Node>;
using NodeList = std::vector<NodePtr>;

struct KeywordArg {
  std::string name;
  ExprPtr value;
};

struct Expr {
  enum class Kind {
    kLiteral,    // value
    kName,       // name
    kList,       // items (also tuples)
    kDict,       // items as key, value pairs (even = key, odd = value)
    kGetAttr,    // target.name
    kGetItem,    // target[items[0]]
    kSlice,      // target[items[0]:items[1]:items[2]] (null = omitted)
    kCall,       // target(items..., keywords...)
    kFilter,     // target | name(items..., keywords...)
    kTest,       // target is [not] name(items...)
    kUnary,      // op target: "not", "-", "+"
    kBinary,     // target op items[0]
    kCondition,  // items[0] if target else items[1] (items[1] may be null)
  };
  Kind kind;
  int line;
  Value value;
  std::string name;  // name, attribute, filter, test, operator
  ExprPtr target;
  std::vector<ExprPtr> items;
  std::vector<KeywordArg> keywords;
  bool negated = false;  // tests: "is not"
  // Levels of expression in this subtree, itself included (a name is 1,
  // `a.b` is 2). The parser refuses a tree past kMaxExprHeight, so evaluating
  // and destroying one recurses a bounded number of times.
  int height = 1;
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null = required
};

struct Node {
  enum class Kind {
    kText,      // text
    kOutput,    // {{ expr }}
    kIf,        // conditions[i] -> bodies[i]; bodies.back() is the else branch when
                // bodies.size() == conditions.size() + 1
    kFor,       // for targets in expr [if condition]: bodies[0] [else bodies[1]]
    kSet,       // set targets[0][.attribute] = expr
    kSetBlock,  // set targets[0]: bodies[0] rendered to a string
    kMacro,     // macro name(params): bodies[0]
    kBreak,
    kContinue,
    kScope,  // bodies[0] in place (generation blocks)
  };
  Kind kind;
  int line;
  std::string text;
  ExprPtr expr;
  std::vector<ExprPtr> conditions;
  std::vector<NodeList> bodies;
  std::vector<std::string> targets;
  std::string attribute;  // set ns.attribute = ...
  std::vector<MacroParam> params;
};

// A new expression or statement of `kind` at template line `line`, its other fields empty.
inline ExprPtr make_expr(Expr::Kind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}
inline NodePtr make_node(Node::Kind kind, int line) {
  auto n = std::make_unique<Node>();
  n->kind = kind;
  n->line = line;
  return n;
}

}  // namespace kvforge::jinja
