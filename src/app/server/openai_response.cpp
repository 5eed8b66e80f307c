#include "app/server/openai_response.h"

#include <chrono>
#include <cstdio>
#include <random>

namespace kvforge::server {
namespace {

using nlohmann::json;

json usage_json(const Usage& u) {
  json out = {{"prompt_tokens", u.prompt_tokens},
              {"completion_tokens", u.completion_tokens},
              {"total_tokens", u.prompt_tokens + u.completion_tokens},
              {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
  if (u.truncated_messages > 0) out["truncated_messages"] = u.truncated_messages;
  return out;
}

json bytes_of(const std::string& s) {
  json a = json::array();
  for (unsigned char c : s) a.push_back(c);
  return a;
}

// Chat: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}]}.
json chat_logprobs(const std::vector<TokenLogprobInfo>& lps) {
  json content = json::array();
  for (const auto& t : lps) {
    json top = json::array();
    for (const auto& [tok, lp] : t.top)
      top.push_back({{"token", tok}, {"logprob", lp}, {"bytes", bytes_of(tok)}});
    content.push_back({{"token", t.token},
                       {"logprob", t.logprob},
                       {"bytes", bytes_of(t.token)},
                       {"top_logprobs", top}});
  }
  return {{"content", content}};
}

// Completions (legacy): parallel arrays; top_logprobs as {token: logprob} maps.
json completion_logprobs(const std::vector<TokenLogprobInfo>& lps, size_t text_offset) {
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(),
       offsets = json::array();
  size_t offset = text_offset;
  for (const auto& t : lps) {
    tokens.push_back(t.token);
    token_logprobs.push_back(t.logprob);
    json alternatives = json::object();
    for (const auto& [tok, lp] : t.top) alternatives[tok] = lp;
    top.push_back(alternatives);
    offsets.push_back(offset);
    offset += t.token.size();
  }
  return {{"tokens", tokens},
          {"token_logprobs", token_logprobs},
          {"top_logprobs", top},
          {"text_offset", offsets}};
}

json logprobs_json(ApiKind kind, const std::optional<std::vector<TokenLogprobInfo>>& lps) {
  if (!lps) return nullptr;
  return kind == ApiKind::kChat ? chat_logprobs(*lps) : completion_logprobs(*lps, 0);
}

const char* object_name(ApiKind kind, bool chunk) {
  if (kind == ApiKind::kChat) return chunk ? "chat.completion.chunk" : "chat.completion";
  return "text_completion";
}

}  // namespace

ResponseMeta new_response_meta(ApiKind kind, std::string model) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  ResponseMeta m;
  m.kind = kind;
  m.id = std::string(kind == ApiKind::kChat ? "chatcmpl-" : "cmpl-") + hex;
  m.created = std::chrono::duration_cast<std::chrono::seconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  m.model = std::move(model);
  return m;
}

json full_response(const ResponseMeta& meta, const std::vector<Choice>& choices,
                   const Usage& usage) {
  json cs = json::array();
  for (const Choice& c : choices) {
    json choice = {{"index", c.index}};
    if (meta.kind == ApiKind::kChat) {
      choice["message"] = {{"role", "assistant"}, {"content", c.text}};
      if (!c.tool_calls.is_null()) {
        if (c.text.empty()) choice["message"]["content"] = nullptr;
        choice["message"]["tool_calls"] = c.tool_calls;
      }
      if (!c.reasoning.empty()) choice["message"]["reasoning_content"] = c.reasoning;
    } else {
      choice["text"] = c.text;
    }
    choice["logprobs"] = logprobs_json(meta.kind, c.logprobs);
    choice["finish_reason"] = c.finish_reason;
    cs.push_back(std::move(choice));
  }
  return {{"id", meta.id},           {"object", object_name(meta.kind, false)},
          {"created", meta.created}, {"model", meta.model},
          {"choices", cs},           {"usage", usage_json(usage)}};
}

json stream_chunk(const ResponseMeta& meta, int index, const std::string& text, bool first,
                  const std::optional<std::string>& finish_reason,
                  const std::optional<std::vector<TokenLogprobInfo>>& logprobs,
                  bool include_usage) {
  json choice = {{"index", index}};
  if (meta.kind == ApiKind::kChat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!text.empty() || (first && !finish_reason)) delta["content"] = text;
    choice["delta"] = std::move(delta);
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = logprobs_json(meta.kind, logprobs);
  choice["finish_reason"] = finish_reason ? json(*finish_reason) : json(nullptr);
  json chunk = {{"id", meta.id},
                {"object", object_name(meta.kind, true)},
                {"created", meta.created},
                {"model", meta.model},
                {"choices", json::array({std::move(choice)})}};
  if (include_usage) chunk["usage"] = nullptr;
  return chunk;
}

json usage_chunk(const ResponseMeta& meta, const Usage& usage) {
  return {{"id", meta.id},
          {"object", object_name(meta.kind, true)},
          {"created", meta.created},
          {"model", meta.model},
          {"choices", json::array()},
          {"usage", usage_json(usage)}};
}

json models_response(const std::vector<std::string>& ids, int64_t created) {
  json data = json::array();
  for (const auto& id : ids)
    data.push_back(
        {{"id", id}, {"object", "model"}, {"created", created}, {"owned_by", "kvforge"}});
  return {{"object", "list"}, {"data", data}};
}

std::string dump_json(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string sse_event(const json& j) { return "data: " + dump_json(j) + "\n\n"; }

bool write_stream_error(const ApiError& e, const std::function<bool(const std::string&)>& write) {
  write(sse_event(e.to_json()));
  return write(kSseDone);
}

}  // namespace kvforge::server
