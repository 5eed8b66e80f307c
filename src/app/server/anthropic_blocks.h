// Anthropic's content blocks and tools, translated onto the chat path's tool
// machinery (tool_request.h plans the translated fields, tool_call_reader.h
// reads the reply), so a Messages request with tools is a chat request with
// tools in another shape:
//   tools [{name, description, input_schema, type "custom", cache_control}]
//     -> [{"type": "function", "function": {name, description, parameters}}]
//   tool_choice {type "auto" | "any" | "tool" (name) | "none",
//     disable_parallel_tool_use} -> tool_choice "auto" | "required" |
//     {"type": "function", ...} | "none", and parallel_tool_calls
//   assistant tool_use blocks {id, name, input} -> the turn's tool_calls
//   user tool_result blocks {tool_use_id, content, is_error} -> tool turns
//     (is_error reaches the model only through the content's text: chat
//     templates have no error flag)
//   the reply's calls -> tool_use blocks {id "toolu_...", name, input}.
// Anything else (server tools, images, documents, thinking) is a 400 naming it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "app/chat/tool_call_reader.h"

namespace kvforge::server {

// Throws ApiError 400 naming `field`: "'<field>' <why>".
[[noreturn]] void messages_refuse(const std::string& field, const std::string& why);

// A string, or text blocks, as one text; `field` names it in a 400.
std::string messages_text(const nlohmann::ordered_json& content, const std::string& field);

// Appends the chat turns of one Messages message (role user or assistant)
// to `out`: its text, its tool_use blocks as tool_calls, its tool_result
// blocks as tool turns, in the order they come.
void append_chat_turns(const std::string& role, const nlohmann::ordered_json& content,
                       nlohmann::ordered_json& out);

// Copies the request's tools and tool_choice onto the chat body.
void messages_tools(const nlohmann::ordered_json& body, nlohmann::ordered_json& chat);

// "toolu_" and 24 random hex digits.
std::string new_tool_use_id();

// A tool_use block for a call read from the reply.
nlohmann::json tool_use_block(const std::string& id, const ToolCall& call);

// The reply's content blocks: its calls when it is whole calls (`tool_use`
// set), else its text as one text block.
struct ReplyContent {
  nlohmann::json blocks;
  bool tool_use = false;
};
ReplyContent reply_content(const std::optional<ToolCallSyntax>& syntax, const std::string& text);

}  // namespace kvforge::server
