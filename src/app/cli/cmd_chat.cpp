// kvforge chat: an interactive terminal conversation. Each turn renders the
// whole history through the model's chat template and submits it to the
// batching engine, whose prefix cache serves the K/V of the earlier turns
// instead of recomputing them (the "reused" figure after each reply). With
// --static/--plan the conversation lives in one static slot instead, kept
// between turns and cut back to the prefix the new prompt shares with it
// (generate_static_in_session).
// Commands: /reset (forget the history), /exit (or end of input).
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

#include "app/chat/chat_template.h"
#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/static_flags.h"
#include "app/static_generation.h"
#include "app/text_engine.h"
#include "model/model.h"

namespace kvforge::cli {
namespace {

struct ChatFlags {
  std::string model;
  std::string system;
  std::string chat_template_file;
  int n_predict = 128;
  int threads = default_threads();
  int ctx = 0;
  KvTypeFlags kv;
  SamplingFlags sampling;
  StaticFlags static_mode;
};

// One reply, whichever engine produced it.
struct Reply {
  std::string text;
  int prompt_tokens = 0;
  int64_t reused = 0;  // prompt tokens whose K/V came from earlier turns
  size_t generated = 0;
  double ttft_seconds = 0;
};

void print_piece(std::string_view piece) {
  std::fwrite(piece.data(), 1, piece.size(), stdout);
  std::fflush(stdout);
}

// The paged engine: each turn is a new request; the prefix cache finds the history's blocks.
class PagedChat {
 public:
  PagedChat(const ChatFlags& f, const Model& model, const Tokenizer& tokenizer)
      : pool_(f.threads), engine_(model, tokenizer, pool_, options(f)) {}
  int context() const { return engine_.engine().max_sequence_tokens(); }

  std::optional<Reply> turn(const std::vector<int32_t>& prompt, const SamplingParams& p) {
    const int64_t reused_before = engine_.engine().stats().prefix.tokens_reused;
    try {
      engine_.add_tokens(prompt, p);
    } catch (const RequestRejected& e) {
      std::fprintf(stderr, "(rejected: %s)\n", e.what());
      return std::nullopt;
    }
    std::optional<BranchResult> result;
    while (engine_.has_unfinished()) {
      for (const TextEvent& ev : engine_.step()) {
        print_piece(ev.text);
        if (ev.result) result = ev.result;
      }
    }
    if (!result) return std::nullopt;
    return Reply{result->text, result->prompt_tokens,
                 engine_.engine().stats().prefix.tokens_reused - reused_before,
                 result->tokens.size(), result->timings.ttft_seconds};
  }

 private:
  static EngineOptions options(const ChatFlags& f) {
    EngineOptions eo;
    eo.kv_format = f.kv.format();
    eo.n_ctx = f.ctx;
    eo.max_seqs = 1;
    return eo;
  }
  ThreadPool pool_;
  TextEngine engine_;
};

// The static pipeline: the conversation stays in slot 0 between turns.
class StaticChat {
 public:
  StaticChat(const ChatFlags& f, const Model& model, const Tokenizer& tokenizer)
      : tokenizer_(tokenizer), overflow_(f.static_mode.overflow_policy()) {
    StaticPlans prepared = prepare_static_plans(f.static_mode, model, f.kv.format(), f.threads);
    pool_ = std::make_unique<ThreadPool>(prepared.plans.n_threads);
    runner_ = std::make_unique<StaticRunner>(model, *pool_, std::move(prepared.plans));
    std::fprintf(stderr, "static pipeline: %s; plans %s\n", runner_->config().describe().c_str(),
                 prepared.source.c_str());
  }
  const StaticConfig& config() const { return runner_->config(); }

  std::optional<Reply> turn(const std::vector<int32_t>& prompt, const SamplingParams& p) {
    try {
      const StaticGenerationResult r = generate_static_in_session(
          *runner_, tokenizer_, session_, prompt, p, overflow_, print_piece);
      if (!r.notice.empty()) std::fprintf(stderr, "\n(%s)", r.notice.c_str());
      return Reply{r.generation.text, r.generation.prompt_tokens, r.prompt_tokens_reused,
                   r.generation.tokens.size(), r.generation.first_token_seconds};
    } catch (const std::length_error& e) {
      std::fprintf(stderr, "(rejected: %s)\n", e.what());
      return std::nullopt;
    }
  }

 private:
  const Tokenizer& tokenizer_;
  OverflowPolicy overflow_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<StaticRunner> runner_;
  StaticSlotSession session_;
};

ChatTemplate load_template(const ChatFlags& f, const gguf::GgufFile& file) {
  if (!f.chat_template_file.empty())
    return ChatTemplate::parse(read_text_file(f.chat_template_file));
  if (const auto source = chat_template_source(file)) return ChatTemplate::parse(*source);
  std::fprintf(stderr, "(the model has no chat template: using the plain \"Role: content\" one)\n");
  return ChatTemplate::fallback();
}

class Conversation {
 public:
  Conversation(const ChatFlags& f, const Tokenizer& tokenizer, ChatTemplate tmpl)
      : tokenizer_(tokenizer), template_(std::move(tmpl)) {
    if (!f.system.empty())
      system_ = nlohmann::ordered_json{{"role", "system"}, {"content", f.system}};
  }

  // Tokens of the history plus `user`, dropping the oldest turns until the
  // prompt leaves `room` tokens of the context for the reply.
  std::vector<int32_t> prompt_with(const std::string& user, int context, int room) {
    turns_.push_back({{"role", "user"}, {"content", user}});
    while (true) {
      std::vector<int32_t> tokens = render();
      if (static_cast<int>(tokens.size()) + room <= context || turns_.size() <= 1) return tokens;
      turns_.erase(turns_.begin(), turns_.begin() + std::min<size_t>(2, turns_.size() - 1));
      std::fprintf(stderr, "(history trimmed to fit the %d-token context)\n", context);
    }
  }
  void add_reply(const std::string& text) {
    turns_.push_back({{"role", "assistant"}, {"content", text}});
  }
  void reset() { turns_.clear(); }

 private:
  std::vector<int32_t> render() const {
    ChatTemplateInputs in;
    if (system_) in.messages.push_back(*system_);
    for (const auto& t : turns_) in.messages.push_back(t);
    const int32_t bos = tokenizer_.bos_id(), eos = tokenizer_.eos_id();
    in.bos_token = bos >= 0 ? tokenizer_.token_text(bos) : "";
    in.eos_token = eos >= 0 ? tokenizer_.token_text(eos) : "";
    const std::string text = template_.render(in);
    const bool has_bos = !in.bos_token.empty() && text.rfind(in.bos_token, 0) == 0;
    return tokenizer_.encode(text, tokenizer_.add_bos() && !has_bos, /*parse_special=*/true);
  }

  const Tokenizer& tokenizer_;
  ChatTemplate template_;
  std::optional<nlohmann::ordered_json> system_;
  std::vector<nlohmann::ordered_json> turns_;
};

void chat(const ChatFlags& f) {
  const SamplingParams params = f.sampling.to_params(f.n_predict);
  const auto path = resolve_model_path(f.model);
  const auto model = Model::load(path);
  const Tokenizer tokenizer = Tokenizer::from_gguf(model->file());
  Conversation conversation(f, tokenizer, load_template(f, model->file()));
  std::unique_ptr<PagedChat> paged;
  std::unique_ptr<StaticChat> slot;
  // The prompt may fill `context` up to `room` tokens for the reply; a reply
  // is at most `reply_limit` tokens.
  int context = 0, room = 0, reply_limit = 0;
  if (f.static_mode.active()) {
    slot = std::make_unique<StaticChat>(f, *model, tokenizer);
    context = slot->config().capacity();
    room = slot->config().min_response_len;  // the prompt stays within max_prompt_len
    reply_limit = f.n_predict > 0 ? f.n_predict : context;
  } else {
    paged = std::make_unique<PagedChat>(f, *model, tokenizer);
    context = paged->context();
    room = f.n_predict > 0 ? std::min(f.n_predict, context / 2) : context / 2;
    reply_limit = room;
  }
  std::fprintf(stderr, "chatting with %s (context %d tokens); /reset forgets, /exit quits\n",
               path.filename().c_str(), context);
  std::string line;
  while (true) {
    std::fputs("\n> ", stdout);
    std::fflush(stdout);
    if (!std::getline(std::cin, line) || line == "/exit") break;
    if (line == "/reset") {
      conversation.reset();
      continue;
    }
    if (line.empty()) continue;
    SamplingParams p = params;
    const std::vector<int32_t> prompt = conversation.prompt_with(line, context, room);
    p.max_tokens = std::min(reply_limit, context - static_cast<int>(prompt.size()));
    const std::optional<Reply> reply = paged ? paged->turn(prompt, p) : slot->turn(prompt, p);
    if (!reply) continue;
    conversation.add_reply(reply->text);
    std::fprintf(
        stderr,
        "\n(%d prompt tokens, %lld reused from earlier turns, %zu generated, first token %.1f ms)",
        reply->prompt_tokens, static_cast<long long>(reply->reused), reply->generated,
        reply->ttft_seconds * 1e3);
  }
  std::fputc('\n', stdout);
}

}  // namespace

void add_chat_command(CLI::App& app) {
  auto f = std::make_shared<ChatFlags>();
  CLI::App* sub = app.add_subcommand(
      "chat", "interactive chat in the terminal, reusing the KV cache of earlier turns");
  sub->add_option("-m,--model", f->model, "GGUF model (default: the model in models/)");
  sub->add_option("--system", f->system, "system message");
  sub->add_option("--chat-template", f->chat_template_file,
                  "Jinja chat template file (default: the model's)");
  sub->add_option("-n,--n-predict", f->n_predict, "largest reply in tokens")->capture_default_str();
  sub->add_option("-t,--threads", f->threads, "threads")->capture_default_str();
  sub->add_option("-c,--ctx-size", f->ctx, "context size; 0 = the model's")->capture_default_str();
  f->kv.add_to(*sub);
  f->sampling.add_to(*sub);
  f->static_mode.add_to(*sub);
  sub->callback([f] { chat(*f); });
}

}  // namespace kvforge::cli
