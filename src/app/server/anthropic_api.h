// Anthropic's Messages API (POST /v1/messages, /v1/messages/count_tokens) as
// a translation onto the chat path, as llama-server serves it for agent tools
// that reach local models this way:
//   request: model, max_tokens (required), messages (role user/assistant,
//   content a string or text blocks), system (a string or text blocks),
//   stop_sequences, temperature, top_p, top_k, stream, metadata (accepted),
//   tools, tool_choice, tool_use and tool_result blocks (anthropic_blocks.h).
//   Images, documents and thinking are refused with a 400 naming them.
//   answer: {"id": "msg_...", "type": "message", "role": "assistant",
//   "content": [{"type": "text", "text"}] or tool_use blocks, "stop_reason":
//   "end_turn" | "max_tokens" | "stop_sequence" | "tool_use", "stop_sequence",
//   "usage": {"input_tokens" (computed), "cache_creation_input_tokens" (0),
//   "cache_read_input_tokens", "output_tokens"}}, as Anthropic counts them
//   (the three input counts add up to the prompt), or the events
//   message_start (once the first token came), content_block_start,
//   ping, content_block_delta..., content_block_stop, message_delta,
//   message_stop.
// Errors have Anthropic's shape {"type": "error", "error": {"type", "message"}}.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "app/chat/tool_call_reader.h"
#include "app/server/generation_pump.h"
#include "app/server/openai_request.h"

namespace kvforge::server {

struct MessagesRequest {
  nlohmann::ordered_json chat;  // the body for CompletionService (ApiKind::kChat)
  std::string model;
  std::vector<std::string> stop_sequences;
  bool stream = false;
};

// Throws ApiError (400 naming the field). `count_only`: /count_tokens, where
// max_tokens, stream and the sampling fields are not taken.
MessagesRequest parse_messages_request(std::string_view body, const RequestLimits& limits,
                                       bool count_only);

nlohmann::json anthropic_error(const ApiError& e);
std::string new_message_id();

// `tools`: the reply is read for tool calls (PreparedRequest::tool_calls).
nlohmann::json message_object(const MessagesRequest& r, const std::string& id, int input_tokens,
                              const std::optional<ToolCallSyntax>& tools,
                              const GenerationOutcome& done);

// Writes the typed event stream of one message through `write`: a text
// block, or with `tools` the blocks the reply turns out to be (text, then
// tool_use blocks whose input comes as input_json_delta pieces).
class MessagesEventWriter final : public GenerationEventWriter {
 public:
  MessagesEventWriter(const MessagesRequest& r, std::string id, int input_tokens,
                      const std::optional<ToolCallSyntax>& tools,
                      std::function<bool(const std::string&)> write);
  bool start() override;  // nothing yet: message_start waits for admitted()
  // message_start (its usage with the cached tokens), content_block_start (no tools), ping
  bool admitted(int cached_tokens) override;
  bool delta(const std::string& piece) override;
  bool finish(const GenerationOutcome& done) override;  // content_block_stop .. message_stop
  bool error(const ApiError& e) override;

 private:
  bool open_block(const nlohmann::json& block);  // closes the open one first
  bool close_block();
  bool block_delta(const nlohmann::json& delta);
  bool text(const std::string& text);  // into a text block, opened if need be
  bool forward(const ToolCallReader::Output& out);

  const MessagesRequest& request_;
  std::string id_;
  int input_tokens_;
  std::optional<ToolCallReader> calls_;  // the reply is read for tool calls
  std::function<bool(const std::string&)> write_;
  bool started_ = false;  // message_start written
  int cached_tokens_ = 0;
  int index_ = -1;  // of the last block started
  bool open_ = false, text_open_ = false;
};

}  // namespace kvforge::server
