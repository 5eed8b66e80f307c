#include "app/server/responses_history.h"

#include <string_view>

namespace kvforge::server {

using nlohmann::ordered_json;

ordered_json conversation_messages(const ordered_json& instructions, const StoredResponse* previous,
                                   const ordered_json& input) {
  ordered_json messages = ordered_json::array();
  if (instructions.is_string()) messages.push_back({{"role", "system"}, {"content", instructions}});
  if (previous)
    for (const ordered_json& m : previous->messages) messages.push_back(m);
  for (const ordered_json& m : input) messages.push_back(m);
  return messages;
}

ordered_json conversation_after(const StoredResponse* previous, const ordered_json& input,
                                const ordered_json& reply) {
  ordered_json messages = previous ? previous->messages : ordered_json::array();
  for (const ordered_json& m : input) messages.push_back(m);
  for (const ordered_json& m : reply) messages.push_back(m);
  return messages;
}

size_t continue_stored_tokens(const StoredResponse& previous, const std::string& text,
                              const Tokenizer& tokenizer, std::vector<int32_t>& tokens) {
  const std::string_view view(text);
  const size_t prompt_len = previous.prompt_text.size();
  const size_t stored_len = prompt_len + previous.output_text.size();
  if (previous.prompt_ids.empty() || view.size() <= stored_len ||
      view.substr(0, prompt_len) != previous.prompt_text ||
      view.substr(prompt_len, previous.output_text.size()) != previous.output_text)
    return 0;
  const std::string_view rest = view.substr(stored_len);
  std::vector<int32_t> rest_ids = tokenizer.encode(rest, /*add_bos=*/false, /*parse_special=*/true);
  if (rest_ids.empty()) return 0;
  // SentencePiece puts a space before text that starts the input: unless the
  // rest opens with a special token (after which it does so anyway), its
  // tokens alone would spell a space the conversation does not have.
  const int32_t first = rest_ids.front();
  const TokenType type = tokenizer.token_type(first);
  const bool special =
      (type == TokenType::Control || type == TokenType::UserDefined) &&
      rest.substr(0, tokenizer.token_text(first).size()) == tokenizer.token_text(first);
  const bool prefixes =
      tokenizer.kind() == VocabKind::SentencePiece && tokenizer.add_space_prefix();
  if (prefixes && !special) return 0;
  std::vector<int32_t> out = previous.prompt_ids;
  out.insert(out.end(), previous.output_ids.begin(), previous.output_ids.end());
  const size_t reused = out.size();
  out.insert(out.end(), rest_ids.begin(), rest_ids.end());
  tokens = std::move(out);
  return reused;
}

}  // namespace kvforge::server
