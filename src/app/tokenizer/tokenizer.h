// Text <-> token ids for LLaMA-family models, built from GGUF metadata.
//
// Three vocabulary kinds (tokenizer.ggml.model):
// - "llama": SentencePiece BPE (LLaMA-2, Phi-3, Mistral...). Spaces are
//   spelled U+2581 "▁", a "▁" is prefixed to text (add_space_prefix), pieces
//   merge by score, unknown characters fall back to <0xAB> byte tokens.
// - "gpt2": byte-level BPE (GPT-2, LLaMA-3, Qwen2...). A regex chosen by
//   tokenizer.ggml.pre cuts text into words, bytes are spelled as printable
//   characters, pieces merge by rank.
// - "gemma4": Gemma 4's BPE. Spaces are spelled "▁" (no prefix), text is cut
//   only into runs of newlines and runs of other characters, pieces merge by
//   rank over UTF-8 characters, unknown characters fall back to <0xAB> bytes.
// They reproduce the Hugging Face tokenizers of those models (test vectors in
// ../shared/testdata/vocab and llama.cpp's models/ folder).
//
// A Tokenizer is immutable and cheap to copy (shared state); all methods are
// thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "app/tokenizer/tokenizer_error.h"
#include "app/tokenizer/vocabulary.h"

namespace kvforge {

namespace gguf {
class GgufFile;
}

struct DecodeOptions {
  // Leave out tokens equal to bos_id (where BOS == EOS, as in GPT-2 and Qwen2, EOS too).
  bool skip_bos = true;
  bool render_special = false;  // control tokens (EOS, <|eot_id|>...) as their text instead of ""
  bool strip_space_prefix = true;  // drop the space add_space_prefix put before the first word
};

class Tokenizer {
 public:
  // Reads tokenizer.ggml.* (see vocabulary_loader.h). Throws TokenizerError.
  static Tokenizer from_gguf(const gguf::GgufFile& file);
  // Validates `vocab` (throws TokenizerError) and builds the lookup tables.
  static Tokenizer from_vocabulary(Vocabulary vocab);

  // `text` must be valid UTF-8 (TokenizerError naming the byte offset otherwise).
  // add_bos: start with BOS (pass add_bos() for the model's convention).
  // parse_special: control tokens written in the text ("<|eot_id|>") become
  // those tokens; otherwise they are tokenized as plain text. User-defined
  // tokens are always recognised.
  std::vector<int32_t> encode(std::string_view text, bool add_bos, bool parse_special) const;
  // As encode(), but stops early once more than max_tokens tokens are out
  // (checked after each pre-tokenized word, or each stretch of text between
  // special tokens for SentencePiece, whose merges span words): a result
  // longer than max_tokens is then cut short. For servers that refuse prompts
  // longer than the context without paying for the whole text.
  std::vector<int32_t> encode(std::string_view text, bool add_bos, bool parse_special,
                              size_t max_tokens) const;
  // The most bytes of input text one token stands for (its piece, or its
  // spelling for special tokens the text may name): a text of n bytes is at
  // least n / max_token_bytes() tokens.
  size_t max_token_bytes() const;

  // The bytes one token stands for: "▁" -> " " and <0xAB> -> byte (SentencePiece),
  // byte-level characters -> bytes (BPE). May be part of a UTF-8 character.
  // Control/unknown tokens give "" unless render_special. Throws on a bad id.
  std::string token_to_piece(int32_t id, bool render_special = false) const;
  // Whole sequence -> valid UTF-8 (ill-formed bytes become U+FFFD).
  std::string decode(std::span<const int32_t> ids, const DecodeOptions& options = {}) const;

  // The token's spelling in the vocabulary ("▁Hello", "ĠHello", "<|eot_id|>").
  const std::string& token_text(int32_t id) const;
  // The id of the token spelled exactly `text`, or -1.
  int32_t find_token(std::string_view text) const;
  TokenType token_type(int32_t id) const;

  int32_t n_vocab() const;
  VocabKind kind() const;
  int32_t bos_id() const;  // -1 when absent
  int32_t eos_id() const;
  int32_t eot_id() const;
  int32_t unk_id() const;
  int32_t pad_id() const;
  bool add_bos() const;
  bool add_space_prefix() const;
  // End of generation: EOS, EOT, EOM and end-of-turn tokens such as <|eot_id|>,
  // <|im_end|>, <|end|> found in the vocabulary.
  bool is_eog(int32_t id) const;
  const std::vector<int32_t>& eog_ids() const;
  const Vocabulary& vocabulary() const;

 private:
  struct State;
  explicit Tokenizer(std::shared_ptr<const State> state);
  std::shared_ptr<const State> state_;
};

// One token with its decoded text, for displays such as `kvforge tokenize`.
struct TokenPiece {
  int32_t id;
  std::string piece;  // token_to_piece(id, /*render_special=*/true); may be a partial character
};
std::vector<TokenPiece> tokenize_with_pieces(const Tokenizer& tokenizer, std::string_view text,
                                             bool add_bos, bool parse_special);

}  // namespace kvforge
