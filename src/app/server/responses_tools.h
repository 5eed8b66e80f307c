// Function tools on the Responses API, in the shapes of the chat path's tool
// calls (tool_request.h, tool_call_response.h), which do the work:
// - tools [{"type": "function", "name", "description", "parameters",
//   "strict"}] become the chat body's tools, tool_choice ("auto", "none",
//   "required", {"type": "function", "name"}) and parallel_tool_calls its own;
// - input items {"type": "function_call", "call_id", "name", "arguments"}
//   become an assistant message's tool_calls (consecutive ones together) and
//   {"type": "function_call_output", "call_id", "output"} a tool message, as
//   a chat client sends them;
// - a reply read as calls becomes output items {"type": "function_call",
//   "id", "call_id", "name", "arguments", "status"}.
// Tools of other types (web_search, file_search...) are a 400 naming them.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "app/chat/tool_call_syntax.h"

namespace kvforge::server {

// Copies the request's tools, tool_choice and parallel_tool_calls into the chat body.
void responses_tools_to_chat(const nlohmann::ordered_json& body, nlohmann::ordered_json& chat);

// Appends a function_call or function_call_output item to `messages`; false
// for items of other types (left to the caller). Throws ApiError 400 (param input).
bool append_tool_item(const nlohmann::ordered_json& item, nlohmann::ordered_json& messages);

// The chat "tool_calls" array of a reply that is whole calls; null otherwise
// (no tools, or the reply is text).
nlohmann::json read_reply_calls(const std::optional<ToolCallSyntax>& syntax,
                                const std::string& text);

// The output item of a chat tool call; status "completed" or "in_progress"
// (arguments then empty, as streamed before they are known).
nlohmann::json function_call_item(const nlohmann::json& call, const std::string& status);

// The reply as a chat message for the stored conversation.
nlohmann::ordered_json reply_message(const std::string& text, const nlohmann::json& calls);

}  // namespace kvforge::server
