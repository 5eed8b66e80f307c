#include "app/server/responses_routes.h"

#include "app/server/responses_api.h"
#include "app/server/responses_history.h"
#include "app/server/responses_tools.h"

namespace kvforge::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr const char* kResponseById = R"(/v1/responses/([^/]+))";

// GET and DELETE of an unknown id: 404, as OpenAI answers.
ApiError response_not_found(const std::string& id) {
  return ApiError(404, "Response with id '" + id + "' not found.", "invalid_request_error");
}

// A previous_response_id that names no stored response: OpenAI's 400.
ApiError previous_not_found(const std::string& id) {
  return ApiError(400, "Previous response with id '" + id + "' not found.", "invalid_request_error",
                  "previous_response_id", "previous_response_not_found");
}

// One turn: the request, the stored response it continues, and the prompt
// it was computed from (for the store).
struct ResponsesTurn {
  ResponsesRequest request;
  std::shared_ptr<const StoredResponse> previous;
  std::string prompt_text;
  std::vector<int32_t> prompt_ids;
  ResponseIds ids;
  std::string model;
};

void remember(ResponseStore& store, const ResponsesTurn& t, const GenerationOutcome& done,
              const json& object, const json& calls) {
  if (!t.request.store) return;
  auto s = std::make_shared<StoredResponse>();
  s->object = object;
  s->instructions = t.request.instructions;
  const ordered_json reply = ordered_json::array({reply_message(done.text, calls)});
  s->messages = conversation_after(t.previous.get(), t.request.input, reply);
  s->prompt_text = t.prompt_text;
  s->prompt_ids = t.prompt_ids;
  s->output_ids = done.token_ids;
  s->output_text = done.text;
  store.put(t.ids.response, std::move(s));
}

// The turn's conversation, prepared on the engine: a continued one starts
// with the stored tokens (responses_history.h).
PreparedRequest prepare_turn(CompletionService& svc, ResponsesTurn& t, ResponseStore& store,
                             const std::function<bool()>& gone) {
  ResponsesRequest& r = t.request;
  if (!r.previous_response_id.empty()) {
    t.previous = store.get(r.previous_response_id);
    if (!t.previous) throw previous_not_found(r.previous_response_id);
  }
  r.chat["messages"] = conversation_messages(r.instructions, t.previous.get(), r.input);
  refuse_chat_past_context(svc, r.chat, "input");
  CompletionService::PromptRewrite keep;
  if (r.store || t.previous)
    keep = [&t, &svc](const std::string& text, std::vector<int32_t>& tokens) {
      if (t.previous) continue_stored_tokens(*t.previous, text, svc.tokenizer(), tokens);
      t.prompt_text = text;
      t.prompt_ids = tokens;
    };
  return svc.prepare(ApiKind::kChat, dump_json(r.chat), gone, keep);
}

void stream_response(std::shared_ptr<ResponsesTurn> t, std::shared_ptr<ResponseStore> store,
                     PreparedRequest prepared, EngineLoop& loop, httplib::Response& res) {
  stream_generation(res, std::move(prepared), loop,
                    [t, store](PreparedRequest& p, const SseWrite& write) {
                      auto events = std::make_unique<ResponsesEventWriter>(
                          t->request, t->ids, t->model, p.prompt_tokens, write);
                      events->tool_calls = p.tool_calls;
                      events->on_finish = [t, store](const GenerationOutcome& done,
                                                     const json& object, const json& calls) {
                        remember(*store, *t, done, object, calls);
                      };
                      return events;
                    });
}

// The answer of a non-streamed turn. A reply cut off inside a tool call is
// read as the stream reads it, so both give its incomplete function_call item.
json answer_object(const ResponsesTurn& t, const PreparedRequest& p, const GenerationOutcome& done,
                   const json& calls) {
  if (!p.tool_calls || done.finish != FinishReason::Length || !calls.is_null())
    return response_object(t.request, t.ids, t.model, p.prompt_tokens, &done, calls);
  ResponsesEventWriter reader(t.request, t.ids, t.model, p.prompt_tokens,
                              [](const std::string&) { return true; });
  reader.tool_calls = p.tool_calls;
  return reader.replay(done);
}

void install_stored_routes(httplib::Server& http, const std::shared_ptr<ApiRouteContext>& ctx,
                           const std::shared_ptr<ResponseStore>& store) {
  auto error_body = [](const ApiError& e) { return e.to_json(); };
  http.Get(kResponseById,
           guard_api_route(ctx->authorized, error_body,
                           [store](const httplib::Request& req, httplib::Response& res) {
                             const std::string id = req.matches[1];
                             const auto found = store->get(id);
                             if (!found) throw response_not_found(id);
                             res.set_content(dump_json(found->object), "application/json");
                           }));
  http.Delete(
      kResponseById,
      guard_api_route(ctx->authorized, error_body,
                      [store](const httplib::Request& req, httplib::Response& res) {
                        const std::string id = req.matches[1];
                        if (!store->erase(id)) throw response_not_found(id);
                        const json out = {{"id", id}, {"object", "response"}, {"deleted", true}};
                        res.set_content(dump_json(out), "application/json");
                      }));
}

}  // namespace

void install_responses_routes(httplib::Server& http, std::shared_ptr<ApiRouteContext> ctx,
                              std::shared_ptr<ResponseStore> store) {
  if (!store) store = std::make_shared<ResponseStore>(ResponseStoreLimits{});
  auto handler = [ctx, store](const httplib::Request& req, httplib::Response& res) {
    CompletionService& svc = ctx->service;
    auto t = std::make_shared<ResponsesTurn>();
    t->request = parse_responses_request(req.body, svc.limits());
    const std::function<bool()> gone = ctx->client_gone();
    PreparedRequest p = prepare_turn(svc, *t, *store, gone);
    if (p.messages_dropped > 0)
      res.set_header("X-Kvforge-Truncated-Messages", std::to_string(p.messages_dropped));
    t->model = t->request.chat["model"].get<std::string>();
    t->ids = new_response_ids();
    if (t->request.stream) {
      stream_response(t, store, std::move(p), svc.loop(), res);
      return;
    }
    const std::optional<GenerationOutcome> done = pump_generation(
        p, svc.loop(), [](const std::string&) { return true; }, gone);
    if (!done) throw ApiError(499, "the client closed the connection; the request was aborted");
    const json calls = read_reply_calls(p.tool_calls, done->text);
    const json object = answer_object(*t, p, *done, calls);
    remember(*store, *t, *done, object, calls);
    res.set_content(dump_json(object), "application/json");
  };
  http.Post("/v1/responses",
            guard_api_route(
                ctx->authorized, [](const ApiError& e) { return e.to_json(); }, handler));
  install_stored_routes(http, ctx, store);
}

}  // namespace kvforge::server
