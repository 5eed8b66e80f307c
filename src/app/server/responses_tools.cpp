#include "app/server/responses_tools.h"

#include "app/server/json_body_parser.h"
#include "app/server/openai_error.h"
#include "app/server/tool_call_response.h"

namespace kvforge::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

[[noreturn]] void refuse_tool(const std::string& param, const std::string& why) {
  throw bad_param(param, why);
}

const ordered_json& string_field(const ordered_json& item, const char* key, const char* what) {
  const auto it = item.find(key);
  if (it == item.end() || !it->is_string())
    refuse_tool("input", std::string("a ") + what + " item needs a string '" + key + "'");
  return *it;
}

ordered_json chat_tool(const ordered_json& tool) {
  const std::string type = tool.is_object() ? string_value(tool, "type", "") : "";
  if (type != "function")
    refuse_tool("tools", "tools of type '" + type +
                             "' are not supported (functions only: {\"type\": \"function\", "
                             "\"name\", \"parameters\"})");
  if (!tool.contains("name") || !tool["name"].is_string())
    refuse_tool("tools", "a function tool needs a string 'name'");
  ordered_json fn = {{"name", tool["name"]}};
  for (const char* key : {"description", "parameters", "strict"})
    if (tool.contains(key) && !tool[key].is_null()) fn[key] = tool[key];
  return {{"type", "function"}, {"function", fn}};
}

}  // namespace

void responses_tools_to_chat(const ordered_json& body, ordered_json& chat) {
  if (const auto t = body.find("tools"); t != body.end() && !t->is_null()) {
    if (!t->is_array()) refuse_tool("tools", "'tools' must be an array");
    ordered_json tools = ordered_json::array();
    for (const ordered_json& tool : *t) tools.push_back(chat_tool(tool));
    if (!tools.empty()) chat["tools"] = tools;
  }
  if (const auto c = body.find("tool_choice"); c != body.end() && !c->is_null()) {
    if (c->is_object() && string_value(*c, "type", "") == "function" && c->contains("name"))
      chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", (*c)["name"]}}}};
    else
      chat["tool_choice"] = *c;
  }
  if (const auto p = body.find("parallel_tool_calls"); p != body.end() && !p->is_null())
    chat["parallel_tool_calls"] = *p;
}

bool append_tool_item(const ordered_json& item, ordered_json& messages) {
  const std::string type = item.is_object() ? string_value(item, "type", "") : "";
  if (type == "function_call") {
    const ordered_json call = {{"id", string_field(item, "call_id", "function_call")},
                               {"type", "function"},
                               {"function",
                                {{"name", string_field(item, "name", "function_call")},
                                 {"arguments", string_field(item, "arguments", "function_call")}}}};
    if (!messages.empty() && messages.back()["role"] == "assistant" &&
        messages.back().contains("tool_calls"))
      messages.back()["tool_calls"].push_back(call);
    else
      messages.push_back({{"role", "assistant"},
                          {"content", nullptr},
                          {"tool_calls", ordered_json::array({call})}});
    return true;
  }
  if (type == "function_call_output") {
    messages.push_back({{"role", "tool"},
                        {"tool_call_id", string_field(item, "call_id", "function_call_output")},
                        {"content", string_field(item, "output", "function_call_output")}});
    return true;
  }
  return false;
}

json read_reply_calls(const std::optional<ToolCallSyntax>& syntax, const std::string& text) {
  if (!syntax) return nullptr;
  ToolCallAssembler calls(*syntax);
  calls.reader().feed(text);
  calls.reader().finish();
  if (!calls.reader().complete() || calls.reader().calls().empty()) return nullptr;
  return calls.message_json();
}

json function_call_item(const json& call, const std::string& status) {
  const std::string id = call.at("id").get<std::string>();
  return {{"id", "fc_" + id.substr(id.find('_') + 1)},
          {"type", "function_call"},
          {"status", status},
          {"arguments", status == "completed" ? call["function"]["arguments"] : json("")},
          {"call_id", id},
          {"name", call["function"]["name"]}};
}

ordered_json reply_message(const std::string& text, const json& calls) {
  if (calls.is_array() && !calls.empty())
    return {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", calls}};
  return {{"role", "assistant"}, {"content", text}};
}

}  // namespace kvforge::server
