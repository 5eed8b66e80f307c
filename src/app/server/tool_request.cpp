#include "app/server/tool_request.h"

#include <set>
#include <string>
#include <vector>

#include "app/server/json_body_parser.h"
#include "app/server/openai_error.h"
#include "app/structured/tool_call_gbnf.h"
#include "engine/sampling/grammar/grammar_error.h"

namespace kvforge::server {
namespace {

using nlohmann::ordered_json;

bool valid_function_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '-'))
      return false;
  return true;
}

void only_keys(const ordered_json& obj, std::set<std::string> keys, const std::string& where,
               const char* param) {
  for (const auto& [key, value] : obj.items())
    if (!keys.count(key))
      throw bad_param(param, "'" + where + "." + key + "' is not supported by kvforge serve");
}

// A function's parameters: an object schema (an empty object when absent).
ordered_json function_parameters(const ordered_json& f, const std::string& where) {
  const auto p = f.find("parameters");
  if (p == f.end() || p->is_null())
    return {{"type", "object"}, {"properties", ordered_json::object()}};
  if (!p->is_object()) throw bad_param("tools", "'" + where + ".parameters' must be an object");
  const auto type = p->find("type");
  if (type != p->end() && *type != "object")
    throw bad_param("tools", "'" + where +
                                 ".parameters' must be a schema of type \"object\" (the arguments "
                                 "of a call are a JSON object), got type " +
                                 type->dump());
  return *p;
}

std::vector<ToolFunction> parse_tools(const ordered_json& tools) {
  std::vector<ToolFunction> out;
  std::set<std::string> names;
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string where = "tools[" + std::to_string(i) + "]";
    const ordered_json& t = tools[i];
    if (!t.is_object() || string_value(t, "type", "") != "function")
      throw bad_param("tools", "'" + where +
                                   "' must be an object of type \"function\" (other "
                                   "tool types are not supported)");
    only_keys(t, {"type", "function"}, where, "tools");
    const auto f = t.find("function");
    if (f == t.end() || !f->is_object())
      throw bad_param("tools", "'" + where + ".function' must be an object");
    only_keys(*f, {"name", "description", "parameters", "strict"}, where + ".function", "tools");
    const auto name = f->find("name");
    if (name == f->end() || !name->is_string() || !valid_function_name(name->get<std::string>()))
      throw bad_param("tools",
                      "'" + where + ".function.name' must be 1 to 64 of a-z, A-Z, 0-9, _ and -");
    if (!names.insert(name->get<std::string>()).second)
      throw bad_param(
          "tools", "'" + where + "': function '" + name->get<std::string>() + "' is listed twice");
    out.push_back({name->get<std::string>(), function_parameters(*f, where + ".function")});
  }
  return out;
}

// tool_choice: "auto" (and absent), "none", "required", or a function's name.
struct ToolChoice {
  std::string mode = "auto";
  std::string function;
};

ToolChoice parse_choice(const ordered_json& body, const std::vector<ToolFunction>& tools) {
  const auto c = body.find("tool_choice");
  if (c == body.end() || c->is_null()) return {};
  if (c->is_string() && (*c == "auto" || *c == "none" || *c == "required")) {
    if (*c == "required" && tools.empty())
      throw bad_param("tool_choice", "'tool_choice' \"required\" needs 'tools'");
    return {c->get<std::string>(), ""};
  }
  const ordered_json* f =
      c->is_object() && string_value(*c, "type", "") == "function" && c->contains("function")
          ? &(*c)["function"]
          : nullptr;
  if (!f || !f->is_object() || !f->contains("name") || !(*f)["name"].is_string())
    throw bad_param("tool_choice", "'tool_choice' " + c->dump() +
                                       " is not supported; \"auto\", \"none\", \"required\" or "
                                       "{\"type\": \"function\", \"function\": {\"name\": ...}}");
  const std::string name = (*f)["name"];
  for (const ToolFunction& t : tools)
    if (t.name == name) return {"function", name};
  throw bad_param("tool_choice", "'tool_choice' names function '" + name + "', not in 'tools'");
}

void check_history_calls(const ordered_json& messages) {
  for (size_t i = 0; i < messages.size(); ++i) {
    if (!messages[i].contains("tool_calls")) continue;
    for (const ordered_json& call : messages[i]["tool_calls"]) {
      const std::string where = "messages[" + std::to_string(i) + "].tool_calls";
      const ordered_json* f =
          call.is_object() && call.contains("function") ? &call["function"] : nullptr;
      if (!f || !f->is_object() || !f->contains("name") || !(*f)["name"].is_string() ||
          !(f->contains("arguments") &&
            ((*f)["arguments"].is_string() || (*f)["arguments"].is_object())))
        throw bad_param("messages", "'" + where +
                                        "' entries must be {\"id\", \"type\": \"function\", "
                                        "\"function\": {\"name\": string, \"arguments\": string}}");
    }
  }
}

}  // namespace

std::optional<ToolCallSyntax> plan_tools(const ordered_json& body, ChatRequest& r,
                                         ToolCallStyle style, ToolTurns turns) {
  const std::vector<ToolFunction> tools =
      r.tools.is_array() ? parse_tools(r.tools) : std::vector<ToolFunction>{};
  const ToolChoice choice = parse_choice(body, tools);
  const auto parallel = body.find("parallel_tool_calls");
  if (parallel != body.end() && !parallel->is_null() && !parallel->is_boolean())
    throw bad_param("parallel_tool_calls", "'parallel_tool_calls' must be a boolean");
  check_history_calls(r.messages);
  const bool calls = !tools.empty() && choice.mode != "none";
  const ordered_json described = style == ToolCallStyle::kGeneric && !calls ? nullptr : r.tools;
  TemplateConversation conv = conversation_for_template(style, turns, r.messages, described);
  r.messages = std::move(conv.messages);
  r.tools = std::move(conv.tools);
  if (!calls) return std::nullopt;
  if (r.stream && r.logprobs)
    throw bad_param("logprobs",
                    "'logprobs' with 'stream' and 'tools' is not supported yet (the tool call "
                    "deltas carry none); drop one of them, or set 'tool_choice' to \"none\"");
  // gpt-oss under "auto": its calls are read (harmony_reader.h), not constrained.
  if (style == ToolCallStyle::kHarmony && choice.mode == "auto") return tool_call_syntax(style);
  if (r.constraint)
    throw bad_param(r.constraint->source.substr(0, r.constraint->source.find('.')),
                    "'" + r.constraint->source +
                        "' cannot be combined with 'tools' unless "
                        "'tool_choice' is \"none\"");
  ToolGrammarRequest g;
  for (const ToolFunction& t : tools)
    if (choice.mode != "function" || t.name == choice.function) g.functions.push_back(t);
  g.text_allowed = choice.mode == "auto";
  g.parallel = parallel == body.end() || parallel->is_null() || parallel->get<bool>();
  const ToolCallSyntax syntax = tool_call_syntax(style);
  try {
    r.constraint = ConstraintSpec{ConstraintSpec::Kind::Gbnf, tool_call_gbnf(syntax, g), "tools"};
  } catch (const GrammarError& e) {
    throw bad_param("tools", std::string("tools: ") + e.what());
  }
  return syntax;
}

}  // namespace kvforge::server
