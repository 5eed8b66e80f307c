// Chat requests whose conversation does not fit the context (issue 40): with
// truncation the oldest turns are dropped (never system messages, nor the
// last message; app/chat/conversation_trim.h) and a max_tokens beyond what is
// left is cut to it (finish "length" there, as llama-server ends a reply at
// the context); without, the request keeps OpenAI's 400
// context_length_exceeded.
//
// Truncation is asked per request with the Responses API's field,
// "truncation": "auto" | "disabled"; `kvforge serve --truncate` makes "auto"
// the default. The trim is reported in the response: the header
// X-Kvforge-Truncated-Messages and usage.truncated_messages (when non-zero).
//
// How much is dropped: the prompt must leave the reply min(max_tokens,
// context/2) tokens, or context/4 when max_tokens is not given (a reply then
// runs to the end of the context), so a long history never leaves a reply
// of a few tokens.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

namespace kvforge::server {

// The request's "truncation": true for "auto", false for "disabled",
// nullopt when absent; ApiError 400 for anything else.
std::optional<bool> parse_truncation(const nlohmann::ordered_json& body);

// Prompt tokens a conversation may take in a context of `context` tokens
// whose reply asks for `max_tokens` (nullopt: not given), at most `max_prompt`.
int prompt_budget(int context, int max_prompt, std::optional<int> max_tokens);

}  // namespace kvforge::server
