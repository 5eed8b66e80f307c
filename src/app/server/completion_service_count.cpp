// CompletionService::count_chat_tokens: Anthropic's /v1/messages/count_tokens
// (and any route that needs a prompt's size before it is run).
#include "app/server/completion_service.h"
#include "app/server/openai_error.h"
#include "app/server/request_fields.h"
#include "app/server/tool_request.h"

namespace kvforge::server {

int CompletionService::count_chat_tokens(std::string_view body,
                                         const std::function<bool()>& cancelled) {
  const PrepareGate::Ticket ticket = gate_.enter(body.size(), cancelled);
  JsonBodyChecks checks;
  checks.top_level_key = [](const std::string& key) { reject_unknown_field(key, ApiKind::kChat); };
  checks.cancelled = cancelled;
  const nlohmann::ordered_json json = parse_json_body(body, limits_, checks);
  ChatRequest r;
  try {
    r = parse_chat_request(json, limits_);
    plan_tools(json, r, tool_style_, tool_turns_);  // the tools as the template sees them
  } catch (const nlohmann::json::exception& e) {
    throw ApiError(400, std::string("invalid request: ") + e.what());
  }
  return static_cast<int>(prompt_for_chat(r, cancelled).size());
}

}  // namespace kvforge::server
