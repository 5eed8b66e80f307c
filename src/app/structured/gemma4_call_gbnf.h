// GBNF for Gemma 4's calls and thoughts (tool_call_syntax.h, gemma4_arguments.h):
//   g4-args     a call's arguments in Gemma 4's notation: an object of bare
//               keys and values (strings between <|"|> marks, JSON numbers,
//               true, false, null, objects, arrays; nesting bounded), written
//               without whitespace as the template writes them
//   g4-thought  a thought channel, <|channel>thought ... <channel|>
// The values are not checked against the function's schema (Gemma 4's
// notation is not JSON, which the schema grammars write), as llama-server
// does not check them; the outer object's keys are the declared properties,
// as in kvforge's schema grammars.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace kvforge {

// The rules g4-args and g4-thought and the ones they use.
std::string gemma4_call_rules_gbnf();

// The rule `name` for the arguments of a function with JSON schema
// `parameters`: an object of its declared properties (any value each), or
// g4-args when it declares none or a name the notation cannot hold as a key.
std::string gemma4_arguments_rule_gbnf(const nlohmann::ordered_json& parameters,
                                       const std::string& name);

// The body of a rule for any text that does not contain `terminator`, which
// must be at least 2 bytes long and not repeat its first byte (both of
// Gemma 4's marks are so); std::invalid_argument otherwise.
std::string text_without_gbnf(std::string_view terminator);

}  // namespace kvforge
