#include "engine/sampling/grammar/grammar_matcher.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/sampling/grammar/grammar_error.h"

namespace kvforge {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const GrammarConstraint> constraint,
                               size_t max_rollback)
    : c_(std::move(constraint)), max_rollback_(max_rollback), stacks_(c_->initial_stacks()) {}

const TokenMask& GrammarMatcher::allowed() {
  if (!mask_) {
    if (ended_) {
      mask_ = std::make_shared<TokenMask>((c_->vocabulary().n_vocab() + 63) / 64, 0);
    } else {
      mask_ = c_->allowed(stacks_);
    }
  }
  return *mask_;
}

bool GrammarMatcher::is_complete() const {
  return !ended_ && !stacks_.empty() && stacks_[0] == kEmptyStack;
}

bool GrammarMatcher::allows(int32_t token) const {
  const GrammarVocabulary& v = c_->vocabulary();
  if (ended_ || token < 0 || size_t(token) >= v.n_vocab()) return false;
  if (v.is_end(token) && is_complete()) return true;
  return !c_->advance_token(stacks_, token).empty();
}

void GrammarMatcher::accept(int32_t token) {
  const GrammarVocabulary& v = c_->vocabulary();
  const bool in_vocab = !ended_ && token >= 0 && size_t(token) < v.n_vocab();
  // An end token ends a complete grammar; elsewhere only a `<...>` naming it takes it.
  const bool end = in_vocab && v.is_end(token) && is_complete();
  std::vector<uint32_t> next;
  if (in_vocab && !end) next = c_->advance_token(stacks_, token);
  if (!end && next.empty())
    throw GrammarError("grammar: token " + std::to_string(token) + " is not allowed here");
  history_.push_back({std::move(stacks_), ended_});
  if (history_.size() > max_rollback_) history_.pop_front();
  mask_.reset();
  if (end)
    ended_ = true, stacks_ = history_.back().stacks;
  else
    stacks_ = std::move(next);
}

void GrammarMatcher::rollback(size_t k) {
  if (k > history_.size())
    throw std::out_of_range("grammar: cannot roll back " + std::to_string(k) + " tokens, " +
                            std::to_string(history_.size()) + " kept");
  if (k == 0) return;
  const Saved& s = history_[history_.size() - k];
  stacks_ = s.stacks;
  ended_ = s.ended;
  history_.resize(history_.size() - k);
  mask_.reset();
}

void GrammarMatcher::reset() {
  stacks_ = c_->initial_stacks();
  ended_ = false;
  history_.clear();
  mask_.reset();
}

}  // namespace kvforge
