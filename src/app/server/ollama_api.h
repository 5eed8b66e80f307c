// Ollama's API (/api/chat, /api/generate, /api/tags, /api/ps, /api/show, /api/version)
// as translations onto the one OpenAI request -> engine path: an Ollama body
// becomes an OpenAI chat or completions body for CompletionService, and its
// answer (one JSON body, or the SSE chunks) becomes Ollama's JSON or NDJSON.
// Errors on these routes have Ollama's shape {"error": "text"}.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "app/server/openai_request.h"
#include "app/server/openai_response.h"
#include "app/server/server_props.h"

namespace kvforge::server {

// An Ollama request as the OpenAI body CompletionService takes.
struct OllamaRequest {
  ApiKind kind = ApiKind::kChat;  // /api/generate with "raw": true is a completion
  bool stream = true;             // Ollama streams unless told not to
  bool generate = false;          // /api/generate: "response" instead of "message"
  bool load_only = false;         // /api/generate without a prompt: Ollama's "load the model"
  std::string model;              // as the client named it, echoed back
  nlohmann::ordered_json openai;  // the body for CompletionService::prepare
};

// Throws ApiError (400 naming the field) for what kvforge does not implement:
// images, "suffix", "context", "template", unknown "options". "format"
// ("json" or a schema) becomes response_format, through the grammar.
OllamaRequest ollama_chat_request(std::string_view body, const RequestLimits& limits);
OllamaRequest ollama_generate_request(std::string_view body, const RequestLimits& limits);

// The answer to a load_only request: done at once, done_reason "load".
nlohmann::json ollama_load_response(const OllamaRequest& r);

// Durations Ollama reports, in nanoseconds; absent when not measured.
struct OllamaTimes {
  int64_t total_ns = 0;
  std::optional<int64_t> prompt_eval_ns;  // arrival to the first token (streams only)
};

// The non-streaming answer from CompletionService::complete's JSON.
nlohmann::json ollama_full_response(const OllamaRequest& r, const nlohmann::json& openai,
                                    const OllamaTimes& times);

// Turns the SSE text CompletionService::stream writes into NDJSON lines.
class OllamaStreamTranslator {
 public:
  // `start`: when the request arrived; durations count from it.
  OllamaStreamTranslator(const OllamaRequest& r, std::chrono::steady_clock::time_point start);
  // One "data: ...\n\n" event in; the NDJSON lines it makes (may be empty).
  // An error event becomes an {"error": "<message>"} line, the last one: no
  // "done" line follows it, as Ollama ends a failed stream.
  std::string translate(std::string_view sse_event);

 private:
  nlohmann::json line(const std::string& text, bool done) const;

  const OllamaRequest& request_;
  std::chrono::steady_clock::time_point start_;
  std::optional<int64_t> first_token_ns_;
  std::string finish_reason_ = "stop";
  nlohmann::json usage_;
  bool failed_ = false;  // an error line went out: it is the stream's last
};

nlohmann::json ollama_error(const std::string& message);
// A model name as Ollama clients write it: "name:latest" is "name".
std::string ollama_served_name(const std::string& name);
nlohmann::json ollama_version();
// Ollama's parameter_size: "4.2M", "7.6B".
std::string ollama_parameter_size(uint64_t n);

nlohmann::json ollama_tags(const RequestLimits& limits, const ServerProps& model);
// /api/ps: the model stays loaded while the server runs, on the CPU.
nlohmann::json ollama_ps(const RequestLimits& limits, const ServerProps& model);
// Throws ApiError 404 for a model the server does not serve.
nlohmann::json ollama_show(std::string_view body, const RequestLimits& limits,
                           const ServerProps& model, const std::string& chat_template);

}  // namespace kvforge::server
