#include "app/server/embedding_routes.h"

#include <chrono>
#include <memory>

#include "app/server/ollama_api.h"
#include "app/server/openai_error.h"

namespace kvforge::server {
namespace {

enum class ErrorShape { OpenAi, Ollama };

void embed_send(httplib::Response& res, const nlohmann::json& body) {
  res.set_content(dump_json(body), "application/json");
}

// Checks the key, and answers errors in the route's shape.
template <typename Handler>
httplib::Server::Handler embed_guarded(std::shared_ptr<EmbeddingRouteContext> ctx, ErrorShape shape,
                                       Handler handler) {
  return [ctx, shape, handler](const httplib::Request& req, httplib::Response& res) {
    auto fail = [&](const ApiError& e) {
      res.status = e.status();
      if (e.status() == 429 || e.status() == 503) res.set_header("Retry-After", "1");
      embed_send(res, shape == ErrorShape::OpenAi ? e.to_json() : ollama_error(e.what()));
    };
    try {
      if (!ctx->authorized(req))
        throw ApiError(401, "invalid or missing API key (send 'Authorization: Bearer <key>')",
                       "invalid_request_error", std::nullopt, "invalid_api_key");
      handler(req, res);
    } catch (const ApiError& e) {
      fail(e);
    } catch (const std::exception& e) {
      fail(ApiError(500, std::string("internal error: ") + e.what(), "server_error"));
    }
  };
}

int64_t embed_elapsed_ns(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              start)
      .count();
}

}  // namespace

void install_embedding_routes(httplib::Server& http, EmbeddingRouteContext context) {
  auto ctx = std::make_shared<EmbeddingRouteContext>(std::move(context));
  EmbeddingService& svc = ctx->service;
  http.Post("/v1/embeddings",
            embed_guarded(ctx, ErrorShape::OpenAi,
                          [ctx, &svc](const httplib::Request& req, httplib::Response& res) {
                            const EmbeddingsRequest r =
                                parse_openai_embeddings(req.body, svc.limits(), svc.dimensions());
                            const EmbeddingResult done = svc.embed(r, ctx->client_gone());
                            embed_send(res, openai_embeddings_response(r, done.vectors,
                                                                       done.prompt_tokens));
                          }));
  http.Post("/api/embed",
            embed_guarded(ctx, ErrorShape::Ollama,
                          [ctx, &svc](const httplib::Request& req, httplib::Response& res) {
                            const auto start = std::chrono::steady_clock::now();
                            const EmbeddingsRequest r =
                                parse_ollama_embed(req.body, svc.limits(), svc.dimensions());
                            const EmbeddingResult done = svc.embed(r, ctx->client_gone());
                            embed_send(res,
                                       ollama_embed_response(r, done.vectors, done.prompt_tokens,
                                                             embed_elapsed_ns(start)));
                          }));
  http.Post("/api/embeddings",
            embed_guarded(ctx, ErrorShape::Ollama,
                          [ctx, &svc](const httplib::Request& req, httplib::Response& res) {
                            const EmbeddingsRequest r =
                                parse_ollama_embeddings(req.body, svc.limits());
                            const EmbeddingResult done = svc.embed(r, ctx->client_gone());
                            embed_send(res, {{"embedding", done.vectors.front()}});
                          }));
}

}  // namespace kvforge::server
