#include "app/server/anthropic_blocks.h"

#include <set>

#include "app/server/json_body_parser.h"
#include "app/server/openai_error.h"
#include "app/server/tool_call_response.h"

namespace kvforge::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

void blocks_only_keys(const ordered_json& obj, const std::set<std::string>& keys,
                      const std::string& where, const std::string& field) {
  for (const auto& [key, value] : obj.items())
    if (!keys.count(key))
      messages_refuse(field, "holds '" + where + "." + key + "', which is not supported");
}

const std::string& blocks_string(const ordered_json& obj, const char* key, const std::string& where,
                                 const std::string& field) {
  const auto v = obj.find(key);
  if (v == obj.end() || !v->is_string())
    messages_refuse(field, "needs a string '" + where + "." + key + "'");
  return v->get_ref<const std::string&>();
}

// A tool_use block of an assistant turn, as a chat tool call.
ordered_json blocks_tool_call(const ordered_json& block, const std::string& where) {
  blocks_only_keys(block, {"type", "id", "name", "input", "cache_control"}, where, "messages");
  const auto input = block.find("input");
  if (input == block.end() || !input->is_object())
    messages_refuse("messages", "needs an object '" + where + ".input'");
  return {
      {"id", blocks_string(block, "id", where, "messages")},
      {"type", "function"},
      {"function",
       {{"name", blocks_string(block, "name", where, "messages")}, {"arguments", input->dump()}}}};
}

// A tool_result block of a user turn, as a chat tool turn.
ordered_json blocks_tool_turn(const ordered_json& block, const std::string& where) {
  blocks_only_keys(block, {"type", "tool_use_id", "content", "is_error", "cache_control"}, where,
                   "messages");
  if (const auto e = block.find("is_error"); e != block.end() && !e->is_boolean())
    messages_refuse("messages", "needs a boolean '" + where + ".is_error'");
  const auto content = block.find("content");
  const std::string text = content == block.end() || content->is_null()
                               ? std::string()
                               : messages_text(*content, "messages");
  return {{"role", "tool"},
          {"tool_call_id", blocks_string(block, "tool_use_id", where, "messages")},
          {"content", text}};
}

// Text blocks gathered so far become one turn of `role`.
void blocks_flush_text(const std::string& role, std::string& text, bool& has_text,
                       ordered_json& out) {
  if (has_text) out.push_back({{"role", role}, {"content", text}});
  text.clear();
  has_text = false;
}

ordered_json blocks_function(const ordered_json& tool, const std::string& where) {
  if (!tool.is_object()) messages_refuse("tools", "must hold objects");
  const std::string type = string_value(tool, "type", "custom");
  if (type != "custom")
    messages_refuse("tools",
                    "holds '" + where + "' of type '" + type +
                        "': only client tools (name, description, input_schema) are supported, "
                        "no server tools");
  blocks_only_keys(tool, {"type", "name", "description", "input_schema", "cache_control"}, where,
                   "tools");
  const auto schema = tool.find("input_schema");
  if (schema == tool.end() || !schema->is_object())
    messages_refuse("tools", "needs an object '" + where + ".input_schema'");
  ordered_json f = {{"name", blocks_string(tool, "name", where, "tools")}};
  if (const auto d = tool.find("description"); d != tool.end() && !d->is_null())
    f["description"] = *d;
  f["parameters"] = *schema;
  return {{"type", "function"}, {"function", std::move(f)}};
}

void messages_tool_choice(const ordered_json& choice, ordered_json& chat) {
  if (!choice.is_object()) messages_refuse("tool_choice", "must be an object with a 'type'");
  blocks_only_keys(choice, {"type", "name", "disable_parallel_tool_use"}, "tool_choice",
                   "tool_choice");
  const std::string type = string_value(choice, "type", "");
  if (type == "auto" || type == "none")
    chat["tool_choice"] = type;
  else if (type == "any")
    chat["tool_choice"] = "required";
  else if (type == "tool")
    chat["tool_choice"] = {
        {"type", "function"},
        {"function", {{"name", blocks_string(choice, "name", "tool_choice", "tool_choice")}}}};
  else
    messages_refuse("tool_choice", "type must be auto, any, tool or none, not '" + type + "'");
  if (const auto d = choice.find("disable_parallel_tool_use"); d != choice.end() && !d->is_null()) {
    if (!d->is_boolean())
      messages_refuse("tool_choice", "disable_parallel_tool_use must be a boolean");
    chat["parallel_tool_calls"] = !d->get<bool>();
  }
}

}  // namespace

void messages_refuse(const std::string& field, const std::string& why) {
  throw bad_param(field, "'" + field + "' " + why);
}

std::string messages_text(const ordered_json& content, const std::string& field) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) messages_refuse(field, "must be a string or an array of text blocks");
  std::string text;
  for (const ordered_json& block : content) {
    const std::string type = block.is_object() ? string_value(block, "type", "") : "";
    if (type != "text")
      messages_refuse(field, "holds a block of type '" + type +
                                 "' where only text blocks are supported (no images or documents)");
    if (!block.contains("text") || !block["text"].is_string())
      messages_refuse(field, "text blocks need a string 'text'");
    text += block["text"].get<std::string>();
  }
  return text;
}

void append_chat_turns(const std::string& role, const ordered_json& content, ordered_json& out) {
  if (!content.is_array()) {
    out.push_back({{"role", role}, {"content", messages_text(content, "messages")}});
    return;
  }
  std::string text;
  bool has_text = false;
  ordered_json calls = ordered_json::array();
  for (size_t i = 0; i < content.size(); ++i) {
    const ordered_json& block = content[i];
    const std::string type = block.is_object() ? string_value(block, "type", "") : "";
    const std::string where = "content[" + std::to_string(i) + "]";
    if (type == "text") {
      text += messages_text(ordered_json::array({block}), "messages");
      has_text = true;
    } else if (type == "tool_use" && role == "assistant") {
      calls.push_back(blocks_tool_call(block, where));
    } else if (type == "tool_result" && role == "user") {
      blocks_flush_text(role, text, has_text, out);
      out.push_back(blocks_tool_turn(block, where));
    } else {
      messages_refuse("messages", "holds a " + role + " block of type '" + type +
                                      "': supported are text, tool_use (assistant) and tool_result "
                                      "(user); no images, documents or thinking");
    }
  }
  const bool with_text = has_text;
  blocks_flush_text(role, text, has_text, out);
  if (!calls.empty()) {
    if (!with_text) out.push_back({{"role", "assistant"}, {"content", ""}});
    out.back()["tool_calls"] = std::move(calls);
  }
}

void messages_tools(const ordered_json& body, ordered_json& chat) {
  if (const auto t = body.find("tools"); t != body.end() && !t->is_null()) {
    if (!t->is_array()) messages_refuse("tools", "must be an array");
    ordered_json tools = ordered_json::array();
    for (size_t i = 0; i < t->size(); ++i)
      tools.push_back(blocks_function((*t)[i], "tools[" + std::to_string(i) + "]"));
    if (!tools.empty()) chat["tools"] = std::move(tools);
  }
  if (const auto c = body.find("tool_choice"); c != body.end() && !c->is_null())
    messages_tool_choice(*c, chat);
}

std::string new_tool_use_id() {
  const std::string call = new_tool_call_id();  // "call_" and the hex digits
  return "toolu_" + call.substr(call.find('_') + 1);
}

json tool_use_block(const std::string& id, const ToolCall& call) {
  return {{"type", "tool_use"},
          {"id", id},
          {"name", call.name},
          {"input", json::parse(call.arguments)}};
}

ReplyContent reply_content(const std::optional<ToolCallSyntax>& syntax, const std::string& text) {
  if (syntax) {
    ToolCallReader reader(*syntax);
    reader.feed(text);
    reader.finish();
    if (reader.complete() && !reader.calls().empty()) {
      ReplyContent out{json::array(), true};
      try {
        for (const ToolCall& call : reader.calls())
          out.blocks.push_back(tool_use_block(new_tool_use_id(), call));
        return out;
      } catch (const json::parse_error&) {
        // Not JSON after all (the grammar rules this out): the reply is its text.
      }
    }
  }
  return {json::array({{{"type", "text"}, {"text", text}}}), false};
}

}  // namespace kvforge::server
