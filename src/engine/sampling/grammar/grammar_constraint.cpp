#include "engine/sampling/grammar/grammar_constraint.h"

#include <algorithm>
#include <string>

#include "engine/sampling/grammar/grammar_error.h"

namespace kvforge {

namespace {

// An end token's text, if it has one, must never be matched as grammar bytes.
std::vector<std::string> without_ends(std::vector<std::string> bytes,
                                      const std::vector<int32_t>& ends) {
  for (int32_t e : ends)
    if (e >= 0 && size_t(e) < bytes.size()) bytes[size_t(e)].clear();
  return bytes;
}

}  // namespace

GrammarVocabulary::GrammarVocabulary(std::vector<std::string> bytes, std::vector<int32_t> ends,
                                     std::unordered_map<std::string, int32_t> named)
    : token_bytes(without_ends(std::move(bytes), ends)),
      end_ids(std::move(ends)),
      named_tokens(std::move(named)),
      trie(token_bytes),
      class_tries{ClassTrie(trie, token_bytes, json_text_classes()),
                  ClassTrie(trie, token_bytes, word_classes())} {}

bool GrammarVocabulary::is_end(int32_t token) const {
  return std::find(end_ids.begin(), end_ids.end(), token) != end_ids.end();
}

GrammarConstraint::GrammarConstraint(Grammar grammar,
                                     std::shared_ptr<const GrammarVocabulary> vocab,
                                     ConstraintLimits limits)
    : grammar_(std::move(grammar)),
      vocab_(std::move(vocab)),
      limits_(limits),
      arena_(grammar_, limits.max_stacks, limits.max_expansion),
      set_keeps_classes_(grammar_.byte_sets.size() + 1, -1) {
  bind_tokens();
  // The sentinel: a byte set that takes no byte, in no rule.
  grammar_.byte_sets.push_back(ByteSet{});
  const auto pos = uint32_t(grammar_.elements.size());
  grammar_.elements.push_back({ElementKind::Bytes, uint32_t(grammar_.byte_sets.size() - 1)});
  grammar_.elements.push_back({ElementKind::End, 0});
  std::vector<uint32_t> out;
  arena_.expand(pos, kEmptyStack, out);
  sentinel_ = out.at(0);
  intern_set({});
}

namespace {
constexpr uint32_t kUnknownSet = 0xFFFFFFFF;
}  // namespace

void GrammarConstraint::bind_tokens() {
  grammar_.token_ids.assign(grammar_.tokens.size(), -1);
  for (size_t i = 0; i < grammar_.tokens.size(); ++i) {
    const std::string& ref = grammar_.tokens[i];
    int64_t id = -1;
    if (ref.size() > 3 && ref[1] == '[') {
      // The parser let only <[digits]> through; rules from the wire are checked again.
      const std::string digits = ref.substr(2, ref.size() - 4);
      if (digits.empty() || digits.size() > 9 ||
          digits.find_first_not_of("0123456789") != std::string::npos)
        throw GrammarError("grammar: token reference '" + ref + "' is not <[digits]>");
      id = std::stoll(digits);
    } else if (const auto it = vocab_->named_tokens.find(ref); it != vocab_->named_tokens.end()) {
      id = it->second;
    } else {
      throw GrammarError("grammar: token reference '" + ref +
                         "' names no single token of this vocabulary");
    }
    if (id < 0 || size_t(id) >= vocab_->n_vocab())
      throw GrammarError("grammar: token reference '" + ref + "' is past the vocabulary (" +
                         std::to_string(vocab_->n_vocab()) + " tokens)");
    grammar_.token_ids[i] = int32_t(id);
  }
}

uint32_t GrammarConstraint::intern_set(const std::vector<uint32_t>& stacks) const {
  const auto [it, added] = set_ids_.emplace(stacks, uint32_t(sets_.size()));
  if (added) {
    sets_.push_back(stacks);
    rows_.emplace_back();
    cut_ends_.push_back(std::binary_search(stacks.begin(), stacks.end(), sentinel_));
    whole_classes_.push_back(keeps_classes(stacks));
  }
  return it->second;
}

uint8_t GrammarConstraint::keeps_classes(const std::vector<uint32_t>& stacks) const {
  uint8_t bits = 0xFF;
  for (uint32_t id : stacks) {
    if (id == kEmptyStack || is_token_element(arena_.top(id).kind)) continue;  // takes no byte
    const uint32_t set = grammar_.elements[arena_.node(id).pos].value;
    int16_t& known = set_keeps_classes_[set];
    if (known < 0) {
      known = 0;
      for (size_t k = 0; k < vocab_->class_tries.size(); ++k)
        if (vocab_->class_tries[k].classes().keeps_whole(grammar_.byte_sets[set]))
          known = int16_t(known | (1 << k));
    }
    bits &= uint8_t(known);
  }
  return bits;
}

// Set ids live only within one call, so the tables may start over between calls.
void GrammarConstraint::bound_sets() const {
  if (sets_.size() < limits_.max_cached_sets) return;
  sets_.clear();
  set_ids_.clear();
  rows_.clear();
  cut_ends_.clear();
  whole_classes_.clear();
  intern_set({});
}

uint32_t GrammarConstraint::step(uint32_t set, uint8_t b) const {
  if (!rows_[set]) {
    rows_[set] = std::make_unique<Row>();
    rows_[set]->fill(kUnknownSet);
  }
  uint32_t& next = (*rows_[set])[b];
  if (next == kUnknownSet) {
    arena_.advance(sets_[set], b, scratch_);
    next = intern_set(scratch_);
  }
  return next;
}

std::vector<uint32_t> GrammarConstraint::initial_stacks() const {
  std::lock_guard lock(mu_);
  return arena_.initial();
}

std::vector<uint32_t> GrammarConstraint::advance(std::span<const uint32_t> from,
                                                 std::string_view bytes) const {
  std::lock_guard lock(mu_);
  bound_sets();
  uint32_t set = intern_set(std::vector<uint32_t>(from.begin(), from.end()));
  for (char c : bytes) {
    set = step(set, uint8_t(c));
    if (set == 0) break;
  }
  return sets_[set];
}

std::vector<uint32_t> GrammarConstraint::advance_token(std::span<const uint32_t> from,
                                                       int32_t token) const {
  std::vector<uint32_t> out;
  if (token < 0 || size_t(token) >= vocab_->n_vocab()) return out;
  const std::string& bytes = vocab_->token_bytes[size_t(token)];
  if (!bytes.empty()) out = advance(from, bytes);
  std::lock_guard lock(mu_);
  const bool end = vocab_->is_end(token);
  for (uint32_t id : from) {
    if (id == kEmptyStack || !is_token_element(arena_.top(id).kind)) continue;
    const Element& e = arena_.top(id);
    const bool named = grammar_.token_ids[e.value] == token;
    if ((e.kind == ElementKind::Token && named) ||
        (e.kind == ElementKind::NotToken && !named && !end))
      arena_.expand(arena_.node(id).pos + 1, arena_.node(id).parent, out);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// A stack topped by a token element: that token, or every token but it and
// the end tokens (those only where the grammar is complete).
std::shared_ptr<const TokenMask> GrammarConstraint::token_mask(const Element& top) const {
  const int32_t id = grammar_.token_ids[top.value];
  const size_t n = vocab_->n_vocab();
  auto mask = std::make_shared<TokenMask>((n + 63) / 64, 0);
  if (top.kind == ElementKind::Token) {
    mask_set(*mask, id);
    return mask;
  }
  for (size_t w = 0; w < mask->size(); ++w) (*mask)[w] = ~uint64_t{0};
  if (n % 64 != 0) mask->back() = (uint64_t{1} << (n % 64)) - 1;
  (*mask)[size_t(id) >> 6] &= ~(uint64_t{1} << (id & 63));
  for (int32_t e : vocab_->end_ids)
    if (e >= 0 && size_t(e) < n) (*mask)[size_t(e) >> 6] &= ~(uint64_t{1} << (e & 63));
  return mask;
}

std::shared_ptr<const TokenMask> GrammarConstraint::allowed(
    std::span<const uint32_t> stacks) const {
  std::lock_guard lock(mu_);
  auto with_ends = [&](TokenMask& m) {
    for (int32_t e : vocab_->end_ids)
      if (e >= 0 && size_t(e) < vocab_->n_vocab()) mask_set(m, e);
  };
  if (stacks.size() == 1 && stacks[0] != kEmptyStack) return stack_mask(stacks[0]);
  auto out = std::make_shared<TokenMask>((vocab_->n_vocab() + 63) / 64, 0);
  for (uint32_t s : stacks) {
    if (s == kEmptyStack) {
      with_ends(*out);
      continue;
    }
    const TokenMask& m = *stack_mask(s);
    for (size_t i = 0; i < out->size(); ++i) (*out)[i] |= m[i];
  }
  return out;
}

std::shared_ptr<const TokenMask> GrammarConstraint::stack_mask(uint32_t stack) const {
  const auto hit = masks_.find(stack);
  if (hit != masks_.end()) return hit->second;
  if (is_token_element(arena_.top(stack).kind)) {
    auto mask = token_mask(arena_.top(stack));
    if (masks_.size() >= limits_.max_cached_masks) masks_.clear();
    masks_.emplace(stack, mask);
    return mask;
  }
  bound_sets();
  uint32_t below = kEmptyStack;
  const uint32_t cut = arena_.cut(stack, limits_.cut_depth, sentinel_, below);
  const std::shared_ptr<const StackPrefixMask> prefix = prefix_mask(cut);
  auto mask = std::make_shared<TokenMask>(prefix->accepted);
  if (below != kEmptyStack && !prefix->roots.empty()) {
    // Where the cut part ends, the stack beneath it goes on.
    std::vector<uint32_t> rest;
    arena_.expand(arena_.node(below).pos, arena_.node(below).parent, rest);
    std::sort(rest.begin(), rest.end());
    rest.erase(std::unique(rest.begin(), rest.end()), rest.end());
    const uint32_t set = intern_set(rest);
    for (uint32_t root : prefix->roots) walk(vocab_->trie.node(root), set, *mask);
  }
  if (masks_.size() >= limits_.max_cached_masks) masks_.clear();
  masks_.emplace(stack, mask);
  return mask;
}

std::shared_ptr<const StackPrefixMask> GrammarConstraint::prefix_mask(uint32_t cut) const {
  const auto hit = prefix_masks_.find(cut);
  if (hit != prefix_masks_.end()) return hit->second;
  const std::string key = state_key(grammar_, arena_, cut, sentinel_);
  std::shared_ptr<const StackPrefixMask> found = vocab_->prefix_masks.find(key);
  if (!found) {
    auto made = std::make_shared<StackPrefixMask>();
    made->accepted.assign((vocab_->n_vocab() + 63) / 64, 0);
    const uint32_t start = intern_set({cut});
    const uint8_t whole = limits_.class_walks ? whole_classes_[start] : 0;
    if (whole != 0) {
      const size_t k = size_t(__builtin_ctz(whole));
      const ClassTrie& ct = vocab_->class_tries[k];
      walk_prefix_classes(ct, k, ct.trie().root(), start, *made);
    } else {
      walk_prefix(vocab_->trie.root(), start, *made);
    }
    vocab_->prefix_masks.add(key, made);
    found = std::move(made);
  }
  if (prefix_masks_.size() >= limits_.max_cached_masks) prefix_masks_.clear();
  prefix_masks_.emplace(cut, found);
  return found;
}

// As walk(), and where the cut part may end (the set holds the sentinel)
// the node is a root: the stack beneath decides the tokens below it.
void GrammarConstraint::walk_prefix(const TokenTrie::Node& node, uint32_t set,
                                    StackPrefixMask& out) const {
  for (const TokenTrie::Node& child : vocab_->trie.children(node)) {
    const uint32_t next = step(set, child.byte);
    if (next == 0) continue;
    for (int32_t t : vocab_->trie.tokens(child)) mask_set(out.accepted, t);
    if (cut_ends_[next]) {
      out.roots.push_back(vocab_->trie.index(child));
      if (sets_[next].size() == 1) continue;  // only the sentinel: nothing more to walk
    }
    if (child.child_begin != child.child_end) walk_prefix(child, next, out);
  }
}

// As walk_prefix() over class node `node`, whose set keeps classes whole:
// each class's representative byte stands for the class. Below a set that
// splits a class, the walk goes on over the byte nodes the class node stands for.
void GrammarConstraint::walk_prefix_classes(const ClassTrie& ct, size_t k,
                                            const TokenTrie::Node& node, uint32_t set,
                                            StackPrefixMask& out) const {
  for (const TokenTrie::Node& child : ct.trie().children(node)) {
    const uint32_t next = step(set, ct.classes().representative[child.byte]);
    if (next == 0) continue;
    for (int32_t t : ct.trie().tokens(child)) mask_set(out.accepted, t);
    const std::span<const uint32_t> real = ct.real_nodes(child);
    if (cut_ends_[next]) {
      out.roots.insert(out.roots.end(), real.begin(), real.end());
      if (sets_[next].size() == 1) continue;
    }
    if (child.child_begin == child.child_end) continue;
    if ((whole_classes_[next] >> k) & 1) {
      walk_prefix_classes(ct, k, child, next, out);
    } else {
      for (uint32_t r : real) walk_prefix(vocab_->trie.node(r), next, out);
    }
  }
}

// `set`: the stacks after the node's bytes. Tokens end where any stack
// survives; a child is walked only if some stack takes its byte.
void GrammarConstraint::walk(const TokenTrie::Node& node, uint32_t set, TokenMask& mask) const {
  for (const TokenTrie::Node& child : vocab_->trie.children(node)) {
    const uint32_t next = step(set, child.byte);
    if (next == 0) continue;
    for (int32_t t : vocab_->trie.tokens(child)) mask_set(mask, t);
    if (child.child_begin != child.child_end) walk(child, next, mask);
  }
}

size_t GrammarConstraint::stack_count() const {
  std::lock_guard lock(mu_);
  return arena_.size();
}

size_t GrammarConstraint::cached_masks() const {
  std::lock_guard lock(mu_);
  return masks_.size();
}

}  // namespace kvforge
