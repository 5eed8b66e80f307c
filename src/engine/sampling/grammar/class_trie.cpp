#include "engine/sampling/grammar/class_trie.h"

#include <map>
#include <utility>

#include "engine/sampling/grammar/utf8_ranges.h"

namespace kvforge {
namespace {

std::vector<std::string> class_spellings(const std::vector<std::string>& token_bytes,
                                         const ByteClasses& classes) {
  std::vector<std::string> out(token_bytes.size());
  for (size_t t = 0; t < token_bytes.size(); ++t) {
    out[t].resize(token_bytes[t].size());
    for (size_t i = 0; i < token_bytes[t].size(); ++i)
      out[t][i] = char(classes.of[uint8_t(token_bytes[t][i])]);
  }
  return out;
}

// The child of class node `parent` on class `c` (children are sorted by class).
uint32_t class_child(const TokenTrie& trie, uint32_t parent, uint8_t c) {
  const auto kids = trie.children(trie.node(parent));
  size_t lo = 0, hi = kids.size();
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (kids[mid].byte < c)
      lo = mid + 1;
    else
      hi = mid;
  }
  return trie.index(kids[lo]);
}

// Bytes with equal signatures share a class; classes are numbered by their lowest byte.
ByteClasses classes_of(const std::array<uint32_t, 256>& sig) {
  ByteClasses out;
  std::map<uint32_t, uint8_t> ids;
  for (int b = 0; b < 256; ++b) {
    const auto [it, added] = ids.emplace(sig[b], uint8_t(ids.size()));
    if (added) {
      out.members.emplace_back();
      out.representative.push_back(uint8_t(b));
    }
    out.of[b] = it->second;
    out.members[it->second].set(uint8_t(b));
  }
  return out;
}

}  // namespace

bool ByteClasses::keeps_whole(const ByteSet& set) const {
  for (const ByteSet& m : members) {
    bool some = false, all = true;
    for (size_t w = 0; w < 4; ++w) {
      const uint64_t in = set.bits[w] & m.bits[w];
      some |= in != 0;
      all &= in == m.bits[w];
    }
    if (some && !all) return false;
  }
  return true;
}

ByteClasses json_text_classes() {
  // Refine one class by each byte set the lowering makes of the characters a
  // JSON string holds unescaped (grammar_lowering.cpp: their ASCII part is
  // one set, each multi-byte range one set per byte); then split off the
  // ASCII bytes they exclude.
  const auto text = normalize_ranges({{0x00, 0x1F}, {'"', '"'}, {'\\', '\\'}, {0x7F, 0x7F}}, true);
  std::vector<ByteSet> sets(1);
  for (const ByteRangeSeq& seq : utf8_sequences(text)) {
    for (auto [lo, hi] : seq) {
      if (seq.size() == 1) {
        sets[0].set_range(lo, hi);
      } else {
        sets.emplace_back();
        sets.back().set_range(lo, hi);
      }
    }
  }
  std::array<uint32_t, 256> sig{};
  uint32_t n = 1;
  for (const ByteSet& set : sets) {
    std::map<uint32_t, uint32_t> renamed;
    for (int b = 0; b < 256; ++b) {
      if (!set.test(uint8_t(b))) continue;
      const auto [it, added] = renamed.emplace(sig[b], n);
      if (added) ++n;
      sig[b] = it->second;
    }
  }
  for (int b = 0; b < 0x80; ++b)
    if (b < 0x20 || b == '"' || b == '\\' || b == 0x7F) sig[b] = n++;
  return classes_of(sig);
}

ByteClasses word_classes() {
  std::array<uint32_t, 256> sig{};
  const ByteClasses text = json_text_classes();
  for (int b = 0; b < 256; ++b) {
    const bool letter = (b | 0x20) >= 'a' && (b | 0x20) <= 'z';
    const bool digit = b >= '0' && b <= '9';
    sig[b] = b >= 0x80 ? 0x200 + text.of[b] : letter ? 0x100 : digit ? 0x101 : uint32_t(b);
  }
  return classes_of(sig);
}

ClassTrie::ClassTrie(const TokenTrie& trie, const std::vector<std::string>& token_bytes,
                     ByteClasses classes)
    : classes_(std::move(classes)), trie_(class_spellings(token_bytes, classes_)) {
  // Parents come before children in both tries, so one pass in index order
  // maps every byte node to its class node.
  std::vector<uint32_t> class_of(trie.size(), 0);
  for (uint32_t i = 0; i < trie.size(); ++i)
    for (const TokenTrie::Node& kid : trie.children(trie.node(i)))
      class_of[trie.index(kid)] = class_child(trie_, class_of[i], classes_.of[kid.byte]);
  real_begin_.assign(trie_.size() + 1, 0);
  for (uint32_t c : class_of) ++real_begin_[c + 1];
  for (size_t i = 1; i < real_begin_.size(); ++i) real_begin_[i] += real_begin_[i - 1];
  real_.resize(trie.size());
  std::vector<uint32_t> fill(real_begin_.begin(), real_begin_.end() - 1);
  for (uint32_t i = 0; i < trie.size(); ++i) real_[fill[class_of[i]]++] = i;
}

}  // namespace kvforge
