#include "app/server/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string_view>

#include "app/ascii_case.h"
#include "app/server/anthropic_api.h"
#include "app/server/anthropic_routes.h"
#include "app/server/chat_page.h"
#include "app/server/connection_guard.h"
#include "app/server/connection_watch.h"
#include "app/server/cors.h"
#include "app/server/deadline_server.h"
#include "app/server/deadline_stream.h"
#include "app/server/embedding_routes.h"
#include "app/server/error_family.h"
#include "app/server/generation_pump.h"
#include "app/server/model_names.h"
#include "app/server/ollama_routes.h"
#include "app/server/openai_error.h"
#include "app/server/overflow_responder.h"
#include "app/server/responses_routes.h"
#include "app/server/slot_actions.h"
#include "app/server/slot_files.h"
#include "app/server/slots_route.h"

namespace kvforge::server {
namespace {

constexpr int kListenBacklog = 1024;
constexpr const char* kCompletions = "/v1/completions";
constexpr const char* kChat = "/v1/chat/completions";
constexpr const char* kModels = "/v1/models";
constexpr const char* kModelById = R"(/v1/models/(.+))";
constexpr const char* kHealth = "/health";
constexpr const char* kTokenize = "/tokenize";
constexpr const char* kDetokenize = "/detokenize";
constexpr const char* kProps = "/props";
constexpr const char* kMetrics = "/metrics";

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status();
  if (e.status() == 429 || e.status() == 503) res.set_header("Retry-After", "1");
  res.set_content(dump_json(e.to_json()), "application/json");
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Compares in time that depends on the key's length only, so timing reveals
// neither a prefix of the key nor whether the length matched.
bool same_key(const std::string& given, const std::string& key) {
  if (key.empty()) return false;
  size_t diff = given.size() ^ key.size();
  for (size_t i = 0; i < key.size(); ++i)
    diff |= static_cast<unsigned char>((i < given.size() ? given[i] : 0) ^ key[i]);
  return diff == 0;
}

// The credentials of an "Authorization: Bearer <token>" header; the scheme is
// case-insensitive (RFC 7235). Empty when the scheme is another.
std::string bearer_token(const std::string& header) {
  constexpr std::string_view kScheme = "bearer";
  if (header.size() <= kScheme.size() || header[kScheme.size()] != ' ') return {};
  if (!equals_ignoring_case(std::string_view(header).substr(0, kScheme.size()), kScheme)) return {};
  const size_t start = header.find_first_not_of(' ', kScheme.size());
  return start == std::string::npos ? std::string() : header.substr(start);
}

// Connections beyond the cap: how long each may take to send its request
// head, and how many are held at once (more are closed unanswered).
constexpr auto kOverflowHeadTime = std::chrono::milliseconds(1000);
constexpr size_t kOverflowMaxOpen = 4096;
constexpr const char* kHealthBody = R"({"status":"ok"})";

std::string endpoint_label(const std::string& path) {
  for (const char* known :
       {kCompletions, kChat, kModels, kHealth, kMetrics, kTokenize, kDetokenize, kProps})
    if (path == known) return known;
  return "other";
}

// The message of an error httplib answers by itself.
std::string http_error_message(const httplib::Request& req, int status, size_t max_body_bytes) {
  switch (status) {
    case 404:
      return "no route for " + req.method + " " + req.path;
    case 413:
      return "request body exceeds " + std::to_string(max_body_bytes) + " bytes";
    case 400:
      return "malformed HTTP request";
    case 431:
      return "request header fields too large";
    default:
      return "HTTP error " + std::to_string(status);
  }
}

ReadDeadlines read_deadlines(const HttpServerOptions& o) {
  ReadDeadlines d;
  d.header = std::chrono::milliseconds(static_cast<int64_t>(o.header_timeout_s * 1000));
  d.body_at_max = std::chrono::milliseconds(static_cast<int64_t>(o.body_timeout_s * 1000));
  d.max_body_bytes = o.max_body_bytes;
  return d;
}

}  // namespace

struct HttpServer::Impl {
  HttpServerOptions options;
  CompletionService& service;
  ServerMetrics& metrics;
  DeadlineServer http;
  socket_t listen_fd = INVALID_SOCKET;
  int port = 0;
  std::atomic<bool> stopping{false};
  AccessLog access_log;
  OverflowResponder overflow;
  CorsPolicy cors;
  std::unique_ptr<SlotFiles> slot_files;  // null without --slot-save-path

  Impl(HttpServerOptions o, CompletionService& s, ServerMetrics& m)
      : options(std::move(o)),
        service(s),
        metrics(m),
        http(read_deadlines(options)),
        access_log(options.log_format, stderr),
        overflow([this](const OverflowRequest& r) { return answer_overflow(r); }, kOverflowHeadTime,
                 kOverflowMaxOpen),
        cors(options.cors_origin) {
    if (!options.responses)
      options.responses = std::make_shared<ResponseStore>(ResponseStoreLimits{});
    if (!options.slot_save_path.empty())
      slot_files = std::make_unique<SlotFiles>(
          options.slot_save_path,
          std::filesystem::path(options.props.model_path).filename().string());
    const auto threads = static_cast<size_t>(options.threads);
    http.new_task_queue = [threads] { return new ConnectionThreads(threads); };
    http.set_hand_over([this](socket_t sock) {
      if (!ConnectionThreads::over_capacity()) return false;
      overflow.adopt(sock);
      return true;
    });
    http.set_payload_max_length(options.max_body_bytes);
    // Small writes (an SSE token, a short JSON answer) go out at once, not after
    // Nagle waits for the client's delayed ACK (~40 ms each).
    http.set_tcp_nodelay(true);
    // Short: an idle keep-alive connection holds a thread and a place under the cap.
    http.set_keep_alive_timeout(5);
    // A request whose bytes stop coming is cut (408) after as long as its head may take
    // in all: httplib's 5 s cut uploads from clients that a loaded machine starves for a
    // moment, where the whole-request deadlines already bound the slow ones.
    http.set_read_timeout(
        std::chrono::milliseconds(static_cast<int64_t>(options.header_timeout_s * 1000)));
    // Keeps the listening socket's descriptor, so bind() can widen its backlog.
    // Not httplib's default options: they set SO_REUSEPORT, with which a
    // second server on the same port also "listens" and takes half the requests.
    http.set_socket_options([this](socket_t sock) {
      const int yes = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
      listen_fd = sock;
    });
    install_routes();
  }

  void log_access(const httplib::Request& req, const httplib::Response& res) {
    // A request cut off in its headers has no address yet; its connection does.
    const std::string remote =
        req.remote_addr.empty() ? DeadlineServer::current_remote_address() : req.remote_addr;
    AccessRecord r{remote, req.method, req.path, res.status, current_request_trace(), 0};
    r.total_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - r.trace.start).count();
    access_log.write(r);
  }

  // A connection beyond the cap (ConnectionThreads), on the overflow
  // responder's thread: /health as usual, anything else 503.
  OverflowReply answer_overflow(const OverflowRequest& r) {
    OverflowReply reply;
    if (r.method == "GET" && r.target == kHealth) {
      reply.status = 200;
      reply.body = kHealthBody;
    } else {
      const ApiError e(503, "too many open connections; retry shortly", "server_error",
                       std::nullopt, "too_many_connections");
      reply.body = dump_json(error_body(error_family(r.target), e));
      reply.retry_after = true;
    }
    metrics.count_request(endpoint_label(r.target), reply.status);
    if (options.access_log) {
      AccessRecord a{peer_address(r.fd), r.method, r.target, reply.status, {}, 0};
      access_log.write(a);
    }
    return reply;
  }

  bool authorized(const httplib::Request& req) const {
    if (options.api_key.empty()) return true;
    // Anthropic's clients send the key as x-api-key.
    return same_key(bearer_token(req.get_header_value("Authorization")), options.api_key) ||
           same_key(req.get_header_value("x-api-key"), options.api_key);
  }

  // Nothing is written until the result is ready, so a vanished client
  // would go unnoticed (and keep its KV, or its template render) without
  // looking at the socket. Asked often while rendering: looks every 20 ms.
  std::function<bool()> client_gone() {
    const int socket = DeadlineServer::current_socket();
    auto next_look = std::chrono::steady_clock::now();
    auto closed = std::make_shared<bool>(false);
    return [this, socket, next_look, closed]() mutable {
      if (stopping.load()) return true;
      const auto now = std::chrono::steady_clock::now();
      if (*closed || now < next_look) return *closed;
      next_look = now + std::chrono::milliseconds(20);
      *closed = peer_closed(socket);
      return *closed;
    };
  }

  void handle_completion(ApiKind kind, const httplib::Request& req, httplib::Response& res) {
    const std::function<bool()> gone = client_gone();
    PreparedRequest prepared = service.prepare(kind, req.body, gone);
    if (prepared.messages_dropped > 0)
      res.set_header("X-Kvforge-Truncated-Messages", std::to_string(prepared.messages_dropped));
    if (!prepared.common.stream) {
      if (const std::optional<nlohmann::json> body = service.complete(prepared, gone)) {
        res.set_content(dump_json(*body), "application/json");
        return;
      }
      // 499 (nginx's "client closed request"): counted in kvforge_requests_total, read by nobody.
      send_error(res, ApiError(499, "the client closed the connection; the request was aborted",
                               "invalid_request_error"));
      return;
    }
    CompletionService* svc = &service;
    send_event_stream(
        res, std::make_shared<PreparedRequest>(std::move(prepared)), service.loop(),
        [svc](PreparedRequest& p, const SseWrite& write) { return svc->stream(p, write); });
  }

  void install_routes() {
    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      return cors.apply(req, res) ? httplib::Server::HandlerResponse::Handled
                                  : httplib::Server::HandlerResponse::Unhandled;
    });
    install_api_routes();
    install_wrong_method_routes();
    install_error_handlers();
  }

  // Wraps an API handler: checks the key, and answers its errors in the OpenAI shape.
  template <typename Handler>
  httplib::Server::Handler guarded(Handler handler) {
    return guard_api_route([this](const httplib::Request& req) { return authorized(req); },
                           [this](const ApiError& e) {
                             // 499: the client left while its request was prepared
                             // (waiting, or rendering).
                             if (e.status() == 499 && !stopping.load())
                               metrics.client_disconnects.inc();
                             return e.to_json();
                           },
                           handler);
  }

  void install_api_routes() {
    http.Post(kCompletions, guarded([this](const httplib::Request& req, httplib::Response& res) {
                handle_completion(ApiKind::kCompletion, req, res);
              }));
    http.Post(kChat, guarded([this](const httplib::Request& req, httplib::Response& res) {
                handle_completion(ApiKind::kChat, req, res);
              }));
    http.Get(kModels, guarded([this](const httplib::Request&, httplib::Response& res) {
               res.set_content(dump_json(list_models(service.limits(), unix_now())),
                               "application/json");
             }));
    http.Get(kModelById, guarded([this](const httplib::Request& req, httplib::Response& res) {
               res.set_content(dump_json(model_info(service.limits(), req.matches[1], unix_now())),
                               "application/json");
             }));
    install_llama_routes();
    auto api = std::make_shared<ApiRouteContext>(
        ApiRouteContext{service, [this](const httplib::Request& req) { return authorized(req); },
                        [this] { return client_gone(); }});
    install_responses_routes(http, api, options.responses);
    install_anthropic_routes(http, api);
    install_ollama_routes(http, {service, options.props,
                                 [this](const httplib::Request& req) { return authorized(req); },
                                 [this] { return client_gone(); }});
    // The chat page: public, as any page; its API calls carry the key.
    http.Get("/", [](const httplib::Request&, httplib::Response& res) {
      const std::string_view page = chat_page_html();
      res.set_content(page.data(), page.size(), "text/html; charset=utf-8");
    });
    http.Get(kHealth, [](const httplib::Request&, httplib::Response& res) {
      res.set_content(kHealthBody, "application/json");
    });
    const auto serve_metrics = [this](const httplib::Request&, httplib::Response& res) {
      metrics.responses_stored.set(static_cast<double>(options.responses->size()));
      metrics.responses_stored_bytes.set(static_cast<double>(options.responses->bytes()));
      res.set_content(metrics.render(), "text/plain; version=0.0.4; charset=utf-8");
    };
    if (options.metrics_public)
      http.Get(kMetrics, serve_metrics);
    else
      http.Get(kMetrics, guarded(serve_metrics));
  }

  // llama-server's /tokenize, /detokenize and /props (llama_routes.h).
  void install_llama_routes() {
    // Both cost a multiple of their body (token ids, pieces): under the prepare gate.
    http.Post(kTokenize, guarded([this](const httplib::Request& req, httplib::Response& res) {
                const auto ticket = service.admit(req.body.size(), client_gone());
                res.set_content(tokenize_json(service.tokenizer(), service.limits(), req.body),
                                "application/json");
              }));
    http.Post(kDetokenize, guarded([this](const httplib::Request& req, httplib::Response& res) {
                const auto ticket = service.admit(req.body.size(), client_gone());
                res.set_content(
                    dump_json(detokenize_response(service.tokenizer(), service.limits(), req.body)),
                    "application/json");
              }));
    http.Get("/slots", guarded([this](const httplib::Request&, httplib::Response& res) {
               res.set_content(dump_json(slots_response(
                                   service.loop().running(), service.loop().slot_token_counts(),
                                   options.props.total_slots, service.limits().max_tokens_limit)),
                               "application/json");
             }));
    http.Post(
        R"(/slots/([^/]*))", guarded([this](const httplib::Request& req, httplib::Response& res) {
          res.set_content(dump_json(slot_action_response(service.loop(), slot_files.get(),
                                                         options.props.total_slots, req.matches[1],
                                                         req.get_param_value("action"), req.body)),
                          "application/json");
        }));
    http.Get(kProps, guarded([this](const httplib::Request&, httplib::Response& res) {
               res.set_content(dump_json(props_response(service, options.props)),
                               "application/json");
             }));
  }

  // Known paths with the wrong method: 405 with the allowed one.
  void install_wrong_method_routes() {
    auto wrong_method = [](const char* allowed) {
      return [allowed](const httplib::Request& req, httplib::Response& res) {
        res.set_header("Allow", allowed);
        send_error(res, ApiError(405, "method " + req.method + " is not allowed on " + req.path +
                                          "; use " + allowed));
      };
    };
    for (const char* path : {kCompletions, kChat}) {
      http.Get(path, wrong_method("POST"));
      http.Put(path, wrong_method("POST"));
      http.Delete(path, wrong_method("POST"));
      http.Patch(path, wrong_method("POST"));
    }
    for (const char* path : {kModels, kHealth, kMetrics}) {
      http.Post(path, wrong_method("GET"));
      http.Put(path, wrong_method("GET"));
      http.Delete(path, wrong_method("GET"));
      http.Patch(path, wrong_method("GET"));
    }
  }

  // Everything httplib answers by itself (no route, body too large, bad
  // request line...) gets the error shape of the route's API family
  // (error_family.h); every answer is counted.
  void install_error_handlers() {
    http.set_error_handler(httplib::Server::HandlerWithResponse(
        [this](const httplib::Request& req, httplib::Response& res) {
          if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
          // httplib's own refusals (a malformed chunk, a body too large...): what
          // follows on the connection is not known to start a request.
          if (res.status != 404) {
            DeadlineServer::close_after_response();
            res.set_header("Connection", "close");
          }
          std::string message = http_error_message(req, res.status, options.max_body_bytes);
          // A request cut off by a read deadline or the header limit, which httplib calls
          // malformed.
          if (const auto stop = DeadlineServer::read_stop()) {
            res.status = stop->first;
            message = stop->second;
            res.set_header("Connection", "close");  // the rest of the request is unread
          }
          const std::string type = res.status >= 500 ? "server_error" : "invalid_request_error";
          const ApiError e(res.status, message, type);
          res.set_content(dump_json(error_body(error_family(req.path), e)), "application/json");
          return httplib::Server::HandlerResponse::Handled;
        }));
    // Requests cut off before httplib could answer (a request line too slow or too long, a
    // chunked body too large, framing refused), in the shape of their route's family once
    // their request line is known.
    http.set_stopped_answer([this](httplib::Response& res, const std::string& message) {
      const ErrorFamily family = error_family(DeadlineServer::current_target());
      res.set_content(dump_json(error_body(family, ApiError(res.status, message))),
                      "application/json");
      metrics.count_request("other", res.status);
      if (options.access_log) log_access(httplib::Request(), res);
    });
    http.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
          std::string what = "unknown error";
          try {
            std::rethrow_exception(ep);
          } catch (const std::exception& e) {
            what = e.what();
          } catch (...) {
          }
          send_error(res, ApiError(500, "internal error: " + what, "server_error"));
        });
    // Reading, routing and the logger run on the thread serving the request:
    // the trace spans them all, from the request's first byte.
    http.set_request_begin(begin_request_trace);
    http.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      metrics.count_request(endpoint_label(req.path), res.status);
      if (options.access_log) log_access(req, res);
    });
  }
};

HttpServer::HttpServer(HttpServerOptions options, CompletionService& service,
                       ServerMetrics& metrics)
    : impl_(std::make_unique<Impl>(std::move(options), service, metrics)) {}

HttpServer::~HttpServer() = default;

int HttpServer::bind() {
  const auto& o = impl_->options;
  int port = o.port;
  errno = 0;
  if (port == 0) {
    port = impl_->http.bind_to_any_port(o.host);
    if (port < 0) throw std::runtime_error("cannot bind to " + o.host + " (any port)");
  } else if (!impl_->http.bind_to_port(o.host, o.port)) {
    const int err = errno;
    throw std::runtime_error("cannot bind to " + o.host + ":" + std::to_string(o.port) + ": " +
                             (err == EADDRINUSE
                                  ? std::string("address already in use (another server?)")
                              : err != 0 ? std::string(std::strerror(err))
                                         : std::string("not a local address?")));
  }
  impl_->port = port;
  // Debian's compiled cpp-httplib listens with a backlog of 5. A burst of more
  // connections than that (many clients starting a stream at once) overflows
  // the accept queue: a client whose handshake ACK was dropped there waits for
  // retransmissions, up to a minute, and may then fail with a reset. Listening
  // again on the same socket raises the backlog (capped by net.core.somaxconn).
  if (impl_->listen_fd != INVALID_SOCKET && ::listen(impl_->listen_fd, kListenBacklog) != 0)
    throw std::runtime_error("cannot listen on " + o.host + ":" + std::to_string(port));
  return port;
}

void HttpServer::serve_embeddings(EmbeddingService& service) {
  Impl& impl = *impl_;
  install_embedding_routes(
      impl.http, {service, [&impl](const httplib::Request& req) { return impl.authorized(req); },
                  [&impl] { return impl.client_gone(); }});
}

void HttpServer::serve() { impl_->http.listen_after_bind(); }

void HttpServer::stop() {
  impl_->stopping = true;
  impl_->http.stop();
  impl_->http.break_connections();
}

}  // namespace kvforge::server
