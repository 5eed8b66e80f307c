// What POST /v1/completions and /v1/chat/completions do between the HTTP
// layer and the engine loop: validate the body, render the chat template,
// tokenize, check the context, submit, and turn the engine's events into an
// OpenAI response (one JSON body, or server-sent events). Transport-free: the
// HTTP server hands it the body and a sink for SSE text.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "app/chat/chat_template.h"
#include "app/chat/tool_call_syntax.h"
#include "app/server/chat_reply.h"
#include "app/server/engine_loop.h"
#include "app/server/openai_request.h"
#include "app/server/openai_response.h"
#include "app/server/prepare_gate.h"
#include "app/structured/constraint_cache.h"
#include "app/tokenizer/tokenizer.h"

namespace kvforge::server {

// A request accepted by the engine loop, ready to be answered.
struct PreparedRequest {
  ResponseMeta meta;
  CommonRequest common;
  int prompt_tokens = 0;
  int messages_dropped = 0;                  // by truncation (conversation_fit.h)
  std::optional<ToolCallSyntax> tool_calls;  // the reply is read for tool calls (tool_request.h)
  ReplyFormat reply;                         // chat: read for thoughts or harmony (chat_reply.h)
  std::shared_ptr<RequestStream> stream;
};

class CompletionService {
 public:
  // max_sequence_tokens: the longest prompt + completion the engine takes.
  CompletionService(Tokenizer tokenizer, ChatTemplate chat_template, RequestLimits limits,
                    int max_sequence_tokens, EngineLoop& loop);

  // Parses, tokenizes and submits; waits until the engine loop accepted the
  // request. Throws ApiError (400 bad input, the chat template failing on it,
  // or too long for the context; 429 queue full; 500/503 engine trouble or
  // busy; 499 when `cancelled` said so while waiting or rendering). At most
  // PrepareGate's capacity of request bytes is prepared at once, and a prompt
  // whose length in bytes proves it cannot fit is refused before it is tokenized.
  //
  // `rewrite` (chat only) sees the rendered prompt text and its tokens before
  // the context checks, and may replace the tokens: the Responses API
  // continuing a stored conversation with the ids it computed (responses_history.h).
  using PromptRewrite = std::function<void(const std::string& text, std::vector<int32_t>& tokens)>;
  PreparedRequest prepare(ApiKind kind, std::string_view body,
                          const std::function<bool()>& cancelled = {},
                          const PromptRewrite& rewrite = {});

  // Waits for the whole result; returns the response JSON. `client_gone` is
  // asked every 20 ms while waiting; once it says true the request
  // is cancelled (its KV freed) and nullopt returned.
  std::optional<nlohmann::json> complete(PreparedRequest& request,
                                         const std::function<bool()>& client_gone = {});

  // Streams "data: ..." events through `write` (false = the client is gone:
  // the request is cancelled and freed). Ends with the usage chunk if asked,
  // then "data: [DONE]". Returns false when the client went away.
  bool stream(PreparedRequest& request, const std::function<bool(const std::string&)>& write);

  // The prompt tokens of an OpenAI chat body as prepare() tokenizes it, with
  // no truncation and nothing submitted (completion_service_count.cpp).
  // Throws ApiError as prepare() does.
  int count_chat_tokens(std::string_view body, const std::function<bool()>& cancelled = {});

  const RequestLimits& limits() const { return limits_; }
  EngineLoop& loop() { return loop_; }
  const std::string& model_id() const { return limits_.model_ids.front(); }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  // Tokenizer::max_token_bytes, computed once (it walks the whole vocabulary).
  size_t max_token_bytes() const { return max_token_bytes_; }
  const ChatTemplate& chat_template() const { return chat_template_; }
  // A place for `bytes` of request beside the others being prepared (prepare_gate.h),
  // for work outside prepare() that costs a multiple of its body (/tokenize).
  PrepareGate::Ticket admit(size_t bytes, const std::function<bool()>& cancelled) {
    return gate_.enter(bytes, cancelled);
  }

 private:
  struct RenderedChat {
    std::string text;
    bool add_bos = false;  // the template did not write the BOS text itself
  };
  RenderedChat render_chat(const ChatRequest& r, const std::function<bool()>& cancelled) const;
  std::vector<int32_t> prompt_for_chat(const ChatRequest& r,
                                       const std::function<bool()>& cancelled) const;
  // The chat prompt; with `truncate`, the oldest turns of r.messages dropped
  // until it fits (conversation_fit.h), their count in `messages_dropped`.
  std::vector<int32_t> fit_chat(ChatRequest& r, bool truncate,
                                const std::function<bool()>& cancelled,
                                int& messages_dropped) const;
  std::vector<int32_t> prompt_for_completion(const CompletionRequest& r) const;
  // Tokenizes a prompt text, or refuses it (400 context_length_exceeded) when
  // its bytes alone prove it too long, or once its tokens pass the context.
  std::vector<int32_t> tokenize_prompt(std::string_view text, bool add_bos,
                                       const char* param) const;
  [[noreturn]] void too_long(const std::string& size, const char* param) const;
  // Applies limits_.max_prompt_tokens (cut or 400), then the context limit.
  void fit_prompt(std::vector<int32_t>& prompt, CommonRequest& r, const char* param) const;
  void check_context(size_t prompt_tokens, CommonRequest& r, const char* param) const;
  // The request's grammar or schema, compiled (cached); ApiError 400 naming the field.
  std::shared_ptr<const GrammarConstraint> compile_constraint(const ConstraintSpec& spec);
  std::optional<std::vector<TokenLogprobInfo>> logprobs_of(const TextEvent& ev, bool wanted) const;

  Tokenizer tokenizer_;
  size_t max_token_bytes_;  // a token covers at most this many bytes of prompt text
  PrepareGate gate_{PrepareGate::kDefaultCapacityBytes};
  ChatTemplate chat_template_;
  ToolCallStyle tool_style_;  // how the template writes tool calls
  ToolTurns tool_turns_;      // how it reads a tool exchange
  RequestLimits limits_;
  ConstraintCache constraints_;  // compiled grammars and schemas, by text
  int max_sequence_tokens_;
  EngineLoop& loop_;
};

}  // namespace kvforge::server
