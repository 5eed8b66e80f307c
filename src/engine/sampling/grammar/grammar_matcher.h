// One sequence's place in a grammar: the set of parse stacks its output so
// far leaves open. It yields the tokens allowed next, advances on the token
// sampled, and rolls back the last tokens (up to max_rollback; speculative
// decoding needs it). The mask of the current set is computed at most once
// per step and is usually a cache hit (grammar_constraint.h).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "engine/sampling/grammar/grammar_constraint.h"

namespace kvforge {

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const GrammarConstraint> constraint,
                          size_t max_rollback = 32);

  // The tokens allowed next: those whose bytes some stack accepts, and the
  // end tokens once the grammar is complete.
  const TokenMask& allowed();
  // One token, without computing the mask (a walk of its bytes).
  bool allows(int32_t token) const;
  // Advances on `token`; throws GrammarError if it is not allowed. An end
  // token is accepted where the grammar is complete and ends the matcher.
  void accept(int32_t token);
  // Undoes the last k accept() calls; throws std::out_of_range past the history.
  void rollback(size_t k);
  void reset();

  // The output so far is a whole sentence of the grammar.
  bool is_complete() const;
  // An end token was accepted.
  bool is_ended() const { return ended_; }
  size_t history_size() const { return history_.size(); }

 private:
  struct Saved {
    std::vector<uint32_t> stacks;
    bool ended;
  };

  std::shared_ptr<const GrammarConstraint> c_;
  size_t max_rollback_;
  std::vector<uint32_t> stacks_;
  bool ended_ = false;
  std::deque<Saved> history_;
  std::shared_ptr<const TokenMask> mask_;  // of stacks_, null until asked
};

}  // namespace kvforge
