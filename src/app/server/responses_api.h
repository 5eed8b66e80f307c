// OpenAI's Responses API (POST /v1/responses) as a translation onto the chat
// path: the request becomes an OpenAI chat body for CompletionService, and
// the generation (generation_pump.h) becomes a response object, or its typed
// SSE events:
//   response.created, response.in_progress, response.output_item.added,
//   response.content_part.added, response.output_text.delta...,
//   response.output_text.done, response.content_part.done,
//   response.output_item.done, then response.completed (or
//   response.incomplete when max_output_tokens cut the text).
// Taken: model, input (a string, or message items with string or
// input_text/output_text parts), instructions, max_output_tokens,
// temperature, top_p, stream, text.format (text, json_object, json_schema
// through the grammar), truncation ("auto" drops the oldest turns, as on
// chat), store (default true: kept in the response store, response_store.h),
// previous_response_id (the turn continues a stored response,
// responses_history.h), metadata (echoed), user, function tools with
// tool_choice and parallel_tool_calls, and function_call /
// function_call_output input items (responses_tools.h); any other field is
// a 400 naming it.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/chat/tool_call_syntax.h"
#include "app/server/generation_pump.h"
#include "app/server/openai_request.h"
#include "app/server/tool_call_response.h"

namespace kvforge::server {

struct ResponsesRequest {
  // The body for CompletionService::prepare (ApiKind::kChat); its messages
  // are filled once the previous response is known (conversation_messages).
  nlohmann::ordered_json chat;
  nlohmann::ordered_json instructions;  // null when none
  nlohmann::ordered_json input;         // the turn's input as chat messages
  std::string previous_response_id;     // empty: a new conversation
  bool store = true;
  bool stream = false;
  nlohmann::json echo;  // the request's settings the response object repeats
};

// Throws ApiError (400 naming the field, 404 model_not_found).
ResponsesRequest parse_responses_request(std::string_view body, const RequestLimits& limits);

// The response object: "in_progress" with no output before generation, else
// "completed" or "incomplete" with the message.
struct ResponseIds {
  std::string response;  // "resp_..."
  std::string message;   // "msg_..."
  int64_t created_at = 0;
};
ResponseIds new_response_ids();
nlohmann::json response_object(const ResponsesRequest& r, const ResponseIds& ids,
                               const std::string& model, int input_tokens,
                               const GenerationOutcome* done,
                               const nlohmann::json& calls = nullptr);

// {"type": "output_text", "text", "annotations": []}: a message's one content part.
nlohmann::json output_text_part(const std::string& text);

// Writes the typed event stream of one response through `write`
// (responses_events.cpp).
class ResponsesEventWriter final : public GenerationEventWriter {
 public:
  ResponsesEventWriter(const ResponsesRequest& r, ResponseIds ids, std::string model,
                       int input_tokens, std::function<bool(const std::string&)> write);
  bool start() override;  // created .. content_part.added
  bool delta(const std::string& text) override;
  bool finish(const GenerationOutcome& done) override;  // output_text.done .. completed
  bool error(const ApiError& e) override;
  // The response object of a whole reply, as its stream ends (for a
  // non-streamed request whose reply is to be read the way a stream is).
  nlohmann::json replay(const GenerationOutcome& done);
  // Called with the finished response object (and the reply's tool calls in
  // the chat shape, or null) before its last events go out.
  std::function<void(const GenerationOutcome&, const nlohmann::json& response,
                     const nlohmann::json& calls)>
      on_finish;
  // The request has tools: the reply is read as it streams (the chat path's
  // ToolCallReader). Text once known to be text streams as the message's
  // deltas; each call is a function_call item, added when its name is read,
  // its arguments in pieces as they are generated, done at the end.
  std::optional<ToolCallSyntax> tool_calls;

 private:
  bool open_message();
  bool send_text(const std::string& text);
  bool close_message(const GenerationOutcome& done, const nlohmann::json& message);
  bool forward(const ToolCallReader::Output& out);
  bool add_call(const nlohmann::json& chat_call);
  bool close_calls(const nlohmann::json& calls);
  nlohmann::json final_response(const GenerationOutcome& done, nlohmann::json& calls);
  // The reply ended at max_output_tokens inside a call it had begun.
  bool call_cut(const GenerationOutcome& done) const;
  bool send(const std::string& type, nlohmann::json data);
  nlohmann::json item(const std::string& status, const nlohmann::json& content) const;

  const ResponsesRequest& request_;
  ResponseIds ids_;
  std::string model_;
  int input_tokens_;
  std::function<bool(const std::string&)> write_;
  int sequence_ = 0;
  int next_index_ = 0;                       // output_index of the next item added
  std::optional<int> message_index_;         // the message item's, once added
  std::string text_sent_;                    // the message's deltas so far
  std::optional<ToolCallAssembler> calls_;   // reading the reply, with tools
  std::vector<nlohmann::json> call_items_;   // function_call items added (in_progress)
  std::vector<int> call_indexes_;            // their output_index
  std::vector<std::string> call_arguments_;  // their arguments so far
};

}  // namespace kvforge::server
