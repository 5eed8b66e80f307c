#include "app/server/request_fields.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "app/server/openai_error.h"

namespace kvforge::server {
namespace {

// Fields parsed by openai_request.cpp (some only to refuse unsupported values there).
constexpr std::string_view kCommonFields[] = {
    "model",
    "max_tokens",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "n",
    "stream",
    "stream_options",
    "stop",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "repetition_penalty",
    "logprobs",
    "logit_bias",
    "response_format",
    "grammar",
    "json_schema",
    "ignore_eos",
    "context_shift",
    "n_keep",
    "best_of",
    "echo",
    "suffix",
};
constexpr std::string_view kChatFields[] = {
    "messages",        "max_completion_tokens", "top_logprobs",         "tools",
    "tool_choice",     "parallel_tool_calls",   "chat_template_kwargs", "truncation",
    "reasoning_format"};
constexpr std::string_view kCompletionFields[] = {"prompt"};
// OpenAI fields about billing and storage, not the text: accepted, no effect.
constexpr std::string_view kBookkeepingFields[] = {"user", "store", "metadata", "service_tier"};

template <size_t N>
bool listed_field(const std::string_view (&names)[N], const std::string& key) {
  return std::find(std::begin(names), std::end(names), key) != std::end(names);
}

bool known_field(const std::string& key, ApiKind kind) {
  return listed_field(kCommonFields, key) || listed_field(kBookkeepingFields, key) ||
         (kind == ApiKind::kChat ? listed_field(kChatFields, key)
                                 : listed_field(kCompletionFields, key));
}

}  // namespace

void reject_unknown_field(const std::string& key, ApiKind kind) {
  if (known_field(key, kind)) return;
  throw ApiError(400,
                 "'" + key +
                     "' is not supported by kvforge serve; it would be ignored, so the request "
                     "is refused (remove the field)",
                 "invalid_request_error", key);
}

void reject_unknown_fields(const nlohmann::ordered_json& body, ApiKind kind) {
  if (!body.is_object()) return;  // the parser reports the shape
  for (const auto& [key, value] : body.items()) reject_unknown_field(key, kind);
}

}  // namespace kvforge::server
