// Parses llama.cpp's GBNF: `name ::= alternatives` rules, "literals" with
// \n \r \t \\ \" \xHH \uHHHH \UHHHHHHHH escapes, [character classes] with ^
// and ranges, `.` (any character), (groups), ? * + {m} {m,} {m,n}, and #
// comments, and token references: `<[1234]>` (a token by id), `<|tag|>` (the
// token whose text is exactly that), `!<...>` (any one token but it). A
// newline ends a rule except inside parentheses or after `|`. Errors
// (GrammarError) carry the line and column.
#pragma once

#include <string_view>
#include <vector>

#include "engine/sampling/grammar/gbnf_ast.h"

namespace kvforge {

// Bounds for untrusted text; past one the parse fails with GrammarError.
struct GbnfLimits {
  size_t max_bytes = 1 << 20;  // the whole text
  int max_nesting = 64;        // parentheses
  int64_t max_repeat = 10000;  // the m and n of {m,n}
};

std::vector<GbnfRule> parse_gbnf(std::string_view text, const GbnfLimits& limits = {});

}  // namespace kvforge
