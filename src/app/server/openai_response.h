// Builders for OpenAI response bodies and server-sent-event chunks:
// text_completion / chat.completion objects, their streaming chunks, the
// usage chunk of stream_options.include_usage, and the SSE framing
// ("data: {...}\n\n", ending with "data: [DONE]\n\n").
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "app/server/openai_error.h"

namespace kvforge::server {

enum class ApiKind { kCompletion, kChat };

struct Usage {
  int prompt_tokens = 0;
  int completion_tokens = 0;
  int truncated_messages = 0;  // dropped to fit the context; reported when non-zero
  int cached_tokens = 0;       // prompt_tokens_details.cached_tokens: served from the prefix cache
};

// One generated token with its log-probability and the most likely alternatives.
struct TokenLogprobInfo {
  std::string token;  // the token's bytes (may be part of a UTF-8 character)
  float logprob = 0;
  std::vector<std::pair<std::string, float>> top;
};

struct Choice {
  int index = 0;
  std::string text;
  std::string finish_reason;                              // "stop" or "length"
  std::optional<std::vector<TokenLogprobInfo>> logprobs;  // set when requested
  nlohmann::json tool_calls;  // chat: the message's tool_calls array, null when none
  std::string reasoning;      // chat: the message's reasoning_content (chat_reply.h), if any
};

// Identity shared by every chunk of one response.
struct ResponseMeta {
  ApiKind kind = ApiKind::kCompletion;
  std::string id;       // "cmpl-..." or "chatcmpl-..."
  int64_t created = 0;  // Unix seconds
  std::string model;
};

// A fresh meta with a random id and the current time.
ResponseMeta new_response_meta(ApiKind kind, std::string model);

nlohmann::json full_response(const ResponseMeta& meta, const std::vector<Choice>& choices,
                             const Usage& usage);

// One streamed piece of choice `index`. Chat: the first chunk of a choice
// carries role "assistant" (first = true). finish_reason set on the last one.
// include_usage: every chunk carries "usage": null, as OpenAI does.
nlohmann::json stream_chunk(const ResponseMeta& meta, int index, const std::string& text,
                            bool first, const std::optional<std::string>& finish_reason,
                            const std::optional<std::vector<TokenLogprobInfo>>& logprobs,
                            bool include_usage);
// The last chunk before [DONE] with stream_options.include_usage: no choices, the usage.
nlohmann::json usage_chunk(const ResponseMeta& meta, const Usage& usage);

nlohmann::json models_response(const std::vector<std::string>& ids, int64_t created);

// JSON text safe for any token bytes (ill-formed UTF-8 becomes U+FFFD).
std::string dump_json(const nlohmann::json& j);
std::string sse_event(const nlohmann::json& j);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";
// The end of a chat or completions stream that failed after it began: the
// error in OpenAI's shape as its last event (the SDKs throw it), then [DONE];
// one write each, as Ollama's translation reads one event at a time.
bool write_stream_error(const ApiError& e, const std::function<bool(const std::string&)>& write);

}  // namespace kvforge::server
