// How a model writes tool calls, read from its chat template, and how a
// conversation with tools is put to that template.
//
// Every supported form is a start text, calls of the shape
//   {"name": "<function>", "<arguments key>": <JSON object>}
// (or, for mistral-args, <function>[ARGS]<JSON object>)
// separated by `separator`, and an end text:
//   hermes   (Qwen 2.5, Qwen 3, Hermes):   <tool_call>\n{...}\n</tool_call>, one block per call
//   llama3   (Llama 3.1-3.3, JSON calls):  {"name": ..., "parameters": {...}}, one call
//   generic  (templates that know no tools): {"tool_calls": [{...}, ...]}; the tools are
//            described in a system message kvforge writes, and earlier calls and tool
//            results are given to the template as plain assistant and user turns.
//   mistral  (Mistral Nemo, v3 templates):  [TOOL_CALLS][{...}, {...}]
//   mistral-args (Mistral Small 3.2, Devstral, Magistral; templates with [ARGS]):
//            [TOOL_CALLS]<function>[ARGS]{...}, once per call. History call ids
//            become the 9 letters and digits these templates insist on.
//   harmony  (gpt-oss): messages to functions.NAME on the commentary channel, read by
//            harmony_reader.h; the fields below are unused: tool_call_gbnf writes its
//            special tokens as token references (required and named calls only).
//   gemma4   (Gemma 4): <|tool_call>call:NAME{ARGS}<tool_call|>, once per call, where
//            ARGS is Gemma's own notation (gemma4_arguments.h): bare keys, strings
//            between <|"|> marks. The reader turns it into JSON. The first template
//            revisions read tool results from the calling assistant message's
//            `tool_responses`; the official one reads OpenAI's `tool` messages.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace kvforge {

class ChatTemplate;

enum class ToolCallStyle { kGeneric, kHermes, kLlama3, kHarmony, kMistral, kMistralArgs, kGemma4 };

struct ToolCallSyntax {
  ToolCallStyle style = ToolCallStyle::kGeneric;
  std::string start;          // before the first call
  std::string separator;      // between calls
  std::string end;            // after the last call
  std::string arguments_key;  // "arguments" or "parameters"
  bool parallel = true;       // the form holds more than one call
  // The text a reply begins with when it is a call: `start`, or "{" when empty.
  std::string trigger() const { return start.empty() ? "{" : start; }
  // A call is call_head(), its name, call_middle(), its arguments, call_tail():
  // {"name": "NAME", "KEY": ARGS}, NAME[ARGS]ARGS for mistral-args, NAME{...} for gemma4.
  bool json_call() const {
    return style != ToolCallStyle::kMistralArgs && style != ToolCallStyle::kGemma4;
  }
  std::string call_head() const { return json_call() ? "{\"name\": \"" : ""; }
  std::string call_middle() const {
    if (style == ToolCallStyle::kGemma4) return "";
    return json_call() ? "\", \"" + arguments_key + "\": " : "[ARGS]";
  }
  std::string call_tail() const { return json_call() ? "}" : ""; }
};

ToolCallSyntax tool_call_syntax(ToolCallStyle style);
// The style the template writes and reads (generic when it knows no tools).
ToolCallStyle detect_tool_call_style(const ChatTemplate& chat_template);
// gpt-oss's harmony format: <|start|>ROLE<|channel|>CHANNEL<|message|>...
bool is_harmony_template(const ChatTemplate& chat_template);
// Gemma 4's format: <|turn>ROLE ... <turn|>, calls as <|tool_call>call:NAME{...}.
bool is_gemma4_template(const ChatTemplate& chat_template);
const char* tool_call_style_name(ToolCallStyle style);

// How a template takes an OpenAI tool exchange: as sent (`tool` messages), or
// folded into one assistant message for Gemma 4's first template revisions,
// which know no `tool` role. Its official template marks itself with an
// "OpenAI Chat Completions" comment and reads `tool` messages, as llama.cpp
// tells the two apart.
enum class ToolTurns { kAsSent, kGemma4Folded };
ToolTurns tool_turns_for(const ChatTemplate& chat_template);

// The messages and tools to render for `style`. Assistant tool_calls'
// arguments (JSON text in OpenAI's API) become objects, as templates expect;
// for generic, `tools` (an OpenAI tools array, or null with tool_choice
// "none") are described in a system message and the tool turns rewritten;
// with kGemma4Folded, a calling assistant message, the `tool` messages after
// it and the assistant's answer become one assistant message with
// `tool_responses`, as llama-server folds them for those templates (the
// calling message's own text is dropped, as there).
struct TemplateConversation {
  nlohmann::ordered_json messages;
  nlohmann::ordered_json tools;  // what the template receives (null for generic)
};
TemplateConversation conversation_for_template(ToolCallStyle style, ToolTurns turns,
                                               const nlohmann::ordered_json& messages,
                                               const nlohmann::ordered_json& tools);

}  // namespace kvforge
