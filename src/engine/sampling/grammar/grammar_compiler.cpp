#include "engine/sampling/grammar/grammar_compiler.h"

#include "engine/sampling/grammar/grammar_checks.h"
#include "engine/sampling/grammar/grammar_lowering.h"

namespace kvforge {

Grammar compile_gbnf(std::string_view text, const GrammarLimits& limits) {
  Grammar g = lower_gbnf(parse_gbnf(text, limits.text), limits);
  check_left_recursion(g);
  return g;
}

}  // namespace kvforge
