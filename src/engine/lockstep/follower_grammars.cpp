#include "engine/lockstep/follower_grammars.h"

#include <stdexcept>

#include "engine/lockstep/grammar_wire.h"

namespace kvforge {

FollowerGrammars::FollowerGrammars(GrammarVocabularySource vocabulary, size_t capacity)
    : source_(std::move(vocabulary)), capacity_(capacity) {}

std::shared_ptr<const GrammarConstraint> FollowerGrammars::bind(Grammar rules) {
  for (auto it = recent_.begin(); it != recent_.end(); ++it) {
    if (!same_rules(it->first, rules)) continue;
    if (it->second->worn()) {
      recent_.erase(it);
      break;
    }
    recent_.splice(recent_.begin(), recent_, it);
    return recent_.front().second;
  }
  if (!vocabulary_) {
    if (!source_)
      throw std::runtime_error(
          "tensor parallel: rank 0 sent a grammar, but this rank has no vocabulary to bind it to");
    vocabulary_ = source_();
  }
  auto bound = std::make_shared<GrammarConstraint>(rules, vocabulary_);
  recent_.emplace_front(std::move(rules), bound);
  if (recent_.size() > capacity_) recent_.pop_back();
  return bound;
}

}  // namespace kvforge
