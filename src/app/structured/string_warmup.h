// Precomputes, once per vocabulary, the prefix masks (stack_prefix_masks.h)
// of every place in a JSON string of up to kWarmStringChars characters:
// every schema grammar's strings (maxLength, the keys of free objects...)
// are written with the same `char` rule, so their places have the same
// state keys and find these entries instead of walking the vocabulary when
// a sequence first reaches them. Run where the vocabulary is built, off the
// engine thread; the entries are kept for good.
#pragma once

#include <memory>

#include "engine/sampling/grammar/grammar_constraint.h"

namespace kvforge {

constexpr int kWarmStringChars = 32;

// Nothing if the vocabulary has no single-token "[", "\"" or "a".
void warm_json_strings(const std::shared_ptr<const GrammarVocabulary>& vocab);

}  // namespace kvforge
