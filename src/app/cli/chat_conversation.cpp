#include "app/cli/chat_conversation.h"

#include <cstdio>
#include <stdexcept>

#include "app/chat/conversation_trim.h"

namespace kvforge::cli {

Conversation::Conversation(const std::string& system, const Tokenizer& tokenizer, ChatTemplate tmpl)
    : tokenizer_(tokenizer), template_(std::move(tmpl)) {
  if (!system.empty()) system_ = nlohmann::ordered_json{{"role", "system"}, {"content", system}};
}

std::optional<std::vector<int32_t>> Conversation::prompt_with(const std::string& user, int context,
                                                              int room) {
  std::vector<nlohmann::ordered_json> turns = turns_;
  turns.push_back({{"role", "user"}, {"content", user}});
  std::vector<int32_t> tokens;
  const TrimResult trim = trim_oldest_turns(turns, [&](const auto& candidate) {
    tokens = render(candidate);
    return static_cast<int>(tokens.size()) + room <= context;
  });
  // Trimmed as far as it goes and still too long: a shorter reply is better than none, as
  // long as one token fits.
  if (!trim.fits && static_cast<int>(tokens.size()) >= context) {
    std::fprintf(stderr,
                 "(message not sent: with %s it is %zu tokens and the context holds %d; "
                 "shorten it, or start chat with a larger -c)\n",
                 system_ ? "the system message" : "the chat template", tokens.size(), context);
    return std::nullopt;
  }
  if (trim.messages_dropped > 0)
    std::fprintf(stderr,
                 "(history trimmed: the oldest %d messages dropped to fit the %d-token "
                 "context)\n",
                 trim.messages_dropped, context);
  turns_ = std::move(turns);
  return tokens;
}

void Conversation::add_reply(const std::string& text) {
  turns_.push_back({{"role", "assistant"}, {"content", text}});
}

nlohmann::ordered_json Conversation::to_json() const {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  if (system_) out.push_back(*system_);
  for (const auto& t : turns_) out.push_back(t);
  return out;
}

void Conversation::load(const nlohmann::ordered_json& messages, const std::string& source) {
  if (!messages.is_array())
    throw std::runtime_error(source + ": expected a JSON array of chat messages");
  std::vector<nlohmann::ordered_json> turns;
  std::optional<nlohmann::ordered_json> system = system_;
  for (const auto& m : messages) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
        !m["content"].is_string())
      throw std::runtime_error(source + ": every message needs a string role and content");
    if (m["role"] == "system")
      system = m;
    else
      turns.push_back(m);
  }
  turns_ = std::move(turns);
  system_ = std::move(system);
}

std::vector<int32_t> Conversation::render(const std::vector<nlohmann::ordered_json>& turns) const {
  ChatTemplateInputs in;
  if (system_) in.messages.push_back(*system_);
  for (const auto& t : turns) in.messages.push_back(t);
  const int32_t bos = tokenizer_.bos_id(), eos = tokenizer_.eos_id();
  in.bos_token = bos >= 0 ? tokenizer_.token_text(bos) : "";
  in.eos_token = eos >= 0 ? tokenizer_.token_text(eos) : "";
  const std::string text = template_.render(in);
  const bool has_bos = !in.bos_token.empty() && text.rfind(in.bos_token, 0) == 0;
  return tokenizer_.encode(text, tokenizer_.add_bos() && !has_bos, /*parse_special=*/true);
}

}  // namespace kvforge::cli
