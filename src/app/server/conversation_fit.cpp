#include "app/server/conversation_fit.h"

#include <algorithm>

#include "app/chat/conversation_trim.h"
#include "app/server/completion_service.h"
#include "app/server/openai_error.h"

namespace kvforge::server {

std::optional<bool> parse_truncation(const nlohmann::ordered_json& body) {
  const auto it = body.find("truncation");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (it->is_string() && *it == "auto") return true;
  if (it->is_string() && *it == "disabled") return false;
  throw bad_param("truncation", "'truncation' must be \"auto\" or \"disabled\", got " + it->dump());
}

int prompt_budget(int context, int max_prompt, std::optional<int> max_tokens) {
  const int room = max_tokens ? std::min(*max_tokens, context / 2) : context / 4;
  return std::max(1, std::min(max_prompt, context - room));
}

std::vector<int32_t> CompletionService::fit_chat(ChatRequest& r, bool truncate,
                                                 const std::function<bool()>& cancelled,
                                                 int& messages_dropped) const {
  messages_dropped = 0;
  if (!truncate) return prompt_for_chat(r, cancelled);
  int max_prompt = max_sequence_tokens_ - 1;
  if (limits_.max_prompt_tokens > 0) max_prompt = std::min(max_prompt, limits_.max_prompt_tokens);
  const std::optional<int> asked =
      r.max_tokens_explicit ? r.sampling.max_tokens : std::optional<int>();
  const auto budget = static_cast<size_t>(prompt_budget(max_sequence_tokens_, max_prompt, asked));
  std::vector<nlohmann::ordered_json> messages(r.messages.begin(), r.messages.end());
  std::vector<int32_t> tokens;
  const TrimResult trim = trim_oldest_turns(messages, [&](const auto& candidate) {
    ChatRequest c = r;
    c.messages = nlohmann::ordered_json(candidate);
    const RenderedChat rendered = render_chat(c, cancelled);
    // More bytes than the budget's tokens can cover: too long without tokenizing.
    if (rendered.text.size() > (budget + 1) * max_token_bytes_) return false;
    tokens = tokenizer_.encode(rendered.text, rendered.add_bos, /*parse_special=*/true, budget + 1);
    return tokens.size() <= budget;
  });
  r.messages = nlohmann::ordered_json(messages);
  messages_dropped = trim.messages_dropped;
  // A reply larger than what is left is cut to it (finish "length"), not refused.
  r.max_tokens_explicit = false;
  if (!trim.fits) return prompt_for_chat(r, cancelled);  // the 400 names the sizes
  return tokens;
}

}  // namespace kvforge::server
