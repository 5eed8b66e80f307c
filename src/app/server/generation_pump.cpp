#include "app/server/generation_pump.h"

#include <chrono>

#include "app/server/access_log.h"

namespace kvforge::server {

std::optional<GenerationOutcome> pump_generation(
    PreparedRequest& p, EngineLoop& loop,
    const std::function<bool(const std::string& delta)>& on_delta,
    const std::function<bool()>& client_gone, const std::function<bool(int)>& on_admitted) {
  using std::chrono::milliseconds;
  constexpr auto kCheckEvery = milliseconds(20);
  GenerationOutcome out;
  auto next_check = std::chrono::steady_clock::now() + kCheckEvery;
  while (true) {
    RequestStream::Update u = p.stream->wait(kCheckEvery);
    if (u.rejected)
      throw ApiError(u.rejected->first, u.rejected->second,
                     u.rejected->first >= 500 ? "server_error" : "invalid_request_error");
    for (const TextEvent& ev : u.events) {
      if (ev.token) {
        if (++out.tokens == 1 && on_admitted && !on_admitted(ev.cached_tokens)) {
          loop.cancel(p.stream);
          return std::nullopt;
        }
        trace_token();
      }
      out.text += ev.text;
      if (!ev.text.empty() && !on_delta(ev.text)) {
        loop.cancel(p.stream);
        return std::nullopt;
      }
      if (ev.result) {
        out.text = ev.result->text;
        out.finish = ev.result->finish;
        out.stop_index = ev.stop_index;
        out.token_ids = ev.result->tokens;
        out.cached_tokens = ev.result->cached_tokens;
      }
    }
    if (u.closed) return out;
    if (client_gone && std::chrono::steady_clock::now() >= next_check) {
      next_check = std::chrono::steady_clock::now() + kCheckEvery;
      if (client_gone()) {
        loop.cancel(p.stream);
        return std::nullopt;
      }
    }
  }
}

void refuse_chat_past_context(const CompletionService& service, const nlohmann::ordered_json& chat,
                              const char* param) {
  const bool truncates = chat.contains("truncation") ? chat["truncation"] == "auto"
                                                     : service.limits().truncate_conversations;
  if (truncates) return;
  size_t bytes = 0;
  for (const auto& m : chat["messages"])
    if (m.contains("content") && m["content"].is_string())
      bytes += m["content"].get_ref<const std::string&>().size();
  const size_t per_token = service.max_token_bytes();
  const size_t at_least = (bytes + per_token - 1) / per_token;
  const auto context = static_cast<size_t>(service.limits().max_tokens_limit);
  if (at_least >= context)
    throw bad_param(param,
                    "the messages are " + std::to_string(bytes) + " bytes, so at least " +
                        std::to_string(at_least) + " tokens, which exceeds the context window of " +
                        std::to_string(context) +
                        " tokens (prompt plus at least one generated token)",
                    "context_length_exceeded");
}

void send_event_stream(
    httplib::Response& res, std::shared_ptr<PreparedRequest> request, EngineLoop& loop,
    std::function<bool(PreparedRequest&, const std::function<bool(const std::string&)>&)> run) {
  EngineLoop* l = &loop;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [request, run, &res](size_t, httplib::DataSink& sink) {
        const bool finished =
            run(*request, [&sink](const std::string& s) { return sink.write(s.data(), s.size()); });
        if (!finished) res.status = 499;  // the 200 went out; the log says the client cut it
        sink.done();
        return true;
      },
      [request, l](bool success) {
        if (!success && !request->stream->cancelled()) l->cancel(request->stream);
      });
}

void stream_generation(
    httplib::Response& res, PreparedRequest prepared, EngineLoop& loop,
    std::function<std::unique_ptr<GenerationEventWriter>(PreparedRequest&, const SseWrite&)> make) {
  EngineLoop* l = &loop;
  send_event_stream(res, std::make_shared<PreparedRequest>(std::move(prepared)), loop,
                    [make, l](PreparedRequest& p, const SseWrite& write) {
                      const std::unique_ptr<GenerationEventWriter> events = make(p, write);
                      if (!events->start()) {
                        l->cancel(p.stream);
                        return false;
                      }
                      try {
                        const std::optional<GenerationOutcome> done = pump_generation(
                            p, *l, [&](const std::string& d) { return events->delta(d); },
                            keep_alive_check(write),
                            [&](int cached) { return events->admitted(cached); });
                        return done && events->finish(*done);
                      } catch (const ApiError& e) {
                        events->error(e);  // the stream began: the error is its last event
                        return true;
                      }
                    });
}

std::function<bool()> keep_alive_check(const std::function<bool(const std::string&)>& write) {
  auto last =
      std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  return [write, last] {
    const auto now = std::chrono::steady_clock::now();
    if (now - *last < std::chrono::seconds(1)) return false;
    *last = now;
    return !write(": keep-alive\n\n");
  };
}

std::string typed_sse_event(const std::string& type, const nlohmann::json& data) {
  return "event: " + type + "\ndata: " + dump_json(data) + "\n\n";
}

httplib::Server::Handler guard_api_route(
    std::function<bool(const httplib::Request&)> authorized,
    std::function<nlohmann::json(const ApiError&)> error_body,
    std::function<void(const httplib::Request&, httplib::Response&)> handler) {
  return [authorized, error_body, handler](const httplib::Request& req, httplib::Response& res) {
    auto fail = [&](const ApiError& e) {
      res.status = e.status();
      if (e.status() == 429 || e.status() == 503) res.set_header("Retry-After", "1");
      res.set_content(dump_json(error_body(e)), "application/json");
    };
    try {
      if (!authorized(req))
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

}  // namespace kvforge::server
