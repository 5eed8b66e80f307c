// The grammars of a tensor-parallel follower: binds the rules rank 0 sent
// (grammar_wire.h) to this rank's vocabulary, keeping the last few bound
// grammars so that requests sharing a schema share its mask caches, as
// they do on rank 0 (app/structured/constraint_cache.h).
#pragma once

#include <functional>
#include <list>
#include <memory>

#include "engine/sampling/grammar/grammar_constraint.h"

namespace kvforge {

// The vocabulary grammars bind to, built on first use (it walks every token).
using GrammarVocabularySource = std::function<std::shared_ptr<const GrammarVocabulary>()>;

class FollowerGrammars {
 public:
  explicit FollowerGrammars(GrammarVocabularySource vocabulary, size_t capacity = 16);

  // Throws std::runtime_error when this rank has no vocabulary to bind to.
  std::shared_ptr<const GrammarConstraint> bind(Grammar rules);

 private:
  GrammarVocabularySource source_;
  size_t capacity_;
  std::shared_ptr<const GrammarVocabulary> vocabulary_;
  // The rules as received (a constraint's own grammar gains a sentinel) and
  // what they were bound to, newest first.
  std::list<std::pair<Grammar, std::shared_ptr<const GrammarConstraint>>> recent_;
};

}  // namespace kvforge
