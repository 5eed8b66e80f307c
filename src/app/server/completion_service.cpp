#include "app/server/completion_service.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "app/chat/gemma4_conversation.h"
#include "app/server/access_log.h"
#include "app/server/chat_reply.h"
#include "app/server/conversation_fit.h"
#include "app/server/openai_error.h"
#include "app/server/request_fields.h"
#include "app/server/tool_call_response.h"
#include "app/server/tool_request.h"
#include "engine/sampling/grammar/grammar_error.h"

namespace kvforge::server {
namespace {

using std::chrono::milliseconds;

// A request field of an unexpected shape that validation let through is still
// the client's doing: a 400, never a 500.
template <typename Parse>
auto parse_fields(Parse&& parse) {
  try {
    return parse();
  } catch (const nlohmann::json::exception& e) {
    throw ApiError(400, std::string("invalid request: ") + e.what());
  }
}

struct BranchState {
  std::string text;
  int tokens = 0;
  std::string finish_reason = "stop";
  std::vector<TokenLogprobInfo> logprobs;
  bool started = false;                  // chat streaming: the role chunk went out
  std::optional<ChatReplyReader> reply;  // streaming a reply read for thoughts or calls
};

bool reads_reply(const PreparedRequest& p) { return p.tool_calls || p.reply.active(); }

// The reply's thoughts and calls in their fields (chat_reply.h).
void read_reply(const PreparedRequest& p, Choice& c) {
  if (!reads_reply(p)) return;
  ChatReplyReader reader(p.reply, p.tool_calls);
  reader.feed(c.text);
  reader.finish();
  reader.fill(c);
}

using Send = std::function<bool(const nlohmann::json&)>;

// Streams one event of a chat branch whose reply is read: its thoughts as
// reasoning_content, its text as content until the reply turns out to be
// calls, then the calls' deltas. Returns false when the client went away.
bool stream_reply_event(const ResponseMeta& meta, BranchState& b, const TextEvent& ev,
                        const std::optional<std::vector<TokenLogprobInfo>>& lp, bool include_usage,
                        const Send& send) {
  ChatReplyReader::Piece out = b.reply->feed(ev.text);
  if (ev.result) {
    ChatReplyReader::Piece rest = b.reply->finish();
    out.reasoning += rest.reasoning;
    out.content += rest.content;
    for (auto& call : rest.tool_calls) out.tool_calls.push_back(std::move(call));
  }
  if (!out.empty() || (lp && !lp->empty()) || (ev.result && !b.started)) {
    if (!send(reply_chunk(meta, ev.branch, out, !b.started, lp, include_usage))) return false;
    b.started = true;
  }
  if (!ev.result) return true;
  std::string reason = finish_reason_name(ev.result->finish);
  if (reason == "stop" && b.reply->has_calls()) reason = "tool_calls";
  return send(stream_chunk(meta, ev.branch, "", false, reason, std::nullopt, include_usage));
}

// The prompt's last characters, special tokens as their text.
std::string prompt_end(const Tokenizer& tokenizer, const std::vector<int32_t>& prompt) {
  constexpr size_t kTokens = 8;
  const size_t from = prompt.size() > kTokens ? prompt.size() - kTokens : 0;
  DecodeOptions o{.skip_bos = false, .render_special = true, .strip_space_prefix = false};
  return tokenizer.decode(std::span(prompt).subspan(from), o);
}

}  // namespace

CompletionService::CompletionService(Tokenizer tokenizer, ChatTemplate chat_template,
                                     RequestLimits limits, int max_sequence_tokens,
                                     EngineLoop& loop)
    : tokenizer_(std::move(tokenizer)),
      max_token_bytes_(tokenizer_.max_token_bytes()),
      chat_template_(std::move(chat_template)),
      tool_style_(detect_tool_call_style(chat_template_)),
      tool_turns_(tool_turns_for(chat_template_)),
      limits_(std::move(limits)),
      constraints_(tokenizer_),
      max_sequence_tokens_(max_sequence_tokens),
      loop_(loop) {
  if (limits_.model_ids.empty()) limits_.model_ids.push_back("kvforge");
}

std::shared_ptr<const GrammarConstraint> CompletionService::compile_constraint(
    const ConstraintSpec& spec) {
  try {
    return constraints_.get(spec);
  } catch (const GrammarError& e) {
    const std::string param = spec.source.substr(0, spec.source.find('.'));
    throw ApiError(400, e.what(), "invalid_request_error", param);
  }
}

[[noreturn]] void CompletionService::too_long(const std::string& size, const char* param) const {
  if (limits_.max_prompt_tokens > 0 && !limits_.truncate_long_prompts)
    throw bad_param(param,
                    "the prompt is " + size + ", over the static pipeline's max_prompt_len of " +
                        std::to_string(limits_.max_prompt_tokens),
                    "context_length_exceeded");
  throw bad_param(param,
                  "the prompt is " + size + ", which exceeds the context window of " +
                      std::to_string(max_sequence_tokens_) +
                      " tokens (prompt plus at least one generated token)",
                  "context_length_exceeded");
}

std::vector<int32_t> CompletionService::tokenize_prompt(std::string_view text, bool add_bos,
                                                        const char* param) const {
  // A prompt cut to its last tokens (--overflow truncate-left) must be tokenized whole.
  const bool truncates = limits_.max_prompt_tokens > 0 && limits_.truncate_long_prompts;
  size_t limit = static_cast<size_t>(max_sequence_tokens_) - 1;
  if (limits_.max_prompt_tokens > 0) limit = std::min(limit, size_t(limits_.max_prompt_tokens));
  const size_t at_least = (text.size() + max_token_bytes_ - 1) / max_token_bytes_;
  if (!truncates && at_least > limit)
    too_long(std::to_string(text.size()) + " bytes, so at least " + std::to_string(at_least) +
                 " tokens (a token of this model covers at most " +
                 std::to_string(max_token_bytes_) + " bytes)",
             param);
  std::vector<int32_t> tokens;
  try {
    // As `kvforge run` does: the model's BOS convention, special tokens parsed.
    // Stops past the context: the exact count of a longer prompt is not worth its cost.
    const auto cap = truncates ? SIZE_MAX : static_cast<size_t>(max_sequence_tokens_);
    tokens = tokenizer_.encode(text, add_bos, /*parse_special=*/true, cap);
  } catch (const TokenizerError& e) {
    throw bad_param(param, e.what());
  }
  if (!truncates && tokens.size() > static_cast<size_t>(max_sequence_tokens_))
    too_long("more than " + std::to_string(max_sequence_tokens_) + " tokens", param);
  return tokens;
}

std::vector<int32_t> CompletionService::prompt_for_chat(
    const ChatRequest& r, const std::function<bool()>& cancelled) const {
  const RenderedChat rendered = render_chat(r, cancelled);
  return tokenize_prompt(rendered.text, rendered.add_bos, "messages");
}

CompletionService::RenderedChat CompletionService::render_chat(
    const ChatRequest& r, const std::function<bool()>& cancelled) const {
  ChatTemplateInputs in;
  in.messages = r.messages;
  in.tools = r.tools;
  in.add_generation_prompt = true;
  const int32_t bos = tokenizer_.bos_id(), eos = tokenizer_.eos_id();
  in.bos_token = bos >= 0 ? tokenizer_.token_text(bos) : "";
  in.eos_token = eos >= 0 ? tokenizer_.token_text(eos) : "";
  in.extra = r.template_kwargs;
  // Gemma 4's template thinks only when told to; llama-server tells it to
  // unless the request's chat_template_kwargs say otherwise.
  const bool gemma4 = tool_style_ == ToolCallStyle::kGemma4;
  if (gemma4 && !in.extra.contains("enable_thinking")) in.extra["enable_thinking"] = true;
  jinja::RenderLimits render_limits;
  render_limits.abandoned = cancelled;
  std::string text;
  try {
    text = chat_template_.render(in, render_limits);
  } catch (const RenderAbandoned&) {
    throw ApiError(499, "the client closed the connection; the request was aborted");
  } catch (const TemplateRaised& e) {
    throw bad_param(
        "messages",
        std::string("the model's chat template rejected the conversation: ") + e.what());
  } catch (const TemplateBudgetExceeded& e) {
    throw bad_param(
        "messages",
        std::string("the chat template went over its budget for this conversation: ") + e.what());
  } catch (const TemplateError& e) {
    // A type error, an unknown method, a bad argument: the template meets
    // what this request's messages, tools or chat_template_kwargs gave it
    // (it was test-rendered at load). Named, with its line, for the client.
    throw bad_param("messages",
                    std::string("the chat template failed on this request: ") + e.what());
  } catch (const std::invalid_argument& e) {
    throw bad_param("messages", e.what());
  }
  if (gemma4) gemma4_open_model_turn(text);
  // Templates usually write the BOS text themselves; don't add a second one.
  const bool has_bos_text = !in.bos_token.empty() && text.rfind(in.bos_token, 0) == 0;
  return {std::move(text), tokenizer_.add_bos() && !has_bos_text};
}

std::vector<int32_t> CompletionService::prompt_for_completion(const CompletionRequest& r) const {
  if (!r.prompt_text) {
    for (int32_t t : r.prompt_tokens)
      if (t >= tokenizer_.n_vocab())
        throw bad_param("prompt", "token id " + std::to_string(t) + " is outside the vocabulary (" +
                                      std::to_string(tokenizer_.n_vocab()) + " tokens)");
    return r.prompt_tokens;
  }
  return tokenize_prompt(*r.prompt_text, tokenizer_.add_bos(), "prompt");
}

void CompletionService::check_context(size_t prompt_tokens, CommonRequest& r,
                                      const char* param) const {
  const auto ctx = static_cast<size_t>(max_sequence_tokens_);
  if (prompt_tokens == 0) throw bad_param(param, "the prompt is empty after tokenization");
  if (prompt_tokens >= ctx)
    throw bad_param(param,
                    "the prompt is " + std::to_string(prompt_tokens) +
                        " tokens, which exceeds the context window of " + std::to_string(ctx) +
                        " tokens (prompt plus at least one generated token)",
                    "context_length_exceeded");
  const int room = static_cast<int>(ctx - prompt_tokens);
  // Until EOS or the context is full; with serve --context-shift too, which
  // shifts only for a reply that asks for more (a reply without a bound on a
  // model that never stops would run forever).
  const bool shifts = r.sampling.context_shift.value_or(limits_.context_shift);
  if (!r.sampling.max_tokens) {
    if (shifts) r.sampling.max_tokens = room;
    return;
  }
  // A context shift: the engine makes room as the reply goes.
  if (*r.sampling.max_tokens <= room || shifts) return;
  if (!r.max_tokens_explicit) {
    r.sampling.max_tokens = room;  // an endpoint default shrinks to fit
    return;
  }
  throw bad_param("max_tokens",
                  "the prompt (" + std::to_string(prompt_tokens) + " tokens) plus max_tokens (" +
                      std::to_string(*r.sampling.max_tokens) + ") exceeds the context window of " +
                      std::to_string(ctx) + " tokens",
                  "context_length_exceeded");
}

void CompletionService::fit_prompt(std::vector<int32_t>& prompt, CommonRequest& r,
                                   const char* param) const {
  const auto limit = static_cast<size_t>(limits_.max_prompt_tokens);
  if (limit > 0 && prompt.size() > limit) {
    if (!limits_.truncate_long_prompts)
      throw bad_param(param,
                      "the prompt is " + std::to_string(prompt.size()) +
                          " tokens, over the static pipeline's max_prompt_len of " +
                          std::to_string(limit) +
                          " (start the server with a larger --max-prompt-len, or --overflow "
                          "truncate-left to keep the last " +
                          std::to_string(limit) + " tokens)",
                      "context_length_exceeded");
    prompt.erase(prompt.begin(), prompt.end() - static_cast<std::ptrdiff_t>(limit));
  }
  check_context(prompt.size(), r, param);
}

PreparedRequest CompletionService::prepare(ApiKind kind, std::string_view body,
                                           const std::function<bool()>& cancelled,
                                           const PromptRewrite& rewrite) {
  const PrepareGate::Ticket ticket = gate_.enter(body.size(), cancelled);
  JsonBodyChecks checks;
  checks.top_level_key = [kind](const std::string& key) { reject_unknown_field(key, kind); };
  checks.cancelled = cancelled;
  const nlohmann::ordered_json json = parse_json_body(body, limits_, checks);
  reject_unknown_fields(json, kind);
  PreparedRequest p;
  Submission s;
  if (kind == ApiKind::kChat) {
    const bool truncate = parse_truncation(json).value_or(limits_.truncate_conversations);
    // Truncating, a max_tokens past the context ends there (finish "length"), as llama-server.
    RequestLimits limits = limits_;
    if (truncate) limits.max_tokens_limit = std::numeric_limits<int>::max();
    ChatRequest r = parse_fields([&] { return parse_chat_request(json, limits); });
    p.tool_calls = parse_fields([&] { return plan_tools(json, r, tool_style_, tool_turns_); });
    const ReasoningFormat reasoning = request_reasoning_format(json, limits_.reasoning_format);
    s.prompt = fit_chat(r, truncate, cancelled, p.messages_dropped);
    if (rewrite) rewrite(render_chat(r, cancelled).text, s.prompt);
    fit_prompt(s.prompt, r, "messages");
    p.reply = reply_format(reasoning, chat_template_, prompt_end(tokenizer_, s.prompt));
    s.options.render_special = p.reply.harmony;  // its markup is special tokens
    p.common = r;
  } else {
    CompletionRequest r = parse_fields([&] { return parse_completion_request(json, limits_); });
    s.prompt = prompt_for_completion(r);
    fit_prompt(s.prompt, r, "prompt");
    p.common = r;
  }
  p.meta = new_response_meta(kind, p.common.model.empty() ? model_id() : p.common.model);
  p.prompt_tokens = static_cast<int>(s.prompt.size());
  trace_prompt_tokens(p.prompt_tokens);
  s.sampling = p.common.sampling;
  if (p.common.constraint) s.sampling.grammar = compile_constraint(*p.common.constraint);
  s.options.n = p.common.n;
  s.options.logprobs.enabled = p.common.logprobs;
  s.options.logprobs.top = p.common.top_logprobs;
  p.stream = loop_.submit(std::move(s));
  if (const auto rejected = p.stream->wait_admission())
    throw ApiError(rejected->first, rejected->second,
                   rejected->first >= 500 ? "server_error" : "invalid_request_error");
  return p;
}

std::optional<std::vector<TokenLogprobInfo>> CompletionService::logprobs_of(const TextEvent& ev,
                                                                            bool wanted) const {
  if (!wanted) return std::nullopt;
  std::vector<TokenLogprobInfo> out;
  if (!ev.token) return out;
  TokenLogprobInfo info;
  info.token = tokenizer_.token_to_piece(ev.token->id, /*render_special=*/true);
  info.logprob = ev.token->logprob;
  for (const TokenLogprob& alt : ev.token->top_logprobs)
    info.top.emplace_back(tokenizer_.token_to_piece(alt.token, true), alt.logprob);
  out.push_back(std::move(info));
  return out;
}

std::optional<nlohmann::json> CompletionService::complete(
    PreparedRequest& p, const std::function<bool()>& client_gone) {
  std::vector<BranchState> branches(static_cast<size_t>(p.common.n));
  // Events may flow without pause, so the client is checked by the clock, not on timeouts.
  constexpr auto kCheckEvery = milliseconds(20);
  auto next_check = std::chrono::steady_clock::now() + kCheckEvery;
  Usage usage{p.prompt_tokens, 0, p.messages_dropped};
  while (true) {
    RequestStream::Update u = p.stream->wait(kCheckEvery);
    if (client_gone && std::chrono::steady_clock::now() >= next_check) {
      next_check = std::chrono::steady_clock::now() + kCheckEvery;
      if (!u.closed && client_gone()) {
        loop_.cancel(p.stream);
        return std::nullopt;
      }
    }
    if (u.rejected) throw ApiError(u.rejected->first, u.rejected->second, "server_error");
    for (const TextEvent& ev : u.events) {
      BranchState& b = branches.at(static_cast<size_t>(ev.branch));
      b.text += ev.text;
      if (ev.token) {
        ++b.tokens;
        trace_token();
      }
      if (auto lp = logprobs_of(ev, p.common.logprobs); lp && !lp->empty())
        b.logprobs.push_back(lp->front());
      if (ev.result) {
        b.text = ev.result->text;  // authoritative: stop strings cut out
        b.finish_reason = finish_reason_name(ev.result->finish);
        usage.cached_tokens = ev.result->cached_tokens;  // the same for every branch
      }
    }
    if (u.closed) break;
  }
  std::vector<Choice> choices;
  for (size_t i = 0; i < branches.size(); ++i) {
    Choice c;
    c.index = static_cast<int>(i);
    c.text = branches[i].text;
    c.finish_reason = branches[i].finish_reason;
    if (p.common.logprobs) c.logprobs = branches[i].logprobs;
    read_reply(p, c);
    usage.completion_tokens += branches[i].tokens;
    choices.push_back(std::move(c));
  }
  return full_response(p.meta, choices, usage);
}

bool CompletionService::stream(PreparedRequest& p,
                               const std::function<bool(const std::string&)>& write) {
  std::vector<BranchState> branches(static_cast<size_t>(p.common.n));
  const bool chat = p.meta.kind == ApiKind::kChat;
  auto send = [&](const nlohmann::json& chunk) {
    if (write(sse_event(chunk))) return true;
    loop_.cancel(p.stream);
    return false;
  };
  Usage usage{p.prompt_tokens, 0, p.messages_dropped};
  if (reads_reply(p))
    for (BranchState& b : branches) b.reply.emplace(p.reply, p.tool_calls);
  while (true) {
    RequestStream::Update u = p.stream->wait(milliseconds(1000));
    if (u.rejected) {
      return write_stream_error(ApiError(u.rejected->first, u.rejected->second, "server_error"),
                                write);
    }
    for (const TextEvent& ev : u.events) {
      BranchState& b = branches.at(static_cast<size_t>(ev.branch));
      if (ev.result) usage.cached_tokens = ev.result->cached_tokens;  // the same for every branch
      if (ev.token) {
        ++b.tokens;
        ++usage.completion_tokens;
        trace_token();
      }
      const auto lp = logprobs_of(ev, p.common.logprobs);
      if (b.reply) {
        if (!stream_reply_event(p.meta, b, ev, lp, p.common.include_usage, send)) return false;
        continue;
      }
      const bool first = chat && !b.started;
      if (!ev.text.empty() || first || (lp && !lp->empty())) {
        if (!send(stream_chunk(p.meta, ev.branch, ev.text, first, std::nullopt, lp,
                               p.common.include_usage)))
          return false;
        b.started = true;
      }
      if (ev.result) {
        const std::optional<std::string> reason = finish_reason_name(ev.result->finish);
        if (!send(stream_chunk(p.meta, ev.branch, "", false, reason, std::nullopt,
                               p.common.include_usage)))
          return false;
      }
    }
    if (u.closed) break;
    // Idle (queued, or a long prefill): an SSE comment tells whether the client is still there.
    if (u.events.empty() && !write(": keep-alive\n\n")) {
      loop_.cancel(p.stream);
      return false;
    }
  }
  if (p.common.include_usage && !send(usage_chunk(p.meta, usage))) return false;
  return write(kSseDone);
}

}  // namespace kvforge::server
