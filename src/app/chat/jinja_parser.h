// Parses template tokens into a syntax tree (the statement and expression
// grammar of Jinja2 that chat templates use: if/elif/else, for with loop
// filters and else, set (plain, namespace attribute, block), macro,
// break/continue, generation blocks, filters, tests, calls, slices,
// conditional expressions). Nesting is bounded so a hostile template cannot
// exhaust the stack.
#pragma once

#include <vector>

#include "app/chat/jinja_ast.h"
#include "app/chat/jinja_lexer.h"

namespace kvforge::jinja {

// Deepest nesting of statements or expression terms a template may have.
constexpr int kMaxParseDepth = 128;
// Tallest expression tree a template may have (Expr::height): bounds chains
// the parser builds without recursing (`a.b.c...`, `x|f|g...`, `f()()...`,
// `a + b + c...`), which evaluation and destruction would recurse through.
constexpr int kMaxExprHeight = 128;

// Throws TemplateError naming the line and the construct on a syntax error or
// an unsupported tag.
NodeList parse_template(const std::vector<Token>& tokens);

}  // namespace kvforge::jinja
