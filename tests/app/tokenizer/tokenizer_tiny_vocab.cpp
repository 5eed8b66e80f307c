#include "tokenizer_tiny_vocab.h"

#include <cstdio>
#include <stdexcept>

#include "app/tokenizer/byte_unicode_map.h"

namespace kvforge::testing {

Vocabulary tiny_spm_vocab(const std::vector<PieceSpec>& pieces, bool with_bytes) {
  Vocabulary v;
  v.kind = VocabKind::SentencePiece;
  v.source = "tiny-spm";
  const auto add = [&](const std::string& text, float score, TokenType type) {
    v.tokens.push_back(text);
    v.scores.push_back(score);
    v.types.push_back(type);
  };
  add("<unk>", 0, TokenType::Unknown);
  add("<s>", 0, TokenType::Control);
  add("</s>", 0, TokenType::Control);
  for (const PieceSpec& p : pieces) add(p.text, p.score, p.type);
  if (with_bytes) {
    for (int b = 0; b < 256; ++b) {
      char spelling[8];
      std::snprintf(spelling, sizeof(spelling), "<0x%02X>", b);
      add(spelling, 0, TokenType::Byte);
    }
  }
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  v.add_bos = true;
  v.add_space_prefix = true;
  return v;
}

Vocabulary tiny_bpe_vocab(const std::vector<std::string>& extra,
                          const std::vector<std::string>& merges, std::string pre) {
  Vocabulary v;
  v.kind = VocabKind::ByteLevelBpe;
  v.source = "tiny-bpe";
  v.pre = std::move(pre);
  for (int b = 0; b < 256; ++b) {
    v.tokens.emplace_back(ByteUnicodeMap::instance().encode_byte(static_cast<uint8_t>(b)));
  }
  for (const std::string& t : extra) v.tokens.push_back(t);
  v.types.assign(v.tokens.size(), TokenType::Normal);
  v.merges = merges;
  return v;
}

std::vector<int32_t> ids_of(const Vocabulary& vocab, const std::vector<std::string>& texts) {
  std::vector<int32_t> ids;
  for (const std::string& t : texts) {
    int32_t found = -1;
    for (int32_t id = 0; id < vocab.size() && found < 0; ++id) {
      if (vocab.tokens[id] == t) found = id;
    }
    if (found < 0) throw std::runtime_error("test vocabulary has no token '" + t + "'");
    ids.push_back(found);
  }
  return ids;
}

}  // namespace kvforge::testing
