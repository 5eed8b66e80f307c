// The conversation of `kvforge chat`: the system message and the turns,
// rendered through the chat template into the next prompt's tokens. When
// the history no longer fits the context it drops the oldest turns (never
// the system message; conversation_trim.h) and says so once.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "app/chat/chat_template.h"
#include "app/tokenizer/tokenizer.h"

namespace kvforge::cli {

class Conversation {
 public:
  Conversation(const std::string& system, const Tokenizer& tokenizer, ChatTemplate tmpl);

  // Tokens of the history plus `user`, dropping the oldest turns until the
  // prompt leaves `room` tokens of `context` for the reply (one "(history
  // trimmed ...)" line on stderr when it drops any). nullopt, with the
  // reason on stderr and `user` not kept, when `user` alone (with the
  // system message) leaves no token for a reply.
  std::optional<std::vector<int32_t>> prompt_with(const std::string& user, int context, int room);
  void add_reply(const std::string& text);
  void reset() { turns_.clear(); }
  // The history's tokens as the next prompt starts with them.
  std::vector<int32_t> history_tokens() const { return render(turns_); }
  size_t size() const { return turns_.size(); }

  // The conversation as OpenAI chat messages, the system message first.
  nlohmann::ordered_json to_json() const;
  // Replaces the conversation (and the system message, if the file has one).
  void load(const nlohmann::ordered_json& messages, const std::string& source);

 private:
  std::vector<int32_t> render(const std::vector<nlohmann::ordered_json>& turns) const;

  const Tokenizer& tokenizer_;
  ChatTemplate template_;
  std::optional<nlohmann::ordered_json> system_;
  std::vector<nlohmann::ordered_json> turns_;
};

}  // namespace kvforge::cli
