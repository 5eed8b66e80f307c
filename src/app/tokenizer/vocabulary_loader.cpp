#include "app/tokenizer/vocabulary_loader.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "app/tokenizer/pre_tokenizer.h"
#include "app/tokenizer/special_tokens.h"
#include "app/tokenizer/tokenizer_error.h"

namespace kvforge {

namespace {

VocabKind parse_kind(const gguf::GgufFile& file) {
  const std::string model = file.get_string("tokenizer.ggml.model");
  if (model == "llama") return VocabKind::SentencePiece;
  if (model == "gpt2") return VocabKind::ByteLevelBpe;
  throw TokenizerError(file.name() + ": tokenizer.ggml.model '" + model +
                       "' is not supported (expected 'llama' or 'gpt2')");
}

// -1 when absent or negative (some converters write -1 for "none").
int32_t optional_token_id(const gguf::GgufFile& file, const char* key, int32_t fallback) {
  if (!file.has(key)) return fallback;
  const int64_t id = file.get_i64(key);
  if (id < 0) return -1;
  if (id > INT32_MAX) {
    throw TokenizerError(file.name() + ": " + key + " = " + std::to_string(id) +
                         " is not a valid token id");
  }
  return static_cast<int32_t>(id);
}

std::vector<TokenType> read_types(const gguf::GgufFile& file) {
  std::vector<TokenType> types;
  if (!file.has("tokenizer.ggml.token_type")) return types;
  const std::vector<int32_t> raw = file.get_i32_array("tokenizer.ggml.token_type");
  types.reserve(raw.size());
  for (int32_t t : raw) types.push_back(static_cast<TokenType>(t));  // range checked by validate
  return types;
}

std::string lowercase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

Vocabulary load_vocabulary(const gguf::GgufFile& file) {
  Vocabulary vocab;
  vocab.source = file.name();
  vocab.kind = parse_kind(file);
  vocab.pre = file.get_string_or("tokenizer.ggml.pre", "default");
  vocab.tokens = file.get_string_array("tokenizer.ggml.tokens");
  if (file.has("tokenizer.ggml.scores")) vocab.scores = file.get_f32_array("tokenizer.ggml.scores");
  vocab.types = read_types(file);
  if (vocab.kind == VocabKind::ByteLevelBpe) {
    vocab.merges = file.get_string_array("tokenizer.ggml.merges");
  }

  // SentencePiece models put <unk>, <s>, </s> at 0, 1, 2 unless told otherwise.
  const bool spm = vocab.kind == VocabKind::SentencePiece;
  vocab.unk_id = optional_token_id(file, "tokenizer.ggml.unknown_token_id", spm ? 0 : -1);
  vocab.bos_id = optional_token_id(file, "tokenizer.ggml.bos_token_id", spm ? 1 : -1);
  vocab.eos_id = optional_token_id(file, "tokenizer.ggml.eos_token_id", spm ? 2 : -1);
  vocab.eot_id = optional_token_id(file, "tokenizer.ggml.eot_token_id", -1);
  vocab.eom_id = optional_token_id(file, "tokenizer.ggml.eom_token_id", -1);
  vocab.pad_id = optional_token_id(file, "tokenizer.ggml.padding_token_id", -1);

  // LLaMA-3 needs <|begin_of_text|> although its GGUF often lacks the key.
  const bool bos_by_default = spm || pre_tokenizer_wants_bos(vocab.pre);
  vocab.add_bos = file.get_bool_or("tokenizer.ggml.add_bos_token", bos_by_default);
  vocab.add_space_prefix = file.get_bool_or("tokenizer.ggml.add_space_prefix", spm);

  validate_vocabulary(vocab);
  complete_special_tokens(vocab, lowercase(file.get_string_or("general.name", "")));
  return vocab;
}

}  // namespace kvforge
