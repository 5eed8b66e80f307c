// Typed, validated forms of the bodies of POST /v1/completions and
// POST /v1/chat/completions. Parsing checks every field the server honours
// (type, range, combination) and throws ApiError (400, naming the parameter)
// for the first problem, so nothing malformed reaches the engine loop.
//
// Honoured: model, prompt (string or token ids), messages, max_tokens
// (max_completion_tokens for chat), temperature, top_p, top_k, min_p, seed,
// stop, n, presence_penalty, frequency_penalty, repetition_penalty,
// logprobs/top_logprobs, stream, stream_options.include_usage, ignore_eos,
// tools, tool_choice and parallel_tool_calls (tool_request.h), chat_template_kwargs,
// response_format (text, json_object, json_schema), llama-server's grammar and json_schema.
// Rejected with a reason rather than silently ignored: echo, suffix,
// best_of != n, logit_bias, non-text
// content parts. Unknown fields are ignored, as most OpenAI-compatible servers do.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/chat/reasoning_reader.h"
#include "app/server/json_body_parser.h"
#include "app/structured/constraint_spec.h"
#include "kvforge/sampling_params.h"

namespace kvforge::server {

// Limits the request layer enforces (the server fills them from its flags and the model).
struct RequestLimits {
  std::vector<std::string> model_ids;  // accepted "model" values; empty = any
  size_t listed_models = 1;            // how many of model_ids /v1/models lists (the --alias ids)
  bool any_model_name = false;         // --any-model-name: every "model" value is accepted
  int max_n = 8;                       // parallel samples per request
  int max_tokens_limit = 4096;         // largest max_tokens (the context size)
  size_t max_messages = 1024;
  size_t max_prompt_bytes = 1 << 20;
  int max_json_depth = 32;
  int max_top_logprobs = 20;
  // Static pipeline: the longest prompt in tokens (0 = only the context
  // limits it), and whether a longer one keeps its last max_prompt_tokens
  // tokens (--overflow truncate-left) instead of being a 400.
  int max_prompt_tokens = 0;
  bool truncate_long_prompts = false;
  // Chat conversations that do not fit drop their oldest turns unless the
  // request says "truncation": "disabled" (serve --truncate; conversation_fit.h).
  bool truncate_conversations = false;
  // serve --context-shift: a reply goes past the context's end, so max_tokens
  // is not bounded by it.
  bool context_shift = false;
  // serve --reasoning-format: how the thoughts of a model whose template
  // writes <think> (or gpt-oss's analysis) are returned (chat_reply.h).
  ReasoningFormat reasoning_format = ReasoningFormat::kDeepseek;
};

struct CommonRequest {
  std::string model;
  SamplingParams sampling;
  bool max_tokens_explicit = false;  // false: sampling.max_tokens is the endpoint's default
  int n = 1;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool logprobs = false;       // report the sampled tokens' log-probabilities
  int top_logprobs = 0;        // and this many alternatives per position
  // response_format json_object / json_schema, grammar, json_schema (output_constraint.h)
  std::optional<ConstraintSpec> constraint;
};

struct CompletionRequest : CommonRequest {
  // Exactly one of the two: text to tokenize, or token ids as given.
  std::optional<std::string> prompt_text;
  std::vector<int32_t> prompt_tokens;
};

struct ChatRequest : CommonRequest {
  // Normalized for the template: content flattened to a string (text parts
  // joined with "\n"), role/content/name/tool_calls/tool_call_id kept.
  nlohmann::ordered_json messages;
  nlohmann::ordered_json tools = nullptr;
  nlohmann::ordered_json template_kwargs = nlohmann::ordered_json::object();
};

// Parse a raw HTTP body. Throws ApiError: 400 for invalid UTF-8, malformed
// JSON, JSON nested too deep, or any invalid field.
// The body as a JSON object, parsed in linear time (json_body_parser.h);
// `checks` refuse top-level keys and stop for a client that has gone as it
// is read. Nesting is bounded by limits.max_json_depth.
nlohmann::ordered_json parse_json_body(std::string_view body, const RequestLimits& limits,
                                       JsonBodyChecks checks = {});

CompletionRequest parse_completion_request(const nlohmann::ordered_json& body,
                                           const RequestLimits& limits);
ChatRequest parse_chat_request(const nlohmann::ordered_json& body, const RequestLimits& limits);

}  // namespace kvforge::server
