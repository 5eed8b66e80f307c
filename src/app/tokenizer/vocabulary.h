// A tokenizer vocabulary as plain data, independent of where it came from
// (a GGUF file via load_vocabulary(), or a hand-built one in tests).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

namespace kvforge {

// tokenizer.ggml.model
enum class VocabKind {
  SentencePiece,  // "llama": score-driven BPE over characters, U+2581 for spaces, byte fallback
  ByteLevelBpe,   // "gpt2": rank-driven BPE over byte-level characters after a regex split
  // "gemma4": rank-driven BPE over raw UTF-8 characters in SentencePiece
  // spelling (U+2581 for spaces), split only into runs of newlines and runs
  // of other characters, with <0xAB> byte fallback; no space prefix.
  SpmStyleBpe,
};

// tokenizer.ggml.token_type, numbered as SentencePiece's piece types (+1).
enum class TokenType : int32_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,      // BOS, EOS, <|eot_id|>...: only recognised in text when parse_special
  UserDefined = 4,  // always matched as a whole in the text, never split
  Unused = 5,
  Byte = 6,  // SentencePiece byte fallback "<0xAB>"
};

struct Vocabulary {
  VocabKind kind = VocabKind::SentencePiece;
  std::string pre = "default";  // tokenizer.ggml.pre: which pre-tokenizer (ByteLevelBpe only)
  std::string source;           // where it was loaded from, for error messages

  std::vector<std::string> tokens;  // (n_vocab) id -> text in the vocabulary's own spelling
  std::vector<float> scores;        // (n_vocab) or empty: SentencePiece merge priority
  std::vector<TokenType> types;     // (n_vocab) or empty (= all Normal)
  std::vector<std::string> merges;  // ByteLevelBpe, SpmStyleBpe: "left right", rank = position

  // -1 when the vocabulary has no such token.
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t eot_id = -1;  // end of turn (<|eot_id|>, <|im_end|>, <|end|>)
  int32_t eom_id = -1;  // end of message (LLaMA-3.1 tool calls)
  int32_t unk_id = -1;
  int32_t pad_id = -1;

  bool add_bos = false;           // whether prompts should start with BOS
  bool add_space_prefix = false;  // SentencePiece: text starts with a space ("▁Hello")

  // Special tokens that swallow whitespace next to them when matched in
  // text (Hugging Face added-token "lstrip"/"rstrip"; GGUF does not store it).
  std::unordered_set<int32_t> lstrip_tokens;
  std::unordered_set<int32_t> rstrip_tokens;

  int32_t size() const { return static_cast<int32_t>(tokens.size()); }
  TokenType type_of(int32_t id) const { return types.empty() ? TokenType::Normal : types[id]; }
  float score_of(int32_t id) const { return scores.empty() ? 0.0f : scores[id]; }
};

// Throws TokenizerError when sizes disagree, ids are out of range, or the
// kind's required parts are missing. Called by Tokenizer before use.
void validate_vocabulary(const Vocabulary& vocab);

}  // namespace kvforge
