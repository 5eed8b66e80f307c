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

// (k < max_depth) the tokens of at most k bytes.
std::vector<TokenMask> masks_up_to(const std::vector<std::string>& bytes, size_t max_depth) {
  std::vector<std::vector<int32_t>> by_length(max_depth);
  for (size_t t = 0; t < bytes.size(); ++t)
    if (bytes[t].size() < max_depth) by_length[bytes[t].size()].push_back(int32_t(t));
  std::vector<TokenMask> out(max_depth, TokenMask((bytes.size() + 63) / 64, 0));
  for (size_t k = 1; k < max_depth; ++k) {
    out[k] = out[k - 1];
    for (int32_t t : by_length[k]) mask_set(out[k], t);
  }
  return out;
}

// out |= in, word by word (no aliasing, so the loop is vectorized).
void or_into(TokenMask& out, const TokenMask& in) {
  uint64_t* __restrict o = out.data();
  const uint64_t* __restrict i = in.data();
  for (size_t w = 0, n = out.size(); w < n; ++w) o[w] |= i[w];
}

// Walks up a bounded repetition from `at`, one shift at a time (at most
// `max_shifts`), to the nearest neighbour `known` has a mask for. `bytes`
// becomes the least shift size on the way: that neighbour agrees with `at` on
// every token of at most that many bytes. Null when none is known.
template <typename Shift, typename Known>
auto nearest_known(uint32_t at, size_t max_shifts, size_t& bytes, Shift shift, Known known)
    -> decltype(known(at)) {
  bytes = SIZE_MAX;
  for (size_t i = 0; i < max_shifts; ++i) {
    size_t b = 0;
    if ((at = shift(at, b)) == kEmptyStack) break;
    bytes = std::min(bytes, b);
    if (auto found = known(at)) return found;
  }
  return nullptr;
}

}  // namespace

GrammarVocabulary::GrammarVocabulary(std::vector<std::string> bytes, std::vector<int32_t> ends,
                                     std::unordered_map<std::string, int32_t> named)
    : token_bytes(without_ends(std::move(bytes), ends)),
      end_ids(std::move(ends)),
      named_tokens(std::move(named)),
      trie(token_bytes),
      class_tries{ClassTrie(trie, token_bytes, json_text_classes()),
                  ClassTrie(trie, token_bytes, word_classes())},
      tokens_up_to(masks_up_to(token_bytes, trie.max_depth())) {}

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
      masks_(limits.max_cached_masks),
      prefix_masks_(limits.max_cached_masks),
      light_(grammar_, limits.light_rule_bytes),
      unions_(limits.max_cached_unions),
      cut_sets_(limits.max_cached_cut_sets),
      set_keeps_classes_(grammar_.byte_sets.size() + 1, -1) {
  bind_tokens();
  shifts_ = repetition_shifts(grammar_);
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
// A top byte set this narrow (hex digits) spells few tokens alone.
constexpr size_t kNarrowTopBytes = 16;
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
  if (stacks.size() == 1 && stacks[0] != kEmptyStack) return stack_mask(stacks[0]);
  return union_mask(stacks);
}

std::shared_ptr<const TokenMask> GrammarConstraint::union_mask(
    std::span<const uint32_t> stacks) const {
  Stacks key(stacks.begin(), stacks.end());
  if (const auto* hit = unions_.find(key)) return *hit;
  auto out = std::make_shared<TokenMask>((vocab_->n_vocab() + 63) / 64, 0);
  // (node beneath the cut) -> the cuts standing on it: most stacks of a set
  // are never asked for alone, and the alternatives of one place (a string's
  // characters and its end) share the stack beneath, so each group costs one
  // prefix mask and one walk of its roots.
  std::map<uint32_t, Stacks> groups;
  for (uint32_t s : stacks) {
    if (s == kEmptyStack) {
      for (int32_t e : vocab_->end_ids)
        if (e >= 0 && size_t(e) < vocab_->n_vocab()) mask_set(*out, e);
      continue;
    }
    const auto* known = masks_.find(s);
    if (!known && !is_token_element(arena_.top(s).kind)) {
      uint32_t below = kEmptyStack;
      const uint32_t cut = cut_of(s, below);
      groups[limits_.group_cuts ? below : s].push_back(cut);
      continue;
    }
    or_into(*out, known ? **known : *stack_mask(s));
  }
  for (auto& [node, cuts] : groups) {
    uint32_t below = node;
    if (!limits_.group_cuts) cut_of(node, below);
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    add_cuts(cuts, below, *out);
  }
  unions_.add(std::move(key), out);
  return out;
}

// Cached, or computed and kept.
std::shared_ptr<const TokenMask> GrammarConstraint::stack_mask(uint32_t stack) const {
  if (const auto* hit = masks_.find(stack)) return *hit;
  std::shared_ptr<const TokenMask> mask;
  if (is_token_element(arena_.top(stack).kind)) {
    mask = token_mask(arena_.top(stack));
  } else {
    auto made = std::make_shared<TokenMask>((vocab_->n_vocab() + 63) / 64, 0);
    add_stack(stack, *made);
    mask = std::move(made);
  }
  keep_mask(stack, mask);
  return mask;
}

void GrammarConstraint::keep_mask(uint32_t stack, std::shared_ptr<const TokenMask> mask) const {
  masks_.add(stack, std::move(mask));
}

// `stack`'s cut (arena_.cut on the sentinel) and in `below` the node
// beneath it: computed once per stack.
uint32_t GrammarConstraint::cut_of(uint32_t stack, uint32_t& below) const {
  if (cuts_.size() <= stack) cuts_.resize(std::max<size_t>(stack + 1, cuts_.size() * 2), 0);
  uint64_t& known = cuts_[stack];
  if (known == 0) {
    const uint32_t cut = arena_.cut(stack, cut_depth(stack), sentinel_, below);
    known = uint64_t{cut} << 32 | below;
  }
  below = uint32_t(known);
  return uint32_t(known >> 32);
}

namespace {
// How many bytes element `e` takes: 0 unless a byte set.
size_t set_bytes(const Grammar& g, const Element& e) {
  if (e.kind != ElementKind::Bytes) return 0;
  size_t bytes = 0;
  for (uint64_t w : g.byte_sets[e.value].bits) bytes += size_t(__builtin_popcountll(w));
  return bytes;
}
}  // namespace

// The cut depth, or fewer nodes (at least 2) where the nodes beneath are of
// heavy rules and the cut part may end at few trie nodes (roots): where the
// last node kept resumes at a single byte (a string's close, the quote), or
// the top takes few bytes (a number's digits: few tokens are digits alone).
// A string's or a number's first character is then cut apart from the place
// holding it, so its prefix mask serves every such place.
size_t GrammarConstraint::cut_depth(uint32_t stack) const {
  const size_t depth = limits_.cut_depth;
  if (limits_.light_rule_bytes == 0 || depth <= 2) return depth;
  size_t light = 0;
  uint32_t last = kEmptyStack;
  for (uint32_t id = stack; id != kEmptyStack && light < depth; id = arena_.node(id).parent) {
    if (!light_.at(arena_.node(id).pos)) break;
    ++light, last = id;
  }
  if (light < 2 || light >= depth) return depth;
  const size_t top = set_bytes(grammar_, arena_.top(stack));
  const size_t end = set_bytes(grammar_, grammar_.elements[arena_.node(last).pos]);
  return end == 1 || (top >= 2 && top <= kNarrowTopBytes) ? light : depth;
}

// Adds to `out` the tokens `stack` allows (its top a byte set).
void GrammarConstraint::add_stack(uint32_t stack, TokenMask& out) const {
  uint32_t below = kEmptyStack;
  const uint32_t cut = cut_of(stack, below);
  add_cuts({cut}, below, out);
}

// Adds to `out` the tokens the stacks made of `cuts` (sorted, unique) on
// `below` allow: those a cut part accepts and, where one may end, those the
// stack beneath goes on with.
void GrammarConstraint::add_cuts(const Stacks& cuts, uint32_t below, TokenMask& out) const {
  bound_sets();
  const std::shared_ptr<const StackPrefixMask> prefix =
      cuts.size() == 1 ? prefix_mask(cuts[0]) : cuts_prefix(cuts);
  or_into(out, prefix->accepted);
  if (below == kEmptyStack || prefix->roots.empty()) return;
  std::vector<uint32_t> rest;
  arena_.expand(arena_.node(below).pos, arena_.node(below).parent, rest);
  std::sort(rest.begin(), rest.end());
  rest.erase(std::unique(rest.begin(), rest.end()), rest.end());
  const uint32_t set = intern_set(rest);
  for (uint32_t root : prefix->roots) walk(vocab_->trie.node(root), set, 0, out);
}

// The prefix mask of a set of cuts: the union of theirs (tokens and roots),
// kept by the set, so a place met again on another stack beneath costs one
// lookup.
std::shared_ptr<const StackPrefixMask> GrammarConstraint::cuts_prefix(const Stacks& cuts) const {
  if (const auto* hit = cut_sets_.find(cuts)) return *hit;
  auto made = std::make_shared<StackPrefixMask>();
  made->accepted.assign((vocab_->n_vocab() + 63) / 64, 0);
  for (uint32_t cut : cuts) {
    bound_sets();  // between walks: no set id is held across them
    const std::shared_ptr<const StackPrefixMask> one = prefix_mask(cut);
    or_into(made->accepted, one->accepted);
    made->roots.insert(made->roots.end(), one->roots.begin(), one->roots.end());
  }
  std::sort(made->roots.begin(), made->roots.end());
  made->roots.erase(std::unique(made->roots.begin(), made->roots.end()), made->roots.end());
  cut_sets_.add(cuts, made);
  return made;
}

// The cut's prefix mask: cached, or derived from the mask of a neighbour up
// a bounded repetition (the nearest this grammar has met: a string is
// entered at its top, so its later positions find one without a state key
// each), or walked whole.
std::shared_ptr<const StackPrefixMask> GrammarConstraint::prefix_mask(uint32_t cut) const {
  std::string key;
  if (auto known = known_prefix(cut, key)) return known;
  size_t bytes = SIZE_MAX;
  std::shared_ptr<const StackPrefixMask> base = nearest_known(
      cut, limits_.repetition_shifts ? limits_.max_shifts : 0, bytes,
      [&](uint32_t at, size_t& b) { return shifted(at, sentinel_, b); },
      [&](uint32_t at) -> std::shared_ptr<const StackPrefixMask> {
        const auto* hit = prefix_masks_.find(at);
        return hit ? *hit : nullptr;
      });
  std::shared_ptr<const StackPrefixMask> mask;
  if (base) {
    mask = shifted_prefix(cut, bytes, std::move(base));
  } else {
    auto made = std::make_shared<StackPrefixMask>();
    made->accepted.assign((vocab_->n_vocab() + 63) / 64, 0);
    walk_cut(cut, 0, *made);
    ++whole_walks_;
    mask = std::move(made);
  }
  keep_prefix(cut, key, mask);
  return mask;
}

// Cached for this grammar or, by its state key (filled in), for the vocabulary.
std::shared_ptr<const StackPrefixMask> GrammarConstraint::known_prefix(uint32_t cut,
                                                                       std::string& key) const {
  if (const auto* hit = prefix_masks_.find(cut)) return *hit;
  key = state_key(grammar_, arena_, cut, sentinel_);
  if (key.empty()) return nullptr;  // too large to share: this grammar's alone
  std::shared_ptr<const StackPrefixMask> found = vocab_->prefix_masks.find(key);
  if (found) prefix_masks_.add(cut, found);
  return found;
}

void GrammarConstraint::keep_prefix(uint32_t cut, const std::string& key,
                                    std::shared_ptr<const StackPrefixMask> mask) const {
  if (!key.empty()) vocab_->prefix_masks.add(key, mask);
  prefix_masks_.add(cut, std::move(mask));
}

// `stack` (down to `bottom`) with its topmost bounded-repetition node one
// repetition higher, and in `bytes` how long the tokens both treat alike may
// be (kEmptyStack: no such node).
uint32_t GrammarConstraint::shifted(uint32_t stack, uint32_t bottom, size_t& bytes) const {
  for (uint32_t id = stack; id != kEmptyStack && id != bottom; id = arena_.node(id).parent) {
    const uint32_t pos = arena_.node(id).pos;
    if (pos >= shifts_.size() || shifts_[pos].bytes == 0) continue;
    bytes = shifts_[pos].bytes;
    return arena_.with_pos(stack, id, shifts_[pos].pos);
  }
  return kEmptyStack;
}

// The cut's prefix mask from `base`, its neighbour's: the tokens and roots
// of at most `bytes` bytes from it, the deeper ones walked.
std::shared_ptr<const StackPrefixMask> GrammarConstraint::shifted_prefix(
    uint32_t cut, size_t bytes, std::shared_ptr<const StackPrefixMask> base) const {
  if (bytes >= vocab_->trie.max_depth()) return base;  // no token is longer
  auto made = std::make_shared<StackPrefixMask>();
  const TokenMask& shorter = vocab_->tokens_up_to[bytes];
  made->accepted.resize(shorter.size());
  for (size_t i = 0; i < shorter.size(); ++i) made->accepted[i] = base->accepted[i] & shorter[i];
  for (uint32_t r : base->roots)
    if (vocab_->trie.node(r).depth <= bytes) made->roots.push_back(r);
  walk_cut(cut, bytes, *made);
  return made;
}

// Adds the tokens `cut` accepts and the nodes where it may end, deeper than
// `past` bytes: over a class trie where its states keep the classes whole.
void GrammarConstraint::walk_cut(uint32_t cut, size_t past, StackPrefixMask& out) const {
  const uint32_t start = intern_set({cut});
  const uint8_t whole = limits_.class_walks ? whole_classes_[start] : 0;
  if (whole != 0) {
    const size_t k = size_t(__builtin_ctz(whole));
    const ClassTrie& ct = vocab_->class_tries[k];
    walk_prefix_classes(ct, k, ct.trie().root(), start, past, out);
  } else {
    walk_prefix(vocab_->trie.root(), start, past, out);
  }
}

// As walk(), and where the cut part may end (the set holds the sentinel)
// the node is a root: the stack beneath decides the tokens below it. Only
// tokens and roots deeper than `past` bytes are added.
void GrammarConstraint::walk_prefix(const TokenTrie::Node& node, uint32_t set, size_t past,
                                    StackPrefixMask& out) const {
  for (const TokenTrie::Node& child : vocab_->trie.children(node)) {
    if (child.height <= past) continue;
    const uint32_t next = step(set, child.byte);
    if (next == 0) continue;
    const bool deep = child.depth > past;
    if (deep)
      for (int32_t t : vocab_->trie.tokens(child)) mask_set(out.accepted, t);
    if (cut_ends_[next]) {
      if (deep) out.roots.push_back(vocab_->trie.index(child));
      if (sets_[next].size() == 1) continue;  // only the sentinel: nothing more to walk
    }
    if (child.child_begin != child.child_end) walk_prefix(child, next, past, out);
  }
}

// As walk_prefix() over class node `node`, whose set keeps classes whole:
// each class's representative byte stands for the class. Below a set that
// splits a class, the walk goes on over the byte nodes the class node stands for.
void GrammarConstraint::walk_prefix_classes(const ClassTrie& ct, size_t k,
                                            const TokenTrie::Node& node, uint32_t set, size_t past,
                                            StackPrefixMask& out) const {
  for (const TokenTrie::Node& child : ct.trie().children(node)) {
    if (child.height <= past) continue;
    const uint32_t next = step(set, ct.classes().representative[child.byte]);
    if (next == 0) continue;
    const bool deep = child.depth > past;
    if (deep)
      for (int32_t t : ct.trie().tokens(child)) mask_set(out.accepted, t);
    const std::span<const uint32_t> real = ct.real_nodes(child);
    if (cut_ends_[next]) {
      if (deep) out.roots.insert(out.roots.end(), real.begin(), real.end());
      if (sets_[next].size() == 1) continue;
    }
    if (child.child_begin == child.child_end) continue;
    if ((whole_classes_[next] >> k) & 1) {
      walk_prefix_classes(ct, k, child, next, past, out);
    } else {
      for (uint32_t r : real) walk_prefix(vocab_->trie.node(r), next, past, out);
    }
  }
}

// `set`: the stacks after the node's bytes. Tokens end where any stack
// survives; a child is walked only if some stack takes its byte. Only tokens
// deeper than `past` bytes are added.
void GrammarConstraint::walk(const TokenTrie::Node& node, uint32_t set, size_t past,
                             TokenMask& mask) const {
  for (const TokenTrie::Node& child : vocab_->trie.children(node)) {
    if (child.height <= past) continue;
    const uint32_t next = step(set, child.byte);
    if (next == 0) continue;
    if (child.depth > past)
      for (int32_t t : vocab_->trie.tokens(child)) mask_set(mask, t);
    if (child.child_begin != child.child_end) walk(child, next, past, mask);
  }
}

size_t GrammarConstraint::stack_count() const {
  std::lock_guard lock(mu_);
  return arena_.size();
}

size_t GrammarConstraint::whole_walks() const {
  std::lock_guard lock(mu_);
  return whole_walks_;
}

size_t GrammarConstraint::cached_masks() const {
  std::lock_guard lock(mu_);
  return masks_.size();
}

}  // namespace kvforge
