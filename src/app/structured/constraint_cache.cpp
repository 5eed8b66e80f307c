#include "app/structured/constraint_cache.h"

#include <algorithm>
#include <unordered_map>

#include "app/structured/json_schema_gbnf.h"
#include "app/structured/string_warmup.h"
#include "engine/sampling/grammar/grammar_compiler.h"
#include "engine/sampling/grammar/grammar_error.h"

namespace kvforge {

std::shared_ptr<const GrammarVocabulary> grammar_vocabulary(const Tokenizer& tokenizer) {
  std::vector<std::string> bytes(size_t(tokenizer.n_vocab()));
  // The texts a grammar's `<...>` may name: every token written `<...>`,
  // a control token's before a text token's of the same spelling.
  std::unordered_map<std::string, int32_t> named;
  for (int32_t id = 0; id < tokenizer.n_vocab(); ++id) {
    bytes[size_t(id)] = tokenizer.token_to_piece(id, /*render_special=*/false);
    std::string text = tokenizer.token_to_piece(id, /*render_special=*/true);
    if (text.size() < 3 || text.front() != '<' || text.back() != '>') continue;
    const auto [it, added] = named.emplace(std::move(text), id);
    if (!added && bytes[size_t(id)].empty() && !bytes[size_t(it->second)].empty()) it->second = id;
  }
  std::vector<int32_t> ends = tokenizer.eog_ids();
  if (tokenizer.eos_id() >= 0 &&
      std::find(ends.begin(), ends.end(), tokenizer.eos_id()) == ends.end())
    ends.push_back(tokenizer.eos_id());
  auto vocab =
      std::make_shared<GrammarVocabulary>(std::move(bytes), std::move(ends), std::move(named));
  warm_json_strings(vocab);
  return vocab;
}

std::string constraint_gbnf(const ConstraintSpec& spec) {
  switch (spec.kind) {
    case ConstraintSpec::Kind::Gbnf:
      return spec.text;
    case ConstraintSpec::Kind::JsonSchema:
      return json_schema_to_gbnf(spec.text);
    case ConstraintSpec::Kind::JsonObject:
      return json_object_gbnf();
  }
  return spec.text;
}

ConstraintCache::ConstraintCache(Tokenizer tokenizer, size_t capacity)
    : tokenizer_(std::move(tokenizer)), capacity_(capacity) {}

std::shared_ptr<const GrammarConstraint> ConstraintCache::get(const ConstraintSpec& spec) {
  const Key key{int(spec.kind), spec.text};
  std::shared_ptr<const GrammarVocabulary> vocab;
  {
    std::lock_guard lock(mu_);
    for (auto it = recent_.begin(); it != recent_.end(); ++it) {
      if (it->first != key) continue;
      if (it->second->worn()) {
        recent_.erase(it);
        break;
      }
      recent_.splice(recent_.begin(), recent_, it);
      return recent_.front().second;
    }
    if (!vocab_) vocab_ = grammar_vocabulary(tokenizer_);
    vocab = vocab_;
  }
  std::shared_ptr<const GrammarConstraint> c;
  try {
    c = std::make_shared<GrammarConstraint>(compile_gbnf(constraint_gbnf(spec)), vocab);
    // The first mask is computed here, off the engine thread, and cached.
    const std::vector<uint32_t> start = c->initial_stacks();
    (void)c->allowed(start);
  } catch (const GrammarError& e) {
    throw GrammarError(spec.source + ": " + e.what());
  }
  std::lock_guard lock(mu_);
  recent_.emplace_front(key, c);
  if (recent_.size() > capacity_) recent_.pop_back();
  return c;
}

}  // namespace kvforge
