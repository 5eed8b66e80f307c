// How a chat reply is read before it reaches the client: a reasoning
// model's thoughts split off as "reasoning_content" (reasoning_reader.h),
// tool calls read out as "tool_calls" (tool_call_reader.h), or gpt-oss's
// harmony messages read as both (harmony_reader.h). The same reader serves
// a whole reply (the message) and a stream (its deltas).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "app/chat/chat_template.h"
#include "app/chat/harmony_reader.h"
#include "app/chat/reasoning_reader.h"
#include "app/chat/tool_call_syntax.h"
#include "app/server/openai_response.h"
#include "app/server/tool_call_response.h"

namespace kvforge::server {

struct ReplyFormat {
  ReasoningFormat reasoning = ReasoningFormat::kNone;
  bool starts_in_reasoning = false;  // the prompt opened <think> itself
  bool harmony = false;              // gpt-oss: the reply is harmony messages
  ReasoningTags tags = kThinkTags;   // the marks around the thoughts (Gemma 4's own)
  bool active() const { return harmony || reasoning != ReasoningFormat::kNone; }
};

// The request's "reasoning_format" (llama-server's field; the names of
// serve --reasoning-format), else `configured`. Throws ApiError 400.
ReasoningFormat request_reasoning_format(const nlohmann::ordered_json& body,
                                         ReasoningFormat configured);

// The reply format of a chat request: `configured` (serve
// --reasoning-format) applies to templates that write <think>, to harmony
// ones and to Gemma 4's; `prompt_end` is the prompt's last characters.
ReplyFormat reply_format(ReasoningFormat configured, const ChatTemplate& chat_template,
                         std::string_view prompt_end);

class ChatReplyReader {
 public:
  ChatReplyReader(const ReplyFormat& format, const std::optional<ToolCallSyntax>& tools);

  struct Piece {
    std::string reasoning;
    std::string content;
    nlohmann::json tool_calls = nlohmann::json::array();  // stream deltas
    bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
  };
  Piece feed(std::string_view text);
  Piece finish();

  // The reply is whole tool calls (finish_reason "tool_calls").
  bool has_calls() const;
  // The whole reply as the message's fields: content (null when calls
  // replaced it), reasoning_content, tool_calls.
  void fill(Choice& c);

 private:
  Piece read(std::string_view text, bool last);
  Piece read_harmony(std::string_view text, bool last);

  std::optional<ReasoningReader> reasoning_;
  std::optional<HarmonyReader> harmony_;
  std::optional<ToolCallAssembler> tools_;
  std::string reasoning_text_, content_text_;
  std::string answer_;  // the text after the thoughts, as the tool call reader saw it
};

// A stream chunk of choice `index` carrying `piece` (reasoning as
// "reasoning_content", as llama-server, vLLM and DeepSeek's API stream it);
// `first` adds the role.
nlohmann::json reply_chunk(const ResponseMeta& meta, int index, const ChatReplyReader::Piece& piece,
                           bool first, const std::optional<std::vector<TokenLogprobInfo>>& logprobs,
                           bool include_usage);

}  // namespace kvforge::server
