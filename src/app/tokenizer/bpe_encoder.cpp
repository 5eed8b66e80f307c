#include "app/tokenizer/bpe_encoder.h"

#include <algorithm>
#include <optional>
#include <string>

#include "app/tokenizer/pair_merge.h"
#include "app/tokenizer/spm_encoder.h"
#include "app/tokenizer/tokenizer_error.h"
#include "app/tokenizer/utf8.h"

namespace kvforge {

namespace {

// A run of the word that is currently one token. Merged-away symbols keep
// their slot with id == -2; prev/next link the live ones (-1 at the ends).
struct Symbol {
  int32_t prev;
  int32_t next;
  int32_t id;  // -1: a character with no token of its own
  uint32_t start;
  uint32_t len;
};

constexpr int32_t kMergedAway = -2;

struct Candidate {
  int32_t rank;
  int32_t left;
  int32_t right;
  int32_t left_id;  // ids when queued: detect stale entries
  int32_t right_id;
  int32_t result;
};

struct LowerPriority {
  bool operator()(const Candidate& a, const Candidate& b) const {
    if (a.rank != b.rank) return a.rank > b.rank;
    return a.left > b.left;  // same rank: leftmost first
  }
};

}  // namespace

BpeEncoder::BpeEncoder(const Vocabulary& vocab, const TokenIndex& index, BpeOptions options)
    : vocab_(vocab),
      index_(index),
      options_(options),
      byte_tokens_(byte_piece_tokens(vocab, index)),
      merges_(vocab.merges.size()) {
  std::string joined;
  for (size_t rank = 0; rank < vocab.merges.size(); ++rank) {
    const std::string& line = vocab.merges[rank];
    // Neither spelling has a raw space in a token, so the first one separates.
    const size_t space = line.find(' ', 1);
    if (space == std::string::npos) {
      throw TokenizerError(vocab.source + ": tokenizer.ggml.merges[" + std::to_string(rank) +
                           "] = '" + line + "' is not 'left right'");
    }
    const std::string_view left(line.data(), space);
    const std::string_view right(line.data() + space + 1, line.size() - space - 1);
    joined.assign(left).append(right);
    const int32_t left_id = index.find(left);
    const int32_t right_id = index.find(right);
    const int32_t result = index.find(joined);
    // A merge whose parts or result are not tokens can never apply to a
    // tokenization that only holds tokens; skipping it changes nothing.
    if (left_id < 0 || right_id < 0 || result < 0) continue;
    merges_.insert(left_id, right_id, MergeRule{static_cast<int32_t>(rank), result});
  }
}

void BpeEncoder::append_unmapped_char(std::string_view ch, std::vector<int32_t>& out) const {
  const auto has_byte_token = [&](char c) { return byte_tokens_[static_cast<uint8_t>(c)] >= 0; };
  if (options_.byte_fallback && std::all_of(ch.begin(), ch.end(), has_byte_token)) {
    for (char c : ch) out.push_back(byte_tokens_[static_cast<uint8_t>(c)]);
    return;
  }
  if (vocab_.unk_id >= 0) {
    out.push_back(vocab_.unk_id);
    return;
  }
  throw TokenizerError(vocab_.source + ": the character '" + std::string(ch) +
                       "' has no token, no byte tokens and there is no UNK token");
}

void BpeEncoder::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (options_.ignore_merges) {
    const int32_t whole = index_.find(word);
    if (whole >= 0 && vocab_.type_of(whole) != TokenType::Control) {
      out.push_back(whole);
      return;
    }
  }

  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  for (size_t pos = 0; pos < word.size();) {
    size_t len = valid_utf8_sequence_at(word, pos);
    if (len == 0) len = 1;
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({index - 1, index + 1, index_.find(word.substr(pos, len)),
                       static_cast<uint32_t>(pos), static_cast<uint32_t>(len)});
    pos += len;
  }
  symbols.back().next = -1;

  merge_best_pairs<Candidate, LowerPriority>(
      symbols,
      [&](int32_t left, int32_t right) -> std::optional<Candidate> {
        if (symbols[left].id < 0 || symbols[right].id < 0) return std::nullopt;
        const MergeRule* rule = merges_.find(symbols[left].id, symbols[right].id);
        if (rule == nullptr) return std::nullopt;
        return Candidate{rule->rank,        left,        right, symbols[left].id,
                         symbols[right].id, rule->result};
      },
      [&](const Candidate& top) {
        return symbols[top.left].id != top.left_id || symbols[top.right].id != top.right_id;
      },
      [&](const Candidate& top) {
        Symbol& left = symbols[top.left];
        Symbol& right = symbols[top.right];
        left.id = top.result;
        left.len += right.len;
        right.id = kMergedAway;
      });

  for (int32_t i = 0; i >= 0; i = symbols[i].next) {
    if (symbols[i].id >= 0) {
      out.push_back(symbols[i].id);
    } else {
      append_unmapped_char(word.substr(symbols[i].start, symbols[i].len), out);
    }
  }
}

}  // namespace kvforge
