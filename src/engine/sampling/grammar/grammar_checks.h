// Static checks of a lowered grammar. Left recursion (a rule that can reach
// itself without consuming a byte, including a repetition of something that
// can be empty) would make the matcher expand forever: it is refused with
// the cycle named, as llama.cpp refuses it.
#pragma once

#include <vector>

#include "engine/sampling/grammar/grammar.h"

namespace kvforge {

// (rule) -> whether the rule can match the empty string.
std::vector<bool> nullable_rules(const Grammar& g);

// Throws GrammarError naming the cycle ("a -> b -> a").
void check_left_recursion(const Grammar& g);

}  // namespace kvforge
