#include "app/server/responses_routes.h"

#include "app/server/responses_api.h"

namespace kvforge::server {
namespace {

void stream_response(std::shared_ptr<ResponsesRequest> r, PreparedRequest prepared, ResponseIds ids,
                     std::string model, EngineLoop& loop, httplib::Response& res) {
  stream_generation(
      res, std::move(prepared), loop, [r, ids, model](PreparedRequest& p, const SseWrite& write) {
        return std::make_unique<ResponsesEventWriter>(*r, ids, model, p.prompt_tokens, write);
      });
}

}  // namespace

void install_responses_routes(httplib::Server& http, std::shared_ptr<ApiRouteContext> ctx) {
  auto handler = [ctx](const httplib::Request& req, httplib::Response& res) {
    CompletionService& svc = ctx->service;
    ResponsesRequest r = parse_responses_request(req.body, svc.limits());
    refuse_chat_past_context(svc, r.chat, "input");
    const std::function<bool()> gone = ctx->client_gone();
    PreparedRequest p = svc.prepare(ApiKind::kChat, dump_json(r.chat), gone);
    if (p.messages_dropped > 0)
      res.set_header("X-Kvforge-Truncated-Messages", std::to_string(p.messages_dropped));
    const std::string model = r.chat["model"].get<std::string>();
    const ResponseIds ids = new_response_ids();
    if (r.stream) {
      stream_response(std::make_shared<ResponsesRequest>(std::move(r)), std::move(p), ids, model,
                      svc.loop(), res);
      return;
    }
    const std::optional<GenerationOutcome> done = pump_generation(
        p, svc.loop(), [](const std::string&) { return true; }, gone);
    if (!done) throw ApiError(499, "the client closed the connection; the request was aborted");
    res.set_content(dump_json(response_object(r, ids, model, p.prompt_tokens, &*done)),
                    "application/json");
  };
  http.Post("/v1/responses",
            guard_api_route(
                ctx->authorized, [](const ApiError& e) { return e.to_json(); }, handler));
}

}  // namespace kvforge::server
