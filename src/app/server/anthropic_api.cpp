#include "app/server/anthropic_api.h"

#include <random>
#include <set>

#include "app/server/anthropic_blocks.h"
#include "app/server/json_body_parser.h"
#include "app/server/model_names.h"

namespace kvforge::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

ordered_json messages_chat_messages(const ordered_json& body) {
  ordered_json out = ordered_json::array();
  if (const auto s = body.find("system"); s != body.end() && !s->is_null())
    out.push_back({{"role", "system"}, {"content", messages_text(*s, "system")}});
  const auto m = body.find("messages");
  if (m == body.end() || !m->is_array() || m->empty())
    messages_refuse("messages", "must be a non-empty array");
  for (const ordered_json& msg : *m) {
    if (!msg.is_object()) messages_refuse("messages", "must hold objects");
    const std::string role = string_value(msg, "role", "");
    if (role != "user" && role != "assistant")
      messages_refuse("messages", "roles must be user or assistant, not '" + role + "'");
    if (!msg.contains("content")) messages_refuse("messages", "need 'content'");
    append_chat_turns(role, msg["content"], out);
  }
  return out;
}

void messages_sampling(const ordered_json& body, MessagesRequest& r) {
  const auto max = body.find("max_tokens");
  if (max == body.end() || !max->is_number_integer() || max->get<int64_t>() < 1)
    messages_refuse("max_tokens", "is required: a positive integer");
  r.chat["max_tokens"] = *max;
  for (const char* key : {"temperature", "top_p", "top_k"})
    if (body.contains(key) && !body[key].is_null()) r.chat[key] = body[key];
  if (const auto s = body.find("stop_sequences"); s != body.end() && !s->is_null()) {
    if (!s->is_array()) messages_refuse("stop_sequences", "must be an array of strings");
    for (const ordered_json& stop : *s) {
      if (!stop.is_string() || stop.get<std::string>().empty())
        messages_refuse("stop_sequences", "must hold non-empty strings");
      r.stop_sequences.push_back(stop.get<std::string>());
    }
    if (!r.stop_sequences.empty()) r.chat["stop"] = *s;
  }
  if (const auto s = body.find("stream"); s != body.end() && !s->is_null()) {
    if (!s->is_boolean()) messages_refuse("stream", "must be a boolean");
    r.stream = s->get<bool>();
  }
}

const char* anthropic_error_type(int status) {
  switch (status) {
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
      return "overloaded_error";
    default:
      return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

json messages_stop(const MessagesRequest& r, const GenerationOutcome& done, bool tool_use) {
  if (done.finish == FinishReason::Length)
    return {{"stop_reason", "max_tokens"}, {"stop_sequence", nullptr}};
  if (tool_use) return {{"stop_reason", "tool_use"}, {"stop_sequence", nullptr}};
  if (done.stop_index && *done.stop_index < r.stop_sequences.size())
    return {{"stop_reason", "stop_sequence"},
            {"stop_sequence", r.stop_sequences[*done.stop_index]}};
  return {{"stop_reason", "end_turn"}, {"stop_sequence", nullptr}};
}

// Anthropic's usage: input_tokens counts only the prompt tokens computed for
// this request, cache_read_input_tokens those taken from a cache, and
// cache_creation_input_tokens those written at a cache_control breakpoint,
// which kvforge accepts and ignores (every computed block is cached anyway,
// at no extra cost), so it is always 0. The three add up to the prompt.
json messages_usage(int prompt_tokens, int cached_tokens, int output_tokens) {
  return {{"input_tokens", prompt_tokens - cached_tokens},
          {"cache_creation_input_tokens", 0},
          {"cache_read_input_tokens", cached_tokens},
          {"output_tokens", output_tokens}};
}

}  // namespace

MessagesRequest parse_messages_request(std::string_view text, const RequestLimits& limits,
                                       bool count_only) {
  const ordered_json body = parse_json_body(text, limits, JsonBodyChecks{});
  static const std::set<std::string> create = {
      "model", "max_tokens", "messages", "system",   "stop_sequences", "temperature",
      "top_p", "top_k",      "stream",   "metadata", "tools",          "tool_choice"};
  static const std::set<std::string> count = {"model", "messages", "system", "tools",
                                              "tool_choice"};
  for (const auto& [key, value] : body.items())
    if (!(count_only ? count : create).count(key))
      messages_refuse(
          key, "is not supported on /v1/messages" + std::string(count_only ? "/count_tokens" : ""));
  MessagesRequest r;
  const auto model = body.find("model");
  if (model == body.end() || !model->is_string()) messages_refuse("model", "must be a string");
  r.model = model->get<std::string>();
  if (!serves_model(limits, r.model)) throw model_not_found(limits, r.model);
  r.chat["model"] = r.model;
  r.chat["messages"] = messages_chat_messages(body);
  messages_tools(body, r.chat);
  if (!count_only) messages_sampling(body, r);
  if (const auto m = body.find("metadata"); m != body.end() && !m->is_null() && !m->is_object())
    messages_refuse("metadata", "must be an object");
  return r;
}

json anthropic_error(const ApiError& e) {
  return {{"type", "error"},
          {"error", {{"type", anthropic_error_type(e.status())}, {"message", e.what()}}}};
}

std::string new_message_id() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  char buf[40];
  std::snprintf(buf, sizeof buf, "msg_%016llx%08llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng() & 0xFFFFFFFFu));
  return buf;
}

json message_object(const MessagesRequest& r, const std::string& id, int input_tokens,
                    const std::optional<ToolCallSyntax>& tools, const GenerationOutcome& done) {
  ReplyContent content = reply_content(tools, done.text);
  json out = {{"id", id},
              {"type", "message"},
              {"role", "assistant"},
              {"model", r.model},
              {"content", std::move(content.blocks)}};
  out.update(messages_stop(r, done, content.tool_use));
  out["usage"] = messages_usage(input_tokens, done.cached_tokens, done.tokens);
  return out;
}

MessagesEventWriter::MessagesEventWriter(const MessagesRequest& r, std::string id, int input_tokens,
                                         const std::optional<ToolCallSyntax>& tools,
                                         std::function<bool(const std::string&)> write)
    : request_(r), id_(std::move(id)), input_tokens_(input_tokens), write_(std::move(write)) {
  if (tools) calls_.emplace(*tools);
}

// message_start carries the usage of the prompt, whose cached part is known
// only once the request is admitted: it waits for the first token (the
// Anthropic clients take the final message's input counts from it).
bool MessagesEventWriter::start() { return true; }

bool MessagesEventWriter::admitted(int cached_tokens) {
  if (started_) return true;
  started_ = true;
  cached_tokens_ = cached_tokens;
  const json message = {{"id", id_},
                        {"type", "message"},
                        {"role", "assistant"},
                        {"model", request_.model},
                        {"content", json::array()},
                        {"stop_reason", nullptr},
                        {"stop_sequence", nullptr},
                        {"usage", messages_usage(input_tokens_, cached_tokens, 0)}};
  // A reply read for tool calls opens its first block once it is known to be text or calls.
  return write_(
             typed_sse_event("message_start", {{"type", "message_start"}, {"message", message}})) &&
         (calls_ || open_block({{"type", "text"}, {"text", ""}})) &&
         write_(typed_sse_event("ping", {{"type", "ping"}}));
}

bool MessagesEventWriter::open_block(const json& block) {
  if (!close_block()) return false;
  ++index_;
  open_ = true;
  text_open_ = block["type"] == "text";
  return write_(typed_sse_event(
      "content_block_start",
      {{"type", "content_block_start"}, {"index", index_}, {"content_block", block}}));
}

bool MessagesEventWriter::close_block() {
  if (!open_) return true;
  open_ = text_open_ = false;
  return write_(
      typed_sse_event("content_block_stop", {{"type", "content_block_stop"}, {"index", index_}}));
}

bool MessagesEventWriter::block_delta(const json& delta) {
  return write_(
      typed_sse_event("content_block_delta",
                      {{"type", "content_block_delta"}, {"index", index_}, {"delta", delta}}));
}

bool MessagesEventWriter::text(const std::string& text) {
  if (!text_open_ && !open_block({{"type", "text"}, {"text", ""}})) return false;
  return block_delta({{"type", "text_delta"}, {"text", text}});
}

bool MessagesEventWriter::forward(const ToolCallReader::Output& out) {
  if (!out.content.empty() && !text(out.content)) return false;
  for (const ToolCallDelta& d : out.calls) {
    if (d.first && !open_block({{"type", "tool_use"},
                                {"id", new_tool_use_id()},
                                {"name", d.name},
                                {"input", json::object()}}))
      return false;
    if (!d.arguments.empty() &&
        !block_delta({{"type", "input_json_delta"}, {"partial_json", d.arguments}}))
      return false;
  }
  return true;
}

bool MessagesEventWriter::delta(const std::string& piece) {
  return calls_ ? forward(calls_->feed(piece)) : text(piece);
}

bool MessagesEventWriter::finish(const GenerationOutcome& done) {
  if (!admitted(done.cached_tokens)) return false;
  if (calls_ && !forward(calls_->finish())) return false;
  if (index_ < 0 && !open_block({{"type", "text"}, {"text", ""}})) return false;  // an empty reply
  const bool tool_use = calls_ && calls_->complete() && !calls_->calls().empty();
  return close_block() &&
         write_(typed_sse_event(
             "message_delta",
             {{"type", "message_delta"},
              {"delta", messages_stop(request_, done, tool_use)},
              {"usage", messages_usage(input_tokens_, cached_tokens_, done.tokens)}})) &&
         write_(typed_sse_event("message_stop", {{"type", "message_stop"}}));
}

bool MessagesEventWriter::error(const ApiError& e) {
  return write_(typed_sse_event("error", anthropic_error(e)));
}

}  // namespace kvforge::server
