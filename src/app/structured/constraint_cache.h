// Compiles constraint specs for one tokenizer and keeps the recent ones: a
// grammar bound to the vocabulary is shared by every request that sends the
// same text, with the token masks its earlier requests already computed.
// Compiling runs on the caller's thread (the server's HTTP threads, never
// the engine loop). Thread-safe.
#pragma once

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "app/structured/constraint_spec.h"
#include "app/tokenizer/tokenizer.h"
#include "engine/sampling/grammar/grammar_constraint.h"

namespace kvforge {

// Each token's bytes as the grammar matches them (control tokens none) and
// the end-of-generation tokens, with the places of JSON strings precomputed
// (string_warmup.h).
std::shared_ptr<const GrammarVocabulary> grammar_vocabulary(const Tokenizer& tokenizer);

// The GBNF text a spec compiles to (a schema converted). Throws GrammarError.
std::string constraint_gbnf(const ConstraintSpec& spec);

class ConstraintCache {
 public:
  explicit ConstraintCache(Tokenizer tokenizer, size_t capacity = 64);

  // Throws GrammarError, its message prefixed with spec.source.
  std::shared_ptr<const GrammarConstraint> get(const ConstraintSpec& spec);

 private:
  using Key = std::pair<int, std::string>;

  Tokenizer tokenizer_;
  size_t capacity_;
  std::mutex mu_;
  std::shared_ptr<const GrammarVocabulary> vocab_;  // built on first use
  std::list<std::pair<Key, std::shared_ptr<const GrammarConstraint>>> recent_;  // newest first
};

}  // namespace kvforge
