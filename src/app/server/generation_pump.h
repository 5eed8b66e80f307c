// Drives one prepared request (CompletionService::prepare) to its end for the
// API families that shape their own answers (Responses, Anthropic Messages):
// the engine's events of its one branch in, text deltas and the outcome out,
// with the client checked while waiting, as the OpenAI routes do. Also the
// SSE response around it, and the guard every such route shares.
#pragma once

#include <httplib.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "app/server/completion_service.h"
#include "app/server/openai_error.h"

namespace kvforge::server {

struct GenerationOutcome {
  std::string text;       // stop string excluded
  int tokens = 0;         // generated
  int cached_tokens = 0;  // prompt tokens served from the prefix cache (BranchResult)
  FinishReason finish = FinishReason::Stop;
  std::optional<size_t> stop_index;  // which of the request's stop strings ended it
  std::vector<int32_t> token_ids;    // generated (EOS excluded)
};

// Waits for the request's events; calls on_admitted once with the prompt
// tokens served from a cache when the first token comes (the count is known
// only once the engine admitted the request), then on_delta with each new
// piece of text (false from either = the client is gone). Returns nullopt,
// the request cancelled, once a callback or client_gone (asked every 20 ms)
// says the client left. Throws ApiError when the engine rejects or fails the
// request.
std::optional<GenerationOutcome> pump_generation(
    PreparedRequest& p, EngineLoop& loop,
    const std::function<bool(const std::string& delta)>& on_delta,
    const std::function<bool()>& client_gone,
    const std::function<bool(int cached_tokens)>& on_admitted = {});

// Refuses (400 context_length_exceeded, param `param`) a chat body whose
// message texts alone prove it longer than the context, before it is
// rendered and tokenized; a body that may drop its oldest turns
// ("truncation": "auto", or serve --truncate) is left to the chat path.
void refuse_chat_past_context(const CompletionService& service, const nlohmann::ordered_json& chat,
                              const char* param);

// Answers with a chunked text/event-stream written by `run(write)`; `run`
// returns false when the client went away (logged 499). A connection that
// breaks first cancels the request.
void send_event_stream(
    httplib::Response& res, std::shared_ptr<PreparedRequest> request, EngineLoop& loop,
    std::function<bool(PreparedRequest&, const std::function<bool(const std::string&)>&)> run);

// For pump_generation's client_gone on a stream: an SSE comment after each
// second without a write tells whether the client is still there.
std::function<bool()> keep_alive_check(const std::function<bool(const std::string&)>& write);

// The typed events of one API's stream (Responses, Messages).
class GenerationEventWriter {
 public:
  virtual ~GenerationEventWriter() = default;
  virtual bool start() = 0;  // the events before the first text
  // The first token came; `cached_tokens` of the prompt were served from a cache.
  virtual bool admitted(int /*cached_tokens*/) { return true; }
  virtual bool delta(const std::string& text) = 0;
  virtual bool finish(const GenerationOutcome& done) = 0;  // the events after the last text
  virtual bool error(const ApiError& e) = 0;               // a failure once the stream began
};
using SseWrite = std::function<bool(const std::string&)>;

// send_event_stream running the request through the writer `make` builds
// for it: start, the deltas, then finish (or error).
void stream_generation(
    httplib::Response& res, PreparedRequest prepared, EngineLoop& loop,
    std::function<std::unique_ptr<GenerationEventWriter>(PreparedRequest&, const SseWrite&)> make);

// "event: <type>\ndata: <json>\n\n", the typed SSE of the Responses and Messages APIs.
std::string typed_sse_event(const std::string& type, const nlohmann::json& data);

// What a route needs from the server.
struct ApiRouteContext {
  CompletionService& service;
  std::function<bool(const httplib::Request&)> authorized;  // the API key check
  std::function<std::function<bool()>()> client_gone;       // a fresh check for this request
};

// Checks the key and answers errors (ApiError, or 500 for anything else)
// with `error_body`'s JSON.
httplib::Server::Handler guard_api_route(
    std::function<bool(const httplib::Request&)> authorized,
    std::function<nlohmann::json(const ApiError&)> error_body,
    std::function<void(const httplib::Request&, httplib::Response&)> handler);

}  // namespace kvforge::server
