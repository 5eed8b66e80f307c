// The HTTP face of `kvforge serve` (cpp-httplib): routes, API-key check,
// body-size limit, OpenAI-shaped errors for every failure (404, 405, 413,
// 401, 429 with Retry-After...), SSE streaming. Handler threads only parse,
// tokenize and wait on their request's stream; generation happens on the
// engine loop.
#pragma once

#include <memory>
#include <string>

#include "app/server/access_log.h"
#include "app/server/completion_service.h"
#include "app/server/llama_routes.h"
#include "app/server/response_store.h"
#include "app/server/server_metrics.h"

namespace kvforge::server {

class EmbeddingService;

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;              // 0 = any free port
  std::string api_key;          // empty = no authentication
  bool metrics_public = false;  // /metrics without the API key
  std::string cors_origin;      // Access-Control-Allow-Origin (cors.h); empty = no CORS
  size_t max_body_bytes = 8u << 20;
  // Whole-request read deadlines (deadline_server.h): the request line and
  // headers within header_timeout_s of the connection being ready for a
  // request; a body of max_body_bytes within body_timeout_s (a smaller body in
  // proportion, never less than header_timeout_s). 408 past either.
  double header_timeout_s = 10;
  double body_timeout_s = 60;
  // Connections served at once, a thread each (connection_guard.h); more are
  // answered 503. Idle connections cost little: the cap is far above the
  // engine's batch so that slow clients cannot crowd out /health.
  int threads = 2048;
  bool access_log = true;  // one line per request on stderr (access_log.h)
  LogFormat log_format = LogFormat::kText;
  ServerProps props;  // what GET /props reports (llama_routes.h)
  // The Responses API's stored responses (response_store.h); null: a store
  // of the default bounds, forgotten when the server stops.
  std::shared_ptr<ResponseStore> responses;
  // llama-server's slot save/restore files (slot_files.h); empty: refused (501).
  std::string slot_save_path;
};

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, CompletionService& service, ServerMetrics& metrics);
  ~HttpServer();

  // Serves /v1/embeddings, /api/embed and /api/embeddings (embedding_routes.h)
  // with `service`, which must outlive the server. Call before serve().
  void serve_embeddings(EmbeddingService& service);

  // Binds the socket; returns the port (useful with port 0). Throws
  // std::runtime_error when the address cannot be bound.
  int bind();
  // Serves until stop(); blocks.
  void serve();
  // Thread-safe; makes serve() return soon: the listener closes, connections
  // are broken, and requests still being prepared or waited on are abandoned.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvforge::server
