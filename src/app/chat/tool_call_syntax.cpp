#include "app/chat/tool_call_syntax.h"

#include <cstdint>

#include "app/chat/chat_template.h"
#include "app/chat/gemma4_conversation.h"
#include "core/enum_names.h"

namespace kvforge {
namespace {

using nlohmann::ordered_json;

bool contains(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

// OpenAI sends a call's arguments as JSON text; templates write them with
// `tojson`, which would quote the text again.
ordered_json arguments_object(const ordered_json& arguments) {
  if (!arguments.is_string()) return arguments;
  try {
    return ordered_json::parse(arguments.get<std::string>());
  } catch (const ordered_json::exception&) {
    return arguments;
  }
}

ordered_json with_object_arguments(const ordered_json& message) {
  ordered_json out = message;
  for (ordered_json& call : out["tool_calls"])
    if (call.is_object() && call.contains("function") && call["function"].is_object() &&
        call["function"].contains("arguments"))
      call["function"]["arguments"] = arguments_object(call["function"]["arguments"]);
  return out;
}

std::string generic_instructions(const ordered_json& tools) {
  std::string text =
      "You can call tools. To call one or more, reply with only a JSON object of the form "
      "{\"tool_calls\": [{\"name\": <function name>, \"arguments\": <arguments object>}]}; "
      "otherwise reply with text. Tools results come back as {\"tool_response\": ...}. "
      "The tools:";
  for (const ordered_json& tool : tools)
    text += "\n" + tool.value("function", ordered_json()).dump();
  return text;
}

// An earlier call in the generic form, after the turn's text if any.
std::string generic_call_text(const ordered_json& message) {
  ordered_json calls = ordered_json::array();
  for (const ordered_json& call : message["tool_calls"]) {
    const ordered_json f = call.value("function", ordered_json::object());
    calls.push_back(
        {{"name", f.value("name", "")},
         {"arguments", arguments_object(f.value("arguments", ordered_json::object()))}});
  }
  const std::string json = ordered_json{{"tool_calls", calls}}.dump();
  const ordered_json& content = message["content"];
  if (content.is_string() && !content.get<std::string>().empty())
    return content.get<std::string>() + "\n" + json;
  return json;
}

ordered_json generic_message(const ordered_json& m) {
  const std::string role = m.value("role", "");
  if (role == "assistant" && m.contains("tool_calls"))
    return {{"role", "assistant"}, {"content", generic_call_text(m)}};
  if (role == "tool") {
    ordered_json response = {{"content", m.value("content", ordered_json(""))}};
    if (m.contains("tool_call_id")) response["tool_call_id"] = m["tool_call_id"];
    return {{"role", "user"}, {"content", ordered_json{{"tool_response", response}}.dump()}};
  }
  return m;
}

// Mistral's templates refuse call ids that are not 9 letters and digits:
// OpenAI's ids ("call_...") become such, the same id always the same.
std::string mistral_call_id(const ordered_json& id) {
  static constexpr char kDigits[] =
      "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  const std::string text = id.is_string() ? id.get<std::string>() : id.dump();
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  std::string out;
  for (int i = 0; i < 9; ++i, h /= 62) out += kDigits[h % 62];
  return out;
}

ordered_json mistral_message(const ordered_json& m) {
  ordered_json out = m.contains("tool_calls") ? with_object_arguments(m) : m;
  if (out.contains("tool_call_id")) out["tool_call_id"] = mistral_call_id(out["tool_call_id"]);
  if (out.contains("tool_calls"))
    for (ordered_json& call : out["tool_calls"])
      if (call.is_object()) call["id"] = mistral_call_id(call.value("id", ordered_json("")));
  return out;
}

TemplateConversation generic_conversation(const ordered_json& messages, const ordered_json& tools) {
  TemplateConversation out{ordered_json::array(), nullptr};
  for (const ordered_json& m : messages) out.messages.push_back(generic_message(m));
  if (tools.is_null() || tools.empty()) return out;
  const std::string instructions = generic_instructions(tools);
  ordered_json& first = out.messages[0];
  if (first.value("role", "") == "system" && first["content"].is_string())
    first["content"] = instructions + "\n\n" + first["content"].get<std::string>();
  else
    out.messages.insert(out.messages.begin(),
                        ordered_json{{"role", "system"}, {"content", instructions}});
  return out;
}

}  // namespace

ToolCallSyntax tool_call_syntax(ToolCallStyle style) {
  switch (style) {
    case ToolCallStyle::kHermes:
      return {
          style, "<tool_call>\n", "\n</tool_call>\n<tool_call>\n", "\n</tool_call>", "arguments",
          true};
    case ToolCallStyle::kLlama3:
      return {style, "", "", "", "parameters", false};
    case ToolCallStyle::kHarmony:
      return {style, "", "", "", "arguments", true};
    case ToolCallStyle::kMistral:
      return {style, "[TOOL_CALLS][", ", ", "]", "arguments", true};
    case ToolCallStyle::kMistralArgs:
      return {style, "[TOOL_CALLS]", "[TOOL_CALLS]", "", "arguments", true};
    case ToolCallStyle::kGemma4:
      return {style,          "<|tool_call>call:", "<tool_call|><|tool_call>call:",
              "<tool_call|>", "arguments",         true};
    case ToolCallStyle::kGeneric:
      break;
  }
  return {ToolCallStyle::kGeneric, "{\"tool_calls\": [", ", ", "]}", "arguments", true};
}

bool is_harmony_template(const ChatTemplate& chat_template) {
  const std::string& src = chat_template.source();
  return contains(src, "<|channel|>") && contains(src, "<|start|>") && contains(src, "<|message|>");
}

// The template writes a call as '<|tool_call>call:' + NAME, as llama.cpp detects it.
bool is_gemma4_template(const ChatTemplate& chat_template) {
  return contains(chat_template.source(), "'<|tool_call>call:'");
}

ToolTurns tool_turns_for(const ChatTemplate& chat_template) {
  const bool official = contains(chat_template.source(), "{#- OpenAI Chat Completions:");
  return is_gemma4_template(chat_template) && !official ? ToolTurns::kGemma4Folded
                                                        : ToolTurns::kAsSent;
}

ToolCallStyle detect_tool_call_style(const ChatTemplate& chat_template) {
  const std::string& src = chat_template.source();
  if (is_harmony_template(chat_template)) return ToolCallStyle::kHarmony;
  if (is_gemma4_template(chat_template)) return ToolCallStyle::kGemma4;
  if (contains(src, "[TOOL_CALLS]"))
    return contains(src, "[ARGS]") ? ToolCallStyle::kMistralArgs : ToolCallStyle::kMistral;
  if (!contains(src, "tools")) return ToolCallStyle::kGeneric;
  if (contains(src, "<tool_call>") && contains(src, "\"arguments\": "))
    return ToolCallStyle::kHermes;
  if (contains(src, "\"parameters\": ") && contains(src, "ipython")) return ToolCallStyle::kLlama3;
  return ToolCallStyle::kGeneric;
}

constexpr EnumName<ToolCallStyle> kToolCallStyleNames[] = {
    {ToolCallStyle::kHermes, "hermes"},
    {ToolCallStyle::kLlama3, "llama3"},
    {ToolCallStyle::kHarmony, "harmony"},
    {ToolCallStyle::kMistral, "mistral"},
    {ToolCallStyle::kMistralArgs, "mistral-args"},
    {ToolCallStyle::kGemma4, "gemma4"},
    {ToolCallStyle::kGeneric, "generic"},
};

const char* tool_call_style_name(ToolCallStyle style) {
  return name_of(style, kToolCallStyleNames);
}

TemplateConversation conversation_for_template(ToolCallStyle style, ToolTurns turns,
                                               const ordered_json& messages,
                                               const ordered_json& tools) {
  if (style == ToolCallStyle::kGeneric) return generic_conversation(messages, tools);
  const bool mistral = style == ToolCallStyle::kMistral || style == ToolCallStyle::kMistralArgs;
  TemplateConversation out{ordered_json::array(), tools};
  for (const ordered_json& m : messages)
    out.messages.push_back(mistral                    ? mistral_message(m)
                           : m.contains("tool_calls") ? with_object_arguments(m)
                                                      : m);
  if (turns == ToolTurns::kGemma4Folded) out.messages = gemma4_fold_tool_turns(out.messages);
  return out;
}

}  // namespace kvforge
