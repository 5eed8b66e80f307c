// The tool fields of a chat request: tools (functions only), tool_choice
// ("auto", "none", "required", or {"type": "function", "function":
// {"name": ...}}) and parallel_tool_calls. A request with tools is put to the
// chat template in the model's tool call syntax (tool_call_syntax.h) and,
// unless tool_choice is "none", its reply is constrained by the tool call
// grammar (tool_call_gbnf.h): "required" and a named function constrain the
// whole reply to calls, "auto" lets the model's first tokens choose between
// text and calls; gpt-oss's harmony calls are read, not constrained, so it
// takes "auto" and "none" only. Anything else in these fields is a 400 naming it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "app/chat/tool_call_syntax.h"
#include "app/server/openai_request.h"

namespace kvforge::server {

// Rewrites r.messages and r.tools for the template and sets r.constraint to
// the tool grammar. Returns the syntax to read calls out of the reply with,
// or nullopt when the reply is plain text (no tools, or tool_choice "none").
// Throws ApiError 400 naming the field.
std::optional<ToolCallSyntax> plan_tools(const nlohmann::ordered_json& body, ChatRequest& r,
                                         ToolCallStyle style, ToolTurns turns);

}  // namespace kvforge::server
