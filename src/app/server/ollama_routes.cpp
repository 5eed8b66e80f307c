#include "app/server/ollama_routes.h"

#include <chrono>
#include <memory>

#include "app/server/ollama_api.h"
#include "app/server/openai_error.h"

namespace kvforge::server {
namespace {

void send(httplib::Response& res, const nlohmann::json& body) {
  res.set_content(dump_json(body), "application/json; charset=utf-8");
}

// Answers errors in Ollama's shape; checks the key first.
template <typename Handler>
httplib::Server::Handler guarded(std::shared_ptr<OllamaRouteContext> ctx, Handler handler) {
  return [ctx, handler](const httplib::Request& req, httplib::Response& res) {
    try {
      if (!ctx->authorized(req))
        throw ApiError(401, "invalid or missing API key (send 'Authorization: Bearer <key>')");
      handler(req, res);
    } catch (const ApiError& e) {
      res.status = e.status();
      if (e.status() == 429 || e.status() == 503) res.set_header("Retry-After", "1");
      send(res, ollama_error(e.what()));
    } catch (const std::exception& e) {
      res.status = 500;
      send(res, ollama_error(std::string("internal error: ") + e.what()));
    }
  };
}

void stream_ndjson(const std::shared_ptr<OllamaRouteContext>& ctx,
                   std::shared_ptr<OllamaRequest> request, PreparedRequest prepared,
                   std::function<bool()> gone, std::chrono::steady_clock::time_point start,
                   httplib::Response& res) {
  auto state = std::make_shared<PreparedRequest>(std::move(prepared));
  CompletionService* svc = &ctx->service;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "application/x-ndjson",
      [state, svc, request, gone, start, &res](size_t, httplib::DataSink& sink) {
        OllamaStreamTranslator translator(*request, start);
        const bool finished = svc->stream(*state, [&](const std::string& event) {
          const std::string lines = translator.translate(event);
          // Nothing to send (a keep-alive, a role-only chunk): look at the socket instead.
          if (lines.empty()) return !gone();
          return sink.write(lines.data(), lines.size());
        });
        if (!finished) res.status = 499;  // logged as a stream the client cut
        sink.done();
        return true;
      },
      [state, svc](bool success) {
        if (!success && !state->stream->cancelled()) svc->loop().cancel(state->stream);
      });
}

void answer(const std::shared_ptr<OllamaRouteContext>& ctx, OllamaRequest request,
            httplib::Response& res) {
  if (request.load_only) {
    send(res, ollama_load_response(request));
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  std::function<bool()> gone = ctx->client_gone();
  const std::string body = dump_json(request.openai);
  PreparedRequest prepared = ctx->service.prepare(request.kind, body, gone);
  if (request.stream) {
    stream_ndjson(ctx, std::make_shared<OllamaRequest>(std::move(request)), std::move(prepared),
                  gone, start, res);
    return;
  }
  const std::optional<nlohmann::json> done = ctx->service.complete(prepared, gone);
  if (!done) throw ApiError(499, "the client closed the connection; the request was aborted");
  const int64_t ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  send(res, ollama_full_response(request, *done, OllamaTimes{ns, std::nullopt}));
}

}  // namespace

void install_ollama_routes(httplib::Server& http, OllamaRouteContext context) {
  auto ctx = std::make_shared<OllamaRouteContext>(std::move(context));
  http.Get("/api/version",
           [](const httplib::Request&, httplib::Response& res) { send(res, ollama_version()); });
  http.Get("/api/tags", guarded(ctx, [ctx](const httplib::Request&, httplib::Response& res) {
             send(res, ollama_tags(ctx->service.limits(), ctx->model));
           }));
  http.Get("/api/ps", guarded(ctx, [ctx](const httplib::Request&, httplib::Response& res) {
             send(res, ollama_ps(ctx->service.limits(), ctx->model));
           }));
  http.Post("/api/show", guarded(ctx, [ctx](const httplib::Request& req, httplib::Response& res) {
              send(res, ollama_show(req.body, ctx->service.limits(), ctx->model,
                                    ctx->service.chat_template().source()));
            }));
  http.Post("/api/chat", guarded(ctx, [ctx](const httplib::Request& req, httplib::Response& res) {
              answer(ctx, ollama_chat_request(req.body, ctx->service.limits()), res);
            }));
  http.Post("/api/generate",
            guarded(ctx, [ctx](const httplib::Request& req, httplib::Response& res) {
              answer(ctx, ollama_generate_request(req.body, ctx->service.limits()), res);
            }));
}

}  // namespace kvforge::server
