#include "app/structured/string_warmup.h"

#include <string>

#include "app/structured/json_primitives_gbnf.h"
#include "engine/sampling/grammar/grammar_compiler.h"
#include "engine/sampling/grammar/grammar_matcher.h"

namespace kvforge {
namespace {

// A string inside a rule that is heavy (light_rules.h) as an object rule
// is, so that its places are cut as a string in an object is: the second
// alternative is there for its weight alone.
std::string warm_gbnf() {
  std::string g = "root ::= \"[\" str \"]\" | \"<\" [a-z]{200} \">\"\n";
  g += "str ::= \"\\\"\" char{0," + std::to_string(kWarmStringChars) + "} \"\\\"\" space\n";
  for (const auto& [name, body] : json_primitive_rules())
    if (name == "char" || name == "space") g += name + " ::= " + body + "\n";
  return g;
}

int32_t token_of(const GrammarVocabulary& v, const std::string& bytes) {
  for (size_t t = 0; t < v.n_vocab(); ++t)
    if (v.token_bytes[t] == bytes) return int32_t(t);
  return -1;
}

}  // namespace

void warm_json_strings(const std::shared_ptr<const GrammarVocabulary>& vocab) {
  const int32_t open = token_of(*vocab, "["), quote = token_of(*vocab, "\""),
                letter = token_of(*vocab, "a");
  if (open < 0 || quote < 0 || letter < 0) return;
  auto c = std::make_shared<GrammarConstraint>(compile_gbnf(warm_gbnf()), vocab);
  struct Pinning {
    const StackPrefixMaskCache& cache;
    ~Pinning() { cache.set_pinning(false); }
  } pinning{vocab->prefix_masks};
  vocab->prefix_masks.set_pinning(true);
  GrammarMatcher m(c);
  m.accept(open);
  m.accept(quote);
  // One character per step: every place from kWarmStringChars left to none.
  for (int left = kWarmStringChars; left >= 0; --left) {
    m.allowed();
    if (left > 0) m.accept(letter);
  }
}

}  // namespace kvforge
