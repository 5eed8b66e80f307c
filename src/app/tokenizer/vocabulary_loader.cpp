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
  if (model == "gemma4") return VocabKind::SpmStyleBpe;
  throw TokenizerError(file.name() + ": tokenizer.ggml.model '" + model +
                       "' is not supported (expected 'llama', 'gpt2' or 'gemma4')");
}

// Every tokenizer.ggml.*_token_id, those kvforge reads (bos, eos, eot, eom,
// unknown, padding) and those it does not (sep, cls, mask, fim_*): a token of
// the vocabulary, or -1 for none (llama.cpp's LLAMA_TOKEN_NULL, which some
// converters write). An id outside the vocabulary names no token: an eos
// that never ends a generation, a bos past the embedding rows.
void check_token_id_keys(const gguf::GgufFile& file, size_t n_tokens) {
  for (const gguf::KeyValue& kv : file.metadata()) {
    if (!kv.key.starts_with("tokenizer.ggml.") || !kv.key.ends_with("_token_id")) continue;
    const int64_t id = file.get_i64(kv.key);
    if (id == -1 || (id >= 0 && static_cast<uint64_t>(id) < n_tokens)) continue;
    throw TokenizerError(file.name() + ": " + kv.key + " = " + std::to_string(id) +
                         ", expected a token id in [0, " + std::to_string(n_tokens) +
                         ") or -1 for none");
  }
}

// The id (checked by check_token_id_keys), -1 for none, `fallback` when absent.
int32_t optional_token_id(const gguf::GgufFile& file, const char* key, int32_t fallback) {
  return file.has(key) ? static_cast<int32_t>(file.get_i64(key)) : fallback;
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
  // Gemma 4's split is fixed by its model kind, whatever tokenizer.ggml.pre says.
  vocab.pre = vocab.kind == VocabKind::SpmStyleBpe
                  ? "gemma4"
                  : file.get_string_or("tokenizer.ggml.pre", "default");
  vocab.tokens = file.get_string_array("tokenizer.ggml.tokens");
  if (file.has("tokenizer.ggml.scores")) vocab.scores = file.get_f32_array("tokenizer.ggml.scores");
  vocab.types = read_types(file);
  if (vocab.kind != VocabKind::SentencePiece) {
    vocab.merges = file.get_string_array("tokenizer.ggml.merges");
  }

  check_token_id_keys(file, vocab.tokens.size());
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
  // Gemma 4 is trained with <bos> first: llama.cpp turns add_bos on for it
  // even where a converter wrote false, and so do we.
  if (vocab.kind == VocabKind::SpmStyleBpe) vocab.add_bos = true;
  // Gemma 4's normalizer never prefixes a space (llama.cpp: no BPE kind does).
  vocab.add_space_prefix = vocab.kind != VocabKind::SpmStyleBpe &&
                           file.get_bool_or("tokenizer.ggml.add_space_prefix", spm);

  validate_vocabulary(vocab);
  complete_special_tokens(vocab, lowercase(file.get_string_or("general.name", "")));
  return vocab;
}

}  // namespace kvforge
