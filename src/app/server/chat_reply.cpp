#include "app/server/chat_reply.h"

#include <stdexcept>

#include "app/server/openai_error.h"

namespace kvforge::server {

ReasoningFormat request_reasoning_format(const nlohmann::ordered_json& body,
                                         ReasoningFormat configured) {
  const auto f = body.find("reasoning_format");
  if (f == body.end() || f->is_null()) return configured;
  if (!f->is_string()) throw bad_param("reasoning_format", "'reasoning_format' must be a string");
  try {
    return parse_reasoning_format(f->get<std::string>());
  } catch (const std::invalid_argument& e) {
    throw bad_param("reasoning_format", std::string("'reasoning_format': ") + e.what());
  }
}

ReplyFormat reply_format(ReasoningFormat configured, const ChatTemplate& chat_template,
                         std::string_view prompt_end) {
  ReplyFormat f;
  f.harmony = is_harmony_template(chat_template);
  const bool gemma4 = is_gemma4_template(chat_template);
  if (gemma4) f.tags = kGemma4Thought;
  // Only a template that writes <think> belongs to a model that thinks so.
  if (f.harmony || gemma4 ||
      chat_template.source().find(ReasoningReader::kOpen) != std::string::npos)
    f.reasoning = configured;
  f.starts_in_reasoning = !f.harmony && f.reasoning != ReasoningFormat::kNone &&
                          prompt_opens_reasoning(prompt_end, f.tags);
  return f;
}

ChatReplyReader::ChatReplyReader(const ReplyFormat& format,
                                 const std::optional<ToolCallSyntax>& tools) {
  if (format.harmony)
    harmony_.emplace(format.reasoning != ReasoningFormat::kNone);
  else if (format.reasoning != ReasoningFormat::kNone)
    reasoning_.emplace(format.reasoning, format.starts_in_reasoning, format.tags);
  if (tools) tools_.emplace(*tools);
}

ChatReplyReader::Piece ChatReplyReader::read_harmony(std::string_view text, bool last) {
  HarmonyReader::Output o = harmony_->feed(text);
  if (last) {
    HarmonyReader::Output rest = harmony_->finish();
    o.reasoning += rest.reasoning;
    o.content += rest.content;
    o.calls.insert(o.calls.end(), rest.calls.begin(), rest.calls.end());
  }
  Piece p{std::move(o.reasoning), std::move(o.content)};
  // Calls the request did not offer tools for are dropped, as llama-server does.
  if (tools_) p.tool_calls = tools_->delta_json(o.calls);
  return p;
}

ChatReplyReader::Piece ChatReplyReader::read(std::string_view text, bool last) {
  if (harmony_) return read_harmony(text, last);
  ReasoningDelta d = reasoning_ ? reasoning_->feed(text) : ReasoningDelta{"", std::string(text)};
  if (last && reasoning_) {
    ReasoningDelta rest = reasoning_->finish();
    d.reasoning += rest.reasoning;
    d.content += rest.content;
  }
  Piece p{std::move(d.reasoning), ""};
  if (!tools_) {
    p.content = std::move(d.content);
    return p;
  }
  answer_ += d.content;
  ToolCallReader::Output o = tools_->reader().feed(d.content);
  if (last) o.content += tools_->reader().finish().content;
  p.content = std::move(o.content);
  p.tool_calls = tools_->delta_json(o.calls);
  return p;
}

ChatReplyReader::Piece ChatReplyReader::feed(std::string_view text) {
  Piece p = read(text, false);
  reasoning_text_ += p.reasoning;
  content_text_ += p.content;
  return p;
}

ChatReplyReader::Piece ChatReplyReader::finish() {
  Piece p = read("", true);
  reasoning_text_ += p.reasoning;
  content_text_ += p.content;
  return p;
}

bool ChatReplyReader::has_calls() const {
  if (!tools_) return false;
  if (harmony_) return !harmony_->calls().empty();
  return tools_->reader().complete() && !tools_->reader().calls().empty();
}

void ChatReplyReader::fill(Choice& c) {
  c.reasoning = reasoning_text_;
  if (!has_calls()) {
    // A reply that is not whole calls is text, a call cut short included.
    c.text = tools_ && !harmony_ ? answer_ : content_text_;
    return;
  }
  c.tool_calls = harmony_ ? tools_->message_json(harmony_->calls()) : tools_->message_json();
  c.text = harmony_ ? content_text_ : "";
  if (c.finish_reason == "stop") c.finish_reason = "tool_calls";
}

nlohmann::json reply_chunk(const ResponseMeta& meta, int index, const ChatReplyReader::Piece& piece,
                           bool first, const std::optional<std::vector<TokenLogprobInfo>>& logprobs,
                           bool include_usage) {
  nlohmann::json chunk =
      stream_chunk(meta, index, piece.content, first, std::nullopt, logprobs, include_usage);
  nlohmann::json& delta = chunk["choices"][0]["delta"];
  if (piece.content.empty() && first) delta["content"] = nullptr;
  if (!piece.reasoning.empty()) delta["reasoning_content"] = piece.reasoning;
  if (!piece.tool_calls.empty()) delta["tool_calls"] = piece.tool_calls;
  return chunk;
}

}  // namespace kvforge::server
