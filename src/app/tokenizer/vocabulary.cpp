#include "app/tokenizer/vocabulary.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "app/tokenizer/tokenizer_error.h"

namespace kvforge {

namespace {

void check_id(const Vocabulary& vocab, int32_t id, const char* what) {
  if (id < -1 || id >= vocab.size()) {
    throw TokenizerError(vocab.source + ": " + what + " " + std::to_string(id) +
                         " is outside the vocabulary [0, " + std::to_string(vocab.size()) + ")");
  }
}

void check_size(const Vocabulary& vocab, size_t got, const char* what) {
  if (got != 0 && got != vocab.tokens.size()) {
    throw TokenizerError(vocab.source + ": " + what + " has " + std::to_string(got) +
                         " entries, expected " + std::to_string(vocab.tokens.size()) +
                         " (one per token)");
  }
}

}  // namespace

void validate_vocabulary(const Vocabulary& vocab) {
  if (vocab.tokens.empty()) throw TokenizerError(vocab.source + ": the vocabulary has no tokens");
  if (vocab.tokens.size() > static_cast<size_t>(INT32_MAX)) {
    throw TokenizerError(vocab.source + ": too many tokens (" +
                         std::to_string(vocab.tokens.size()) + ")");
  }
  check_size(vocab, vocab.scores.size(), "tokenizer.ggml.scores");
  // The SentencePiece merge queue orders by score: a NaN orders nothing.
  for (size_t i = 0; i < vocab.scores.size(); ++i) {
    if (std::isnan(vocab.scores[i])) {
      throw TokenizerError(vocab.source + ": tokenizer.ggml.scores[" + std::to_string(i) +
                           "] = nan, expected a number");
    }
  }
  check_size(vocab, vocab.types.size(), "tokenizer.ggml.token_type");
  for (size_t i = 0; i < vocab.types.size(); ++i) {
    const auto t = static_cast<int32_t>(vocab.types[i]);
    if (t < 0 || t > static_cast<int32_t>(TokenType::Byte)) {
      throw TokenizerError(vocab.source + ": tokenizer.ggml.token_type[" + std::to_string(i) +
                           "] = " + std::to_string(t) + ", expected 0..6");
    }
  }
  check_id(vocab, vocab.bos_id, "BOS id");
  check_id(vocab, vocab.eos_id, "EOS id");
  check_id(vocab, vocab.eot_id, "EOT id");
  check_id(vocab, vocab.eom_id, "EOM id");
  check_id(vocab, vocab.unk_id, "UNK id");
  check_id(vocab, vocab.pad_id, "PAD id");
  for (int32_t id : vocab.lstrip_tokens) check_id(vocab, id, "lstrip token");
  for (int32_t id : vocab.rstrip_tokens) check_id(vocab, id, "rstrip token");
  if (vocab.kind != VocabKind::SentencePiece && vocab.merges.empty()) {
    throw TokenizerError(vocab.source + ": BPE vocabulary without tokenizer.ggml.merges");
  }
}

}  // namespace kvforge
