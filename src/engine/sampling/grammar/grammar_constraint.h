// A grammar bound to a vocabulary: what every matcher of it shares. Built
// once per grammar text and model (the callers cache it), used by every
// sequence constrained by it, from any thread (one mutex guards the caches).
//
// The allowed tokens of a parse stack do not depend on anything else, and
// stacks are hash-consed (stack_arena.h), so each distinct stack's token
// mask is computed once, by one walk of the vocabulary trie that drops a
// subtree at the first refused byte, and cached: a sequence in a loop of the
// grammar (inside a string, between array items) meets the same stack again
// and its mask costs a lookup. A set of stacks allows the union of theirs.
//
// Sets of stacks are interned too, with a 256-entry transition row per set
// filled on demand, so a trie walk costs one table lookup per trie node once
// the grammar's states have been met (a string's characters, say).
//
// A new stack does not cost a whole trie walk: its top few nodes are walked
// apart from the rest, once per vocabulary for every grammar holding the
// same rules, and the rest only under the few trie nodes where the top part
// may end (stack_prefix_masks.h). The stacks of a set that stand on the same
// stack beneath their top parts (the alternatives of a string's place) share
// one top mask (the union of theirs, kept) and one walk under its ends.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/sampling/grammar/class_trie.h"
#include "engine/sampling/grammar/fifo_cache.h"
#include "engine/sampling/grammar/grammar.h"
#include "engine/sampling/grammar/light_rules.h"
#include "engine/sampling/grammar/repetition_shifts.h"
#include "engine/sampling/grammar/stack_arena.h"
#include "engine/sampling/grammar/stack_prefix_masks.h"
#include "engine/sampling/grammar/token_trie.h"

namespace kvforge {

// A set of tokens: (ceil(n_vocab / 64)) words, bit t % 64 of word t / 64.
using TokenMask = std::vector<uint64_t>;
inline bool mask_test(const TokenMask& m, int32_t t) { return (m[size_t(t) >> 6] >> (t & 63)) & 1; }
inline void mask_set(TokenMask& m, int32_t t) { m[size_t(t) >> 6] |= uint64_t{1} << (t & 63); }

// What the grammar engine needs of a tokenizer: each token's bytes ("" for
// control tokens, which a grammar allows only where it names them), the
// end-of-generation tokens, allowed where the grammar is complete, and the
// tokens a grammar may name by text (`<|start|>`: special tokens' texts).
struct GrammarVocabulary {
  GrammarVocabulary(std::vector<std::string> token_bytes, std::vector<int32_t> end_ids,
                    std::unordered_map<std::string, int32_t> named_tokens = {});

  std::vector<std::string> token_bytes;  // (n_vocab)
  std::vector<int32_t> end_ids;
  std::unordered_map<std::string, int32_t> named_tokens;  // text as written -> id
  TokenTrie trie;
  // Under json_text_classes() then word_classes(): a walk takes the first
  // whose classes its start keeps whole.
  std::array<ClassTrie, 2> class_tries;
  StackPrefixMaskCache prefix_masks;  // shared by every grammar over this vocabulary
  // (k < trie.max_depth()) the tokens of at most k bytes (repetition_shifts.h)
  std::vector<TokenMask> tokens_up_to;
  size_t n_vocab() const { return token_bytes.size(); }
  bool is_end(int32_t token) const;
};

struct ConstraintLimits {
  size_t max_stacks = size_t{1} << 22;  // distinct parse stacks, all requests together
  size_t max_expansion = 100000;        // stacks one byte may expand to
  size_t max_cached_masks = 2048;       // past it the oldest is dropped
  size_t max_cached_sets = 65536;       // interned stack sets (1 KiB of transitions each)
  // Stack nodes whose allowed tokens are walked apart from the stack beneath
  // them (stack_prefix_masks.h): a JSON string's rules are 3 deep.
  size_t cut_depth = 3;
  // A cut may stop above a node of a rule whose sub-grammar spells a key
  // longer than this (light_rules.h, GrammarConstraint::cut_depth): a
  // string's first character is cut above the rule holding the string.
  // 0: always cut_depth nodes (the same masks).
  size_t light_rule_bytes = 3072;
  // Walk a cut stack's top over the class trie where its states allow it
  // (class_trie.h); off, every walk is over bytes (the same masks, slower).
  bool class_walks = true;
  // Derive the prefix mask of a cut stack inside a bounded repetition from its
  // neighbour's (repetition_shifts.h), walking only the longer tokens; off,
  // every cut stack is walked whole (the same masks, slower).
  bool repetition_shifts = true;
  // Neighbours looked up a chain for a known mask before walking whole.
  size_t max_shifts = 64;
  // Keep the union mask of a set of stacks for the next time the set is met.
  size_t max_cached_unions = 256;
  // In a set of stacks, join those on the same stack beneath their cuts: one
  // prefix mask for their cuts (kept by the set of cuts) and one walk of its
  // roots; off, one of each per stack (the same masks, slower).
  bool group_cuts = true;
  size_t max_cached_cut_sets = 256;
};

class GrammarConstraint {
 public:
  GrammarConstraint(Grammar grammar, std::shared_ptr<const GrammarVocabulary> vocab,
                    ConstraintLimits limits = {});
  GrammarConstraint(const GrammarConstraint&) = delete;
  GrammarConstraint& operator=(const GrammarConstraint&) = delete;

  const Grammar& grammar() const { return grammar_; }
  const GrammarVocabulary& vocabulary() const { return *vocab_; }

  // The stacks at the start (sorted, unique).
  std::vector<uint32_t> initial_stacks() const;
  // The stacks `from` become after consuming `bytes` (empty: refused).
  std::vector<uint32_t> advance(std::span<const uint32_t> from, std::string_view bytes) const;
  // The stacks `from` become after token `token`: its bytes, or a token
  // element naming it (end tokens only by a `<...>` naming them). Empty: refused.
  std::vector<uint32_t> advance_token(std::span<const uint32_t> from, int32_t token) const;
  // The tokens `stacks` allow (end tokens where one is kEmptyStack). One
  // stack: its cached mask, shared; more: their union, built in one pass
  // (no mask of its own for each stack) and cached by the set.
  std::shared_ptr<const TokenMask> allowed(std::span<const uint32_t> stacks) const;

  // Parse stacks accumulate over the requests sharing a constraint (a deeply
  // recursive grammar keeps making new ones): past half the stack budget a
  // cache should start over with a fresh copy, long before the budget would
  // refuse a request. Every rank's cache asks this, so all start over alike.
  bool worn() const { return stack_count() > limits_.max_stacks / 2; }

  // Stacks and cached masks so far, for tests and benchmarks.
  size_t stack_count() const;
  size_t cached_masks() const;
  // Cut stacks whose prefix mask took a walk of the whole vocabulary.
  size_t whole_walks() const;

 private:
  using Row = std::array<uint32_t, 256>;  // byte -> set id, kUnknownSet until computed

  void bind_tokens();
  std::shared_ptr<const TokenMask> stack_mask(uint32_t stack) const;  // mu_ held
  void keep_mask(uint32_t stack, std::shared_ptr<const TokenMask> mask) const;
  using Stacks = std::vector<uint32_t>;
  void add_stack(uint32_t stack, TokenMask& out) const;
  void add_cuts(const Stacks& cuts, uint32_t below, TokenMask& out) const;
  std::shared_ptr<const StackPrefixMask> cuts_prefix(const Stacks& cuts) const;
  uint32_t cut_of(uint32_t stack, uint32_t& below) const;
  size_t cut_depth(uint32_t stack) const;
  std::shared_ptr<const TokenMask> token_mask(const Element& top) const;
  std::shared_ptr<const TokenMask> union_mask(std::span<const uint32_t> stacks) const;
  std::shared_ptr<const StackPrefixMask> prefix_mask(uint32_t cut) const;
  std::shared_ptr<const StackPrefixMask> known_prefix(uint32_t cut, std::string& key) const;
  void keep_prefix(uint32_t cut, const std::string& key,
                   std::shared_ptr<const StackPrefixMask> mask) const;
  uint32_t shifted(uint32_t stack, uint32_t bottom, size_t& bytes) const;
  std::shared_ptr<const StackPrefixMask> shifted_prefix(
      uint32_t cut, size_t bytes, std::shared_ptr<const StackPrefixMask> base) const;
  void walk_cut(uint32_t cut, size_t past, StackPrefixMask& out) const;
  void walk(const TokenTrie::Node& node, uint32_t set, size_t past, TokenMask& mask) const;
  void walk_prefix(const TokenTrie::Node& node, uint32_t set, size_t past,
                   StackPrefixMask& out) const;
  void walk_prefix_classes(const ClassTrie& ct, size_t k, const TokenTrie::Node& node, uint32_t set,
                           size_t past, StackPrefixMask& out) const;
  uint8_t keeps_classes(const std::vector<uint32_t>& stacks) const;
  uint32_t intern_set(const std::vector<uint32_t>& stacks) const;
  void bound_sets() const;
  uint32_t step(uint32_t set, uint8_t b) const;  // the set after byte b (0: none)

  Grammar grammar_;
  std::shared_ptr<const GrammarVocabulary> vocab_;
  ConstraintLimits limits_;
  mutable std::mutex mu_;
  mutable StackArena arena_;
  mutable FifoCache<uint32_t, std::shared_ptr<const TokenMask>> masks_;
  uint32_t sentinel_ = 0;  // the stack node standing for what lies beneath a cut
  mutable FifoCache<uint32_t, std::shared_ptr<const StackPrefixMask>> prefix_masks_;
  mutable std::vector<uint64_t> cuts_;  // (stack) -> cut << 32 | below, 0 until computed
  mutable LightRules light_;
  std::vector<RepetitionShift> shifts_;  // (element) -> its neighbour in a bounded repetition
  mutable FifoCache<Stacks, std::shared_ptr<const TokenMask>,
                    std::map<Stacks, std::shared_ptr<const TokenMask>>>
      unions_;
  // (sorted cuts) -> the union of their prefix masks (group_cuts)
  mutable FifoCache<Stacks, std::shared_ptr<const StackPrefixMask>,
                    std::map<Stacks, std::shared_ptr<const StackPrefixMask>>>
      cut_sets_;
  mutable size_t whole_walks_ = 0;
  mutable std::vector<std::vector<uint32_t>> sets_;  // (set id) -> sorted stacks; 0 is {}
  mutable std::vector<uint8_t> cut_ends_;            // (set id) -> holds sentinel_
  // (set id) -> bit k: its byte sets keep the classes of class_tries[k] whole
  mutable std::vector<uint8_t> whole_classes_;
  mutable std::vector<int16_t> set_keeps_classes_;  // (byte set) -> the same bits, -1 unknown
  mutable std::map<std::vector<uint32_t>, uint32_t> set_ids_;
  mutable std::vector<std::unique_ptr<Row>> rows_;  // (set id) -> transitions, null until used
  mutable std::vector<uint32_t> scratch_;
};

}  // namespace kvforge
