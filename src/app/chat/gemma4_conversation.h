// Gemma 4's template (tokenizer.chat_template of the Gemma 4 GGUFs) knows no
// `tool` role: a model turn holds its calls, their results and the answer
// after them, read from one assistant message's `tool_calls`,
// `tool_responses` ([{"name", "response"}]) and `content`. OpenAI's API sends
// the same exchange as an assistant message with tool_calls, one `tool`
// message per result and a later assistant message.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace kvforge {

// `messages` with each calling assistant message, the `tool` messages right
// after it and a plain assistant answer after those folded into one
// assistant message, as llama-server folds them for this template:
//   tool_calls      the calling message's (arguments as they are given)
//   tool_responses  one per `tool` message: "name" of the call at the same
//                   position (else its tool_call_id), "response" its content
//                   parsed as JSON when it is JSON text, else as given
//   content         the answer's, when it has text
//   reasoning_content  the calling message's, when a string
// The calling message's own content is dropped. Other messages are kept.
nlohmann::ordered_json gemma4_fold_tool_turns(const nlohmann::ordered_json& messages);

// After a folded turn that ends the conversation with an answer, with
// thinking on, the template writes no generation prompt: the rendered prompt
// ends with "<turn|>\n". A model turn is opened then, as llama-server does.
void gemma4_open_model_turn(std::string& prompt);

}  // namespace kvforge
