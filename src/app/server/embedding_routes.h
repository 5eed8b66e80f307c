// The HTTP side of embeddings (embeddings_api.h for the shapes):
// POST /v1/embeddings with OpenAI's error shape, POST /api/embed and
// /api/embeddings with Ollama's {"error": "text"}.
#pragma once

#include <httplib.h>

#include <functional>

#include "app/server/embedding_service.h"

namespace kvforge::server {

struct EmbeddingRouteContext {
  EmbeddingService& service;
  // The API key check (true = allowed).
  std::function<bool(const httplib::Request&)> authorized;
  // A fresh "has the client left?" check for the request on this thread.
  std::function<std::function<bool()>()> client_gone;
};

void install_embedding_routes(httplib::Server& http, EmbeddingRouteContext context);

}  // namespace kvforge::server
