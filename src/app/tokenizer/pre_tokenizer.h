// Regex pre-tokenization of byte-level BPE: text is cut into words before
// BPE, and merges never cross a word boundary.
//
// The patterns are those of the reference tokenizers (Hugging Face
// tokenizer.json "Split" pre-tokenizers / OpenAI tiktoken), selected by
// tokenizer.ggml.pre. They use \p{L}, \p{N} and Unicode \s, so they run on
// PCRE2 in UTF + UCP mode. Text between matches also becomes a word
// (Hugging Face "Isolated" behaviour), so the words always cover the text.
#pragma once

#include <memory>
#include <optional>
#include <string_view>
#include <vector>

namespace kvforge {

enum class PreTokenizerKind {
  Gpt2,    // "gpt-2", "default", "phi-2": letters, digits, punctuation runs, contractions
  Llama3,  // "llama-bpe", "llama3", "llama-v3": digits in groups of up to 3, case-free contractions
  Qwen2,   // "qwen2", "deepseek-r1-qwen": as LLaMA-3 but every digit alone
  Qwen35,  // "qwen35": as Qwen2 with combining marks (\p{M}) inside letter runs
  Gpt4o,   // "gpt-4o", "llama4" (o200k): words split at lower-to-upper case changes
  // Runs of newlines and runs of anything else: the only split of Gemma 4's
  // vocabulary (tokenizer.ggml.model "gemma4", which has no tokenizer.ggml.pre).
  NewlineRuns,
};

// nullopt for a name this tokenizer does not know.
std::optional<PreTokenizerKind> pre_tokenizer_kind(std::string_view pre);
std::string_view pre_tokenizer_pattern(PreTokenizerKind kind);
// LLaMA-3 style vocabularies expect BOS even when GGUF lacks add_bos_token.
bool pre_tokenizer_wants_bos(std::string_view pre);

class PreTokenizer {
 public:
  // Compiles `pattern` (JIT when available). Throws TokenizerError on a bad pattern.
  explicit PreTokenizer(std::string_view pattern);
  explicit PreTokenizer(PreTokenizerKind kind) : PreTokenizer(pre_tokenizer_pattern(kind)) {}
  ~PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;

  // Appends the words of `text` (views into it, in order, covering it).
  // `text` must be valid UTF-8 (checked by the caller). Thread-safe.
  void split(std::string_view text, std::vector<std::string_view>& words) const;

 private:
  struct Compiled;
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace kvforge
