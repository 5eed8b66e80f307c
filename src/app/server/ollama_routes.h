// The HTTP side of Ollama's API (ollama_api.h): /api/version, /api/tags,
// /api/ps, /api/show, /api/chat and /api/generate (NDJSON streams), with Ollama's
// error shape {"error": "text"} on every one of them.
#pragma once

#include <httplib.h>

#include <functional>
#include <string>

#include "app/server/completion_service.h"
#include "app/server/ollama_api.h"

namespace kvforge::server {

struct OllamaRouteContext {
  CompletionService& service;
  ServerProps model;  // what /api/tags, /api/ps and /api/show say of the file
  // The API key check (true = allowed).
  std::function<bool(const httplib::Request&)> authorized;
  // A fresh "has the client left?" check for the request on this thread.
  std::function<std::function<bool()>()> client_gone;
};

void install_ollama_routes(httplib::Server& http, OllamaRouteContext context);

}  // namespace kvforge::server
