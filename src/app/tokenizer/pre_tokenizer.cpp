#define PCRE2_CODE_UNIT_WIDTH 8
#include "app/tokenizer/pre_tokenizer.h"

#include <pcre2.h>

#include <string>

#include "app/tokenizer/tokenizer_error.h"

namespace kvforge {

namespace {

// GPT-2 (openai/gpt-2 encoder.py).
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// LLaMA-3 (tiktoken cl100k_base): contractions in any case, one optional
// non-letter before a letter run, numbers in chunks of at most three digits,
// punctuation runs keep trailing newlines, newline runs keep leading spaces.
constexpr std::string_view kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Qwen2: the LLaMA-3 pattern with single digits.
constexpr std::string_view kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Qwen 3.5: Qwen2's pattern with letters and combining marks together
// ([\p{L}\p{M}]+), contractions spelled case by case as llama.cpp does.
constexpr std::string_view kQwen35Pattern =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// gpt-4o (tiktoken o200k_base; gpt-oss, Llama 4): a word is capitals then
// small letters, so "HelloWorld" is two words; contractions stay on their
// word; punctuation runs keep trailing newlines and slashes. Written as
// llama.cpp runs it: "capital" is any letter but a-z and "small" any letter
// but A-Z, so letters outside ASCII count as both, and marks as neither.
constexpr std::string_view kGpt4oPattern =
    R"([^\r\n\p{L}\p{N}]?(?:(?=\p{L})[^a-z])*(?:(?=\p{L})[^A-Z])+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?)"
    R"(|[^\r\n\p{L}\p{N}]?(?:(?=\p{L})[^a-z])+(?:(?=\p{L})[^A-Z])*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?)"
    R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Gemma 4: merges span whole lines; no token holds a newline next to
// anything else.
constexpr std::string_view kNewlineRunsPattern = R"([^\n]+|\n+)";

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

}  // namespace

std::optional<PreTokenizerKind> pre_tokenizer_kind(std::string_view pre) {
  if (pre == "default" || pre == "gpt-2" || pre == "phi-2") return PreTokenizerKind::Gpt2;
  if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3") return PreTokenizerKind::Llama3;
  if (pre == "qwen2" || pre == "deepseek-r1-qwen") return PreTokenizerKind::Qwen2;
  if (pre == "qwen35") return PreTokenizerKind::Qwen35;
  if (pre == "gpt-4o" || pre == "llama4") return PreTokenizerKind::Gpt4o;
  return std::nullopt;
}

std::string_view pre_tokenizer_pattern(PreTokenizerKind kind) {
  switch (kind) {
    case PreTokenizerKind::Gpt2:
      return kGpt2Pattern;
    case PreTokenizerKind::Llama3:
      return kLlama3Pattern;
    case PreTokenizerKind::Qwen2:
      return kQwen2Pattern;
    case PreTokenizerKind::Qwen35:
      return kQwen35Pattern;
    case PreTokenizerKind::Gpt4o:
      return kGpt4oPattern;
    case PreTokenizerKind::NewlineRuns:
      return kNewlineRunsPattern;
  }
  return kGpt2Pattern;
}

bool pre_tokenizer_wants_bos(std::string_view pre) {
  return pre_tokenizer_kind(pre) == PreTokenizerKind::Llama3;
}

struct PreTokenizer::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

PreTokenizer::PreTokenizer(std::string_view pattern) : compiled_(std::make_unique<Compiled>()) {
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  compiled_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                  PCRE2_UTF | PCRE2_UCP, &error, &error_offset, nullptr);
  if (compiled_->code == nullptr) {
    throw TokenizerError("pre-tokenizer pattern does not compile at offset " +
                         std::to_string(error_offset) + ": " + pcre2_message(error));
  }
  // JIT is an optimisation only: without it pcre2_match interprets the pattern.
  pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE);
}

PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& words) const {
  // Match data is per call so that one PreTokenizer serves many threads.
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
      pcre2_match_data_create_from_pattern(compiled_->code, nullptr), &pcre2_match_data_free);
  if (!match) throw TokenizerError("pre-tokenizer: out of memory for match data");

  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  while (pos < text.size()) {
    const int rc = pcre2_match(compiled_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK,
                               match.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) throw TokenizerError("pre-tokenizer: regex match failed: " + pcre2_message(rc));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.get());
    const size_t begin = ovector[0];
    size_t end = ovector[1];
    if (begin > pos) words.push_back(text.substr(pos, begin - pos));
    if (end == begin) {
      // None of our patterns matches empty, but a custom one might: step one
      // character so the loop always advances.
      end = begin + 1;
      while (end < text.size() && (static_cast<uint8_t>(text[end]) & 0xC0) == 0x80) ++end;
      words.push_back(text.substr(begin, end - begin));
    } else {
      words.push_back(text.substr(begin, end - begin));
    }
    pos = end;
  }
  if (pos < text.size()) words.push_back(text.substr(pos));
}

}  // namespace kvforge
