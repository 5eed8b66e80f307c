// Lowers parsed GBNF rules to the flat byte-level Grammar. Repetitions become
// rules the way llama.cpp writes them (x* -> r ::= x r | "", x{m,n} -> m
// copies then n-m nested optionals), so the right recursion of a loop is a
// tail call that never grows the parse stack.
#pragma once

#include <vector>

#include "engine/sampling/grammar/gbnf_ast.h"
#include "engine/sampling/grammar/grammar.h"
#include "engine/sampling/grammar/grammar_compiler.h"

namespace kvforge {

// Throws GrammarError for an undefined rule, a missing root, or a grammar past `limits`.
Grammar lower_gbnf(const std::vector<GbnfRule>& rules, const GrammarLimits& limits);

}  // namespace kvforge
