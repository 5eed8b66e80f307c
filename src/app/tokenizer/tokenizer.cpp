#include "app/tokenizer/tokenizer.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>

#include "app/tokenizer/bpe_encoder.h"
#include "app/tokenizer/byte_unicode_map.h"
#include "app/tokenizer/pre_tokenizer.h"
#include "app/tokenizer/special_token_splitter.h"
#include "app/tokenizer/special_tokens.h"
#include "app/tokenizer/spm_encoder.h"
#include "app/tokenizer/streaming_detokenizer.h"
#include "app/tokenizer/token_index.h"
#include "app/tokenizer/utf8.h"
#include "app/tokenizer/vocabulary_loader.h"

namespace kvforge {

namespace {

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK "▁"

void append_spm_spelling(std::string_view text, std::string& out) {
  for (char c : text) {
    if (c == ' ') {
      out.append(kSpmSpace);
    } else {
      out.push_back(c);
    }
  }
}

std::string replace_spm_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    if (text.substr(pos, kSpmSpace.size()) == kSpmSpace) {
      out.push_back(' ');
      pos += kSpmSpace.size();
    } else {
      out.push_back(text[pos++]);
    }
  }
  return out;
}

PreTokenizerKind require_pre_tokenizer(const Vocabulary& vocab) {
  const std::optional<PreTokenizerKind> kind = pre_tokenizer_kind(vocab.pre);
  if (!kind) {
    throw TokenizerError(
        vocab.source + ": tokenizer.ggml.pre '" + vocab.pre +
        "' is not a known pre-tokenizer (known: default, gpt-2, phi-2, "
        "llama-bpe, llama3, llama-v3, qwen2, deepseek-r1-qwen, qwen35, gpt-4o, llama4)");
  }
  return *kind;
}

}  // namespace

// Built once in place (make_shared) and never moved: the index, encoders and
// splitter hold references into `vocab`.
struct Tokenizer::State {
  explicit State(Vocabulary v)
      : vocab(std::move(v)),
        index(vocab.tokens),
        splitter(vocab),
        eog(end_of_generation_ids(vocab)) {
    if (vocab.kind == VocabKind::SentencePiece) {
      spm.emplace(vocab, index);
    } else if (vocab.kind == VocabKind::SpmStyleBpe) {
      pre.emplace(PreTokenizerKind::NewlineRuns);
      bpe.emplace(vocab, index, BpeOptions{.ignore_merges = false, .byte_fallback = true});
    } else {
      const PreTokenizerKind pre_kind = require_pre_tokenizer(vocab);
      pre.emplace(pre_kind);
      // LLaMA-3's tokenizer.json sets ignore_merges; GPT-2's and Qwen2's do not.
      bpe.emplace(vocab, index, BpeOptions{.ignore_merges = pre_kind == PreTokenizerKind::Llama3});
    }
  }

  // Appends the ids of one pre-tokenized word.
  void encode_word(std::string_view word, std::string& spelled, std::vector<int32_t>& out) const;

  void encode_spm(const std::vector<TextFragment>& fragments, std::vector<int32_t>& out,
                  size_t max_tokens) const;
  void encode_bpe(const std::vector<TextFragment>& fragments, std::vector<int32_t>& out,
                  size_t max_tokens) const;

  Vocabulary vocab;
  TokenIndex index;
  SpecialTokenSplitter splitter;
  std::vector<int32_t> eog;  // sorted
  std::optional<SpmEncoder> spm;
  std::optional<PreTokenizer> pre;
  std::optional<BpeEncoder> bpe;
};

void Tokenizer::State::encode_spm(const std::vector<TextFragment>& fragments,
                                  std::vector<int32_t>& out, size_t max_tokens) const {
  // Like the reference, every stretch of text that starts the input or follows
  // a special token gets the space prefix.
  bool after_special = true;
  std::string spelled;
  for (const TextFragment& fragment : fragments) {
    if (out.size() > max_tokens) return;
    if (fragment.token >= 0) {
      out.push_back(fragment.token);
      after_special = true;
      continue;
    }
    spelled.clear();
    if (vocab.add_space_prefix && after_special) spelled.append(kSpmSpace);
    append_spm_spelling(fragment.text, spelled);
    spm->encode(spelled, out);
    after_special = false;
  }
}

void Tokenizer::State::encode_bpe(const std::vector<TextFragment>& fragments,
                                  std::vector<int32_t>& out, size_t max_tokens) const {
  std::vector<std::string_view> words;
  std::string spelled;
  for (const TextFragment& fragment : fragments) {
    if (fragment.token >= 0) {
      out.push_back(fragment.token);
      continue;
    }
    words.clear();
    pre->split(fragment.text, words);
    for (std::string_view word : words) {
      if (out.size() > max_tokens) return;
      encode_word(word, spelled, out);
    }
  }
}

void Tokenizer::State::encode_word(std::string_view word, std::string& spelled,
                                   std::vector<int32_t>& out) const {
  spelled.clear();
  if (vocab.kind == VocabKind::ByteLevelBpe) {
    ByteUnicodeMap::instance().encode(word, spelled);
    bpe->encode_word(spelled, out);
    return;
  }
  // Gemma 4: a run of newlines that is a token is that token, whatever the
  // merges would make of it (llama.cpp's rule for this vocabulary).
  if (word.find_first_not_of('\n') == std::string_view::npos) {
    const int32_t whole = index.find(word);
    if (whole >= 0) {
      out.push_back(whole);
      return;
    }
  }
  append_spm_spelling(word, spelled);
  bpe->encode_word(spelled, out);
}

Tokenizer::Tokenizer(std::shared_ptr<const State> state) : state_(std::move(state)) {}

Tokenizer Tokenizer::from_gguf(const gguf::GgufFile& file) {
  return from_vocabulary(load_vocabulary(file));
}

Tokenizer Tokenizer::from_vocabulary(Vocabulary vocab) {
  validate_vocabulary(vocab);
  return Tokenizer(std::make_shared<const State>(std::move(vocab)));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos,
                                       bool parse_special) const {
  return encode(text, add_bos, parse_special, SIZE_MAX);
}

size_t Tokenizer::max_token_bytes() const {
  size_t most = 1;
  for (int32_t id = 0; id < n_vocab(); ++id)
    most = std::max({most, token_text(id).size(), token_to_piece(id, true).size()});
  return most;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos, bool parse_special,
                                       size_t max_tokens) const {
  if (const std::optional<size_t> bad = find_invalid_utf8(text)) {
    throw TokenizerError("cannot tokenize: invalid UTF-8 at byte " + std::to_string(*bad) + " of " +
                         std::to_string(text.size()));
  }
  const State& s = *state_;
  std::vector<int32_t> out;
  if (add_bos) {
    if (s.vocab.bos_id < 0)
      throw TokenizerError(s.vocab.source + ": BOS requested but the vocabulary has no BOS token");
    out.push_back(s.vocab.bos_id);
  }
  std::vector<TextFragment> fragments;
  s.splitter.split(text, parse_special, fragments);
  if (s.spm) {
    s.encode_spm(fragments, out, max_tokens);
  } else {
    s.encode_bpe(fragments, out, max_tokens);
  }
  return out;
}

std::string Tokenizer::token_to_piece(int32_t id, bool render_special) const {
  const Vocabulary& vocab = state_->vocab;
  const std::string& text = token_text(id);
  switch (vocab.type_of(id)) {
    case TokenType::Control:
    case TokenType::Unknown:
      return render_special ? text : std::string();
    case TokenType::UserDefined:
      return text;
    case TokenType::Byte: {
      const int byte = parse_byte_piece(text);
      if (byte >= 0) return std::string(1, static_cast<char>(byte));
      return text;
    }
    default:
      break;
  }
  if (vocab.kind == VocabKind::ByteLevelBpe) return ByteUnicodeMap::instance().decode(text);
  return replace_spm_spaces(text);
}

std::string Tokenizer::decode(std::span<const int32_t> ids, const DecodeOptions& options) const {
  StreamingDetokenizer detokenizer(*this, options);
  std::string out;
  for (int32_t id : ids) out += detokenizer.push(id);
  out += detokenizer.flush();
  return out;
}

const std::string& Tokenizer::token_text(int32_t id) const {
  if (id < 0 || id >= n_vocab()) {
    throw TokenizerError("token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                         std::to_string(n_vocab()) + ")");
  }
  return state_->vocab.tokens[id];
}

int32_t Tokenizer::find_token(std::string_view text) const { return state_->index.find(text); }
TokenType Tokenizer::token_type(int32_t id) const {
  token_text(id);  // range check
  return state_->vocab.type_of(id);
}
int32_t Tokenizer::n_vocab() const { return state_->vocab.size(); }
VocabKind Tokenizer::kind() const { return state_->vocab.kind; }
int32_t Tokenizer::bos_id() const { return state_->vocab.bos_id; }
int32_t Tokenizer::eos_id() const { return state_->vocab.eos_id; }
int32_t Tokenizer::eot_id() const { return state_->vocab.eot_id; }
int32_t Tokenizer::unk_id() const { return state_->vocab.unk_id; }
int32_t Tokenizer::pad_id() const { return state_->vocab.pad_id; }
bool Tokenizer::add_bos() const { return state_->vocab.add_bos; }
bool Tokenizer::add_space_prefix() const { return state_->vocab.add_space_prefix; }
bool Tokenizer::is_eog(int32_t id) const {
  return std::binary_search(state_->eog.begin(), state_->eog.end(), id);
}
const std::vector<int32_t>& Tokenizer::eog_ids() const { return state_->eog; }
const Vocabulary& Tokenizer::vocabulary() const { return state_->vocab; }

std::vector<TokenPiece> tokenize_with_pieces(const Tokenizer& tokenizer, std::string_view text,
                                             bool add_bos, bool parse_special) {
  std::vector<TokenPiece> pieces;
  for (int32_t id : tokenizer.encode(text, add_bos, parse_special)) {
    pieces.push_back({id, tokenizer.token_to_piece(id, /*render_special=*/true)});
  }
  return pieces;
}

}  // namespace kvforge
