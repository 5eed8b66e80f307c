// Splits a Jinja template into text and tag tokens, applying the whitespace
// rules Hugging Face renders chat templates with: trim_blocks (the newline
// after a block or comment tag is dropped), lstrip_blocks (spaces and tabs
// before a block or comment tag at the start of a line are dropped), `-`
// inside a tag delimiter strips all whitespace on that side, `+` turns
// lstrip_blocks off for one tag, and one trailing newline of the whole
// template is dropped (keep_trailing_newline=False).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kvforge::jinja {

enum class TokenKind {
  kText,        // literal output
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,        // identifier or keyword
  kString,      // string literal, escapes resolved
  kInt,
  kFloat,
  kOperator,  // + - * / // % ** ~ == != < > <= >= = ( ) [ ] { } . , : |
  kEnd,
};

struct Token {
  TokenKind kind;
  std::string text;  // text, name, operator or decoded string
  int line;          // 1-based line where the token starts
};

// Throws TemplateError for an unterminated tag, comment or string, or a
// character that cannot start a token.
std::vector<Token> lex_template(std::string_view source);

// A token as an error message names it: "'{%'", "'endfor'", "number 3", ...
std::string describe_token(const Token& t);

}  // namespace kvforge::jinja
