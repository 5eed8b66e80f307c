#include "app/server/embedding_routes.h"

#include <chrono>
#include <memory>

#include "app/server/generation_pump.h"
#include "app/server/ollama_api.h"
#include "app/server/openai_error.h"

namespace kvforge::server {
namespace {

void embed_send(httplib::Response& res, const nlohmann::json& body) {
  res.set_content(dump_json(body), "application/json");
}

nlohmann::json embed_openai_error(const ApiError& e) { return e.to_json(); }
nlohmann::json embed_ollama_error(const ApiError& e) { return ollama_error(e.what()); }

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
            guard_api_route(ctx->authorized, embed_openai_error,
                            [ctx, &svc](const httplib::Request& req, httplib::Response& res) {
                              const EmbeddingsRequest r =
                                  parse_openai_embeddings(req.body, svc.limits(), svc.dimensions());
                              const EmbeddingResult done = svc.embed(r, ctx->client_gone());
                              embed_send(res, openai_embeddings_response(r, done.vectors,
                                                                         done.prompt_tokens));
                            }));
  http.Post("/api/embed",
            guard_api_route(ctx->authorized, embed_ollama_error,
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
            guard_api_route(ctx->authorized, embed_ollama_error,
                            [ctx, &svc](const httplib::Request& req, httplib::Response& res) {
                              const EmbeddingsRequest r =
                                  parse_ollama_embeddings(req.body, svc.limits());
                              const EmbeddingResult done = svc.embed(r, ctx->client_gone());
                              embed_send(res, {{"embedding", done.vectors.front()}});
                            }));
}

}  // namespace kvforge::server
