// A JSON Schema `pattern` (an ECMAScript regular expression, matched
// anywhere in the string unless anchored with ^ and $) -> the GBNF body of a
// JSON string whose value matches it. Characters the regex names are written
// as JSON writes them ("\"" as \", "\\" as \\); control characters are left
// out of classes (the grammar writes a subset of the matches, never a
// non-match). Supported: literals, escapes (\d \w \s and their negations,
// \n \t, escaped punctuation), classes with ranges and ^, ., groups
// ((...) and (?:...)), |, * + ? {m} {m,} {m,n} (lazy forms too), ^ at the
// start and $ at the end. Anything else (backreferences, lookaround, \b,
// anchors inside) is a GrammarError naming it.
#pragma once

#include <string>
#include <string_view>

namespace kvforge {

std::string regex_string_gbnf(std::string_view pattern);

}  // namespace kvforge
