// GBNF text -> Grammar: parse, lower repetitions and character classes to
// plain rules over byte sets, then check (grammar_checks.h). Every step is
// bounded for untrusted input; GrammarError names what was refused.
#pragma once

#include <string_view>

#include "engine/sampling/grammar/gbnf_parser.h"
#include "engine/sampling/grammar/grammar.h"

namespace kvforge {

struct GrammarLimits {
  GbnfLimits text;
  size_t max_rules = 100000;      // after lowering (repetitions and classes add rules)
  size_t max_elements = 2000000;  // after lowering
};

// The grammar's start rule is `root`.
Grammar compile_gbnf(std::string_view text, const GrammarLimits& limits = {});

}  // namespace kvforge
