// kvforge chat: an interactive terminal conversation. Each turn renders the
// whole history through the model's chat template and submits it to the
// batching engine, whose prefix cache serves the K/V of the earlier turns
// instead of recomputing them (the "reused" figure after each reply).
// Commands: /reset (forget the history), /exit (or end of input).
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

#include "app/chat/chat_template.h"
#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
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
  ThreadPool pool(f.threads);
  EngineOptions eo;
  eo.kv_format = f.kv.format();
  eo.n_ctx = f.ctx;
  eo.max_seqs = 1;
  TextEngine engine(*model, tokenizer, pool, eo);
  const int context = engine.engine().max_sequence_tokens();
  const int room = f.n_predict > 0 ? std::min(f.n_predict, context / 2) : context / 2;
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
    p.max_tokens = std::min(room, context - static_cast<int>(prompt.size()));
    const int64_t reused_before = engine.engine().stats().prefix.tokens_reused;
    try {
      engine.add_tokens(prompt, p);
    } catch (const RequestRejected& e) {
      std::fprintf(stderr, "(rejected: %s)\n", e.what());
      continue;
    }
    std::optional<BranchResult> result;
    while (engine.has_unfinished()) {
      for (const TextEvent& ev : engine.step()) {
        std::fwrite(ev.text.data(), 1, ev.text.size(), stdout);
        std::fflush(stdout);
        if (ev.result) result = ev.result;
      }
    }
    if (!result) continue;
    conversation.add_reply(result->text);
    std::fprintf(
        stderr,
        "\n(%d prompt tokens, %lld reused from earlier turns, %zu generated, first token %.1f ms)",
        result->prompt_tokens,
        static_cast<long long>(engine.engine().stats().prefix.tokens_reused - reused_before),
        result->tokens.size(), result->timings.ttft_seconds * 1e3);
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
  sub->callback([f] { chat(*f); });
}

}  // namespace kvforge::cli
