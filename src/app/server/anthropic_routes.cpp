#include "app/server/anthropic_routes.h"

#include "app/server/anthropic_api.h"

namespace kvforge::server {
namespace {

void stream_message(std::shared_ptr<MessagesRequest> r, PreparedRequest prepared, EngineLoop& loop,
                    httplib::Response& res) {
  stream_generation(res, std::move(prepared), loop, [r](PreparedRequest& p, const SseWrite& write) {
    return std::make_unique<MessagesEventWriter>(*r, new_message_id(), p.prompt_tokens,
                                                 p.tool_calls, write);
  });
}

void answer_message(const std::shared_ptr<ApiRouteContext>& ctx, const httplib::Request& req,
                    httplib::Response& res) {
  CompletionService& svc = ctx->service;
  MessagesRequest r = parse_messages_request(req.body, svc.limits(), false);
  refuse_chat_past_context(svc, r.chat, "messages");
  const std::function<bool()> gone = ctx->client_gone();
  PreparedRequest p = svc.prepare(ApiKind::kChat, dump_json(r.chat), gone);
  if (r.stream) {
    stream_message(std::make_shared<MessagesRequest>(std::move(r)), std::move(p), svc.loop(), res);
    return;
  }
  const std::optional<GenerationOutcome> done = pump_generation(
      p, svc.loop(), [](const std::string&) { return true; }, gone);
  if (!done) throw ApiError(499, "the client closed the connection; the request was aborted");
  res.set_content(
      dump_json(message_object(r, new_message_id(), p.prompt_tokens, p.tool_calls, *done)),
      "application/json");
}

}  // namespace

void install_anthropic_routes(httplib::Server& http, std::shared_ptr<ApiRouteContext> ctx) {
  http.Post("/v1/messages",
            guard_api_route(ctx->authorized, anthropic_error,
                            [ctx](const httplib::Request& req, httplib::Response& res) {
                              answer_message(ctx, req, res);
                            }));
  http.Post("/v1/messages/count_tokens",
            guard_api_route(ctx->authorized, anthropic_error,
                            [ctx](const httplib::Request& req, httplib::Response& res) {
                              CompletionService& svc = ctx->service;
                              const MessagesRequest r =
                                  parse_messages_request(req.body, svc.limits(), true);
                              refuse_chat_past_context(svc, r.chat, "messages");
                              const int n =
                                  svc.count_chat_tokens(dump_json(r.chat), ctx->client_gone());
                              res.set_content(dump_json({{"input_tokens", n}}), "application/json");
                            }));
}

}  // namespace kvforge::server
