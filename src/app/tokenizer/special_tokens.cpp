#include "app/tokenizer/special_tokens.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace kvforge {

namespace {

// In order of preference when guessing the EOT token. Gemma 4 ends a turn
// with <turn|> and stops for a tool's answer at <|tool_response>.
constexpr std::array<std::string_view, 9> kEndOfTurnSpellings = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",    "<|endoftext|>",
    "<EOT>",      "<|eom_id|>", "<turn|>", "<|tool_response>",
};

// A vocabulary is searched only for a handful of spellings, once at load:
// a scan is cheaper than building an index for it.
int32_t find_special(const Vocabulary& vocab, std::string_view text) {
  for (int32_t id = 0; id < vocab.size(); ++id) {
    if (vocab.tokens[id] == text && is_special_type(vocab.type_of(id))) return id;
  }
  return -1;
}

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

void add_phi3_rstrip_rule(Vocabulary& vocab) {
  for (int32_t id = 0; id < vocab.size(); ++id) {
    const TokenType type = vocab.type_of(id);
    if (type == TokenType::Control || type == TokenType::UserDefined ||
        type == TokenType::Unknown) {
      vocab.rstrip_tokens.insert(id);
    }
  }
  // These three keep the whitespace after them in Phi-3's tokenizer.json.
  for (std::string_view keep : {"<unk>", "<s>", "<|endoftext|>"}) {
    const int32_t id = find_special(vocab, keep);
    if (id >= 0) vocab.rstrip_tokens.erase(id);
  }
}

}  // namespace

bool is_special_type(TokenType type) {
  return type == TokenType::Control || type == TokenType::UserDefined || type == TokenType::Unknown;
}

void complete_special_tokens(Vocabulary& vocab, std::string_view lowercase_model_name) {
  if (vocab.eot_id < 0) {
    for (std::string_view spelling : kEndOfTurnSpellings) {
      vocab.eot_id = find_special(vocab, spelling);
      if (vocab.eot_id >= 0) break;
    }
  }
  if (contains(lowercase_model_name, "phi-3") || contains(lowercase_model_name, "phi3")) {
    add_phi3_rstrip_rule(vocab);
  }
}

std::vector<int32_t> end_of_generation_ids(const Vocabulary& vocab) {
  std::vector<int32_t> ids;
  for (int32_t id : {vocab.eos_id, vocab.eot_id, vocab.eom_id}) {
    if (id >= 0) ids.push_back(id);
  }
  for (std::string_view spelling : kEndOfTurnSpellings) {
    const int32_t id = find_special(vocab, spelling);
    if (id >= 0) ids.push_back(id);
  }
  // gpt-oss's harmony format (o200k_harmony): a reply ends with <|return|>
  // (final answer) or <|call|> (tool call), while <|end|> only closes one
  // message of it (the analysis before the final one), so with both of
  // those present <|end|> does not end generation, as in llama.cpp.
  const int32_t ret = find_special(vocab, "<|return|>"), call = find_special(vocab, "<|call|>");
  for (int32_t id : {ret, call})
    if (id >= 0) ids.push_back(id);
  if (ret >= 0 && call >= 0) std::erase(ids, find_special(vocab, "<|end|>"));
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace kvforge
