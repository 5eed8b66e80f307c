#include "app/tokenizer/spm_encoder.h"

#include <cstdio>
#include <optional>
#include <string>
#include <unordered_map>

#include "app/tokenizer/pair_merge.h"
#include "app/tokenizer/tokenizer_error.h"
#include "app/tokenizer/utf8.h"

namespace kvforge {

namespace {

// A run of the text that is currently one symbol. Merged-away symbols keep
// their slot with len == 0; prev/next link the live ones (-1 at the ends).
struct Symbol {
  int32_t prev;
  int32_t next;
  uint32_t start;
  uint32_t len;
};

struct Candidate {
  float score;
  int32_t left;
  int32_t right;
  uint32_t len;   // bytes of left + right when queued: detects stale entries
  int32_t piece;  // id of the merged piece
};

struct LowerPriority {
  bool operator()(const Candidate& a, const Candidate& b) const {
    if (a.score != b.score) return a.score < b.score;
    return a.left > b.left;  // equal scores: leftmost first
  }
};

// One symbol per UTF-8 character of a non-empty text, linked in order.
std::vector<Symbol> character_symbols(std::string_view text) {
  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    size_t len = valid_utf8_sequence_at(text, pos);
    if (len == 0) len = 1;  // callers validate; never loop forever on bad input anyway
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back(
        {index - 1, index + 1, static_cast<uint32_t>(pos), static_cast<uint32_t>(len)});
    pos += len;
  }
  symbols.back().next = -1;
  return symbols;
}

// Symbols that became an unused piece: span_key(start, len) -> length of their left half.
using UnusedSplits = std::unordered_map<uint64_t, uint32_t>;
uint64_t span_key(uint32_t start, uint32_t len) { return (uint64_t{start} << 32) | len; }

// Calls piece(start, len) for each final symbol, left to right, an unused
// piece split back into its halves (depth-first).
template <typename Piece>
void for_each_piece(const std::vector<Symbol>& symbols, const UnusedSplits& unused_splits,
                    const Piece& piece) {
  std::vector<std::pair<uint32_t, uint32_t>> stack;
  for (int32_t i = 0; i >= 0; i = symbols[i].next) {
    stack.push_back({symbols[i].start, symbols[i].len});
    while (!stack.empty()) {
      const auto [start, len] = stack.back();
      stack.pop_back();
      const auto split = unused_splits.find(span_key(start, len));
      if (split != unused_splits.end()) {
        stack.push_back({start + split->second, len - split->second});
        stack.push_back({start, split->second});
        continue;
      }
      piece(start, len);
    }
  }
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

int parse_byte_piece(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  const int hi = hex_value(text[3]);
  const int lo = hex_value(text[4]);
  if (hi < 0 || lo < 0) return -1;
  return hi * 16 + lo;
}

std::array<int32_t, 256> byte_piece_tokens(const Vocabulary& vocab, const TokenIndex& index) {
  std::array<int32_t, 256> ids;
  ids.fill(-1);
  for (int byte = 0; byte < 256; ++byte) {
    char spelling[8];
    std::snprintf(spelling, sizeof(spelling), "<0x%02X>", byte);
    const int32_t id = index.find(spelling);
    if (id >= 0 && vocab.type_of(id) == TokenType::Byte) ids[byte] = id;
  }
  return ids;
}

SpmEncoder::SpmEncoder(const Vocabulary& vocab, const TokenIndex& index)
    : vocab_(vocab), index_(index), byte_tokens_(byte_piece_tokens(vocab, index)) {}

int32_t SpmEncoder::mergeable_piece(std::string_view text) const {
  const int32_t id = index_.find(text);
  if (id < 0) return -1;
  switch (vocab_.type_of(id)) {
    case TokenType::Undefined:
    case TokenType::Normal:
    case TokenType::UserDefined:
    case TokenType::Unused:
      return id;
    default:
      return -1;
  }
}

void SpmEncoder::append_piece_or_bytes(std::string_view text, std::vector<int32_t>& out) const {
  const int32_t id = mergeable_piece(text);
  if (id >= 0) {
    out.push_back(id);
    return;
  }
  bool all_bytes_known = true;
  for (char c : text)
    all_bytes_known = all_bytes_known && byte_tokens_[static_cast<uint8_t>(c)] >= 0;
  if (all_bytes_known) {
    for (char c : text) out.push_back(byte_tokens_[static_cast<uint8_t>(c)]);
  } else if (vocab_.unk_id >= 0) {
    out.push_back(vocab_.unk_id);  // the whole character, as SentencePiece does without bytes
  } else {
    throw TokenizerError(vocab_.source + ": '" + std::string(text) +
                         "' has no piece, no byte pieces and there is no UNK token");
  }
}

void SpmEncoder::encode(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  std::vector<Symbol> symbols = character_symbols(text);
  UnusedSplits unused_splits;
  merge_best_pairs<Candidate, LowerPriority>(
      symbols,
      [&](int32_t left, int32_t right) -> std::optional<Candidate> {
        const uint32_t len = symbols[left].len + symbols[right].len;
        const int32_t id = mergeable_piece(text.substr(symbols[left].start, len));
        if (id < 0) return std::nullopt;
        return Candidate{vocab_.score_of(id), left, right, len, id};
      },
      [&](const Candidate& top) {  // one side changed since this pair was queued
        const Symbol& left = symbols[top.left];
        const Symbol& right = symbols[top.right];
        return left.len == 0 || right.len == 0 || left.len + right.len != top.len;
      },
      [&](const Candidate& top) {
        Symbol& left = symbols[top.left];
        Symbol& right = symbols[top.right];
        if (vocab_.type_of(top.piece) == TokenType::Unused) {
          unused_splits[span_key(left.start, top.len)] = left.len;
        }
        left.len += right.len;
        right.len = 0;
      });
  for_each_piece(symbols, unused_splits, [&](uint32_t start, uint32_t len) {
    append_piece_or_bytes(text.substr(start, len), out);
  });
}

}  // namespace kvforge
