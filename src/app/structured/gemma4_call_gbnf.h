// GBNF for Gemma 4's calls and thoughts (tool_call_syntax.h, gemma4_arguments.h):
//   g4-args     a call's arguments in Gemma 4's notation: an object of bare
//               keys and values (strings between <|"|> marks, JSON numbers,
//               true, false, null, objects, arrays; nesting bounded), written
//               without whitespace as the template writes them
//   g4-thought  a thought channel, <|channel>thought ... <channel|>
// Like llama-server, the arguments are not checked against the function's
// schema: Gemma 4's notation is not JSON, which the schema grammars write.
#pragma once

#include <string>
#include <string_view>

namespace kvforge {

// The rules g4-args and g4-thought and the ones they use.
std::string gemma4_call_rules_gbnf();

// The body of a rule for any text that does not contain `terminator`, which
// must be at least 2 bytes long and not repeat its first byte (both of
// Gemma 4's marks are so); std::invalid_argument otherwise.
std::string text_without_gbnf(std::string_view terminator);

}  // namespace kvforge
