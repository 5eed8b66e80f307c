// The grammar of a reply to a request with tools: calls in the model's tool
// call syntax (tool_call_syntax.h), each call's arguments valid for its
// function's JSON schema, and with tool_choice "auto" the alternative of a
// text reply, which is any text that does not begin with the syntax's
// trigger. So the model chooses by its first tokens, and once it starts a
// call the call is whole and valid by construction. gpt-oss's harmony calls
// (special tokens, as token references) are made only for "required" and a
// named function: one call, no text. Gemma 4's calls are in its own
// notation (gemma4_call_gbnf.h), after an optional thought channel.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/chat/tool_call_syntax.h"

namespace kvforge {

struct ToolFunction {
  std::string name;                   // [A-Za-z0-9_-]{1,64}
  nlohmann::ordered_json parameters;  // a JSON schema of an object
};

struct ToolGrammarRequest {
  std::vector<ToolFunction> functions;  // the ones the reply may call
  bool text_allowed = true;             // tool_choice "auto"
  bool parallel = true;                 // parallel_tool_calls (and the syntax allows it)
};

// At most this many calls in one reply.
inline constexpr int kMaxParallelToolCalls = 8;

// Throws GrammarError naming the function whose schema is not supported.
std::string tool_call_gbnf(const ToolCallSyntax& syntax, const ToolGrammarRequest& request);

}  // namespace kvforge
