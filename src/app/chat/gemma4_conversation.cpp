#include "app/chat/gemma4_conversation.h"

#include <string>

namespace kvforge {
namespace gemma4_fold {  // (named: the chat files share one unity translation unit)
namespace {

using nlohmann::ordered_json;

std::string role_of(const ordered_json& m) {
  const auto r = m.find("role");
  return r != m.end() && r->is_string() ? r->get<std::string>() : "";
}

bool calls_tools(const ordered_json& m) {
  const auto c = m.find("tool_calls");
  return role_of(m) == "assistant" && c != m.end() && c->is_array() && !c->empty();
}

bool has_text(const ordered_json& m) {
  const auto c = m.find("content");
  if (c == m.end()) return false;
  return (c->is_string() && !c->get<std::string>().empty()) || (c->is_array() && !c->empty());
}

ordered_json tool_response(const ordered_json& tool, const ordered_json& call) {
  ordered_json response = nullptr;
  if (const auto c = tool.find("content"); c != tool.end()) {
    response = *c;
    if (c->is_string()) {
      // A result that is JSON text reaches the template as the value it denotes.
      ordered_json parsed = ordered_json::parse(c->get<std::string>(), nullptr, false);
      if (!parsed.is_discarded()) response = std::move(parsed);
    }
  }
  std::string name;
  if (call.is_object() && call.contains("function") && call["function"].is_object())
    name = call["function"].value("name", "");
  if (name.empty()) {
    const auto id = tool.find("tool_call_id");
    if (id != tool.end() && id->is_string()) name = id->get<std::string>();
  }
  return {{"name", name}, {"response", std::move(response)}};
}

// Folds the turn that starts at messages[i]; returns the index after it.
size_t fold_turn(const ordered_json& messages, size_t i, ordered_json& out) {
  const ordered_json& calling = messages[i];
  ordered_json turn = {{"role", "assistant"}, {"tool_calls", calling["tool_calls"]}};
  ordered_json responses = ordered_json::array();
  for (++i; i < messages.size() && role_of(messages[i]) == "tool"; ++i) {
    const size_t n = responses.size();
    const ordered_json& calls = turn["tool_calls"];
    responses.push_back(tool_response(messages[i], n < calls.size() ? calls[n] : ordered_json()));
  }
  if (!responses.empty()) turn["tool_responses"] = std::move(responses);
  if (i < messages.size() && role_of(messages[i]) == "assistant" && !calls_tools(messages[i]) &&
      has_text(messages[i]))
    turn["content"] = messages[i++]["content"];
  const auto reasoning = calling.find("reasoning_content");
  if (reasoning != calling.end() && reasoning->is_string()) turn["reasoning_content"] = *reasoning;
  out.push_back(std::move(turn));
  return i;
}

}  // namespace
}  // namespace gemma4_fold

nlohmann::ordered_json gemma4_fold_tool_turns(const nlohmann::ordered_json& messages) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (size_t i = 0; i < messages.size();) {
    if (gemma4_fold::calls_tools(messages[i])) {
      i = gemma4_fold::fold_turn(messages, i, out);
    } else {
      out.push_back(messages[i++]);
    }
  }
  return out;
}

void gemma4_open_model_turn(std::string& prompt) {
  if (prompt.ends_with("<turn|>\n")) prompt += "<|turn>model\n";
}

}  // namespace kvforge
