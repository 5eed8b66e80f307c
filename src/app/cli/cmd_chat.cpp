// kvforge chat: an interactive terminal conversation. Each turn renders the
// whole history through the model's chat template and submits it as a new
// request (generate()) to the batching engine, whose prefix cache serves the
// K/V of the earlier turns instead of recomputing them (the "reused" figure
// after each reply). With --static/--plan the same requests go to the static
// pipeline's slots, which keep the conversation's K/V between turns and cut
// it back to the prefix the new prompt shares (EngineOptions::reuse_slots).
// On a terminal lines are edited with libedit (history on Up/Down); Ctrl-C
// stops the reply being written and keeps the conversation, Ctrl-D quits.
// Commands: /help, /reset, /save FILE, /load FILE, /exit (/bye); "//text" sends "/text".
// A message spans lines after a trailing '\' or inside """ ... """ (chat_input.h).
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>

#include "app/chat/chat_template.h"
#include "app/cli/chat_conversation.h"
#include "app/cli/chat_input.h"
#include "app/cli/chat_session.h"
#include "app/cli/cli_common.h"
#include "app/cli/command_engine.h"
#include "app/cli/commands.h"
#include "app/cli/engine_flags.h"
#include "app/cli/line_editor.h"
#include "app/cli/static_flags.h"
#include "app/cli/subcommand.h"
#include "app/generation.h"
#include "model/model.h"

namespace kvforge::cli {
namespace {

struct ChatFlags : ModelFlags {
  std::string system;
  std::string chat_template_file;
  int n_predict = 128;
  int ctx = 0;
  KvTypeFlags kv;
  KvDiskFlags disk;
  SamplingFlags sampling;
  StaticFlags static_mode;
  std::string session;  // --session FILE (chat_session.h)
  bool context_shift = false;
};

// One reply, whichever engine produced it.
struct Reply {
  std::string text;
  int prompt_tokens = 0;
  int64_t reused = 0;  // prompt tokens whose K/V came from earlier turns
  size_t generated = 0;
  double ttft_seconds = 0;
  bool stopped = false;     // Ctrl-C cut it short
  bool length_cut = false;  // ended by max_tokens (finish "length")
  int64_t shifts = 0;       // context shifts during the reply (--context-shift)
};

void print_piece(std::string_view piece) {
  std::fwrite(piece.data(), 1, piece.size(), stdout);
  std::fflush(stdout);
}

// The paged engine finds the history's blocks in its prefix cache; the
// static slots keep the conversation's K/V in the slot between turns.
// A context shift keeps the first `n_keep` tokens: the system message as the template renders it.
CommandEngine make_chat_engine(const ChatFlags& f, const Model& model, const Tokenizer& tokenizer,
                               int n_keep) {
  if (f.static_mode.active()) {
    CommandEngine e = make_static_engine(f.static_mode, model, tokenizer, f.kv.format(), f.threads,
                                         /*reuse_slots=*/true, f.disk, {f.context_shift, n_keep});
    std::fprintf(stderr, "static pipeline: %s; plans %s\n", e.slots->config().describe().c_str(),
                 e.plans_source.c_str());
    return e;
  }
  check_context_size(model.config(), f.ctx, "-c/--ctx-size");
  EngineOptions eo;
  eo.kv_format = f.kv.format();
  eo.n_ctx = f.ctx;
  eo.context_shift = f.context_shift;
  eo.n_keep = n_keep;
  eo.max_seqs = 1;
  f.disk.apply(eo);
  // A hybrid model's prefix on disk needs the recurrent-state snapshot after it.
  if (!f.disk.dir.empty()) eo.state_snapshots = 1;
  return make_paged_engine(model, tokenizer, f.threads, eo);
}

std::optional<Reply> turn(const CommandEngine& e, const std::vector<int32_t>& prompt,
                          const SamplingParams& p, InterruptLatch& ctrl_c) {
  // K/V not recomputed: kept in RAM (prefix cache, static slot) or restored from disk.
  const auto reused = [&e] {
    const EngineStats s = e.engine->engine().stats();
    return s.prefix.tokens_reused + s.disk.tokens_restored;
  };
  const int64_t reused_before = reused();
  const int64_t shifts_before = e.engine->engine().stats().context_shifts;
  GenerationResult r;
  try {
    r = generate(*e.engine, prompt, p, print_piece, [&ctrl_c] { return ctrl_c.take(); });
  } catch (const RequestRejected& err) {
    std::fprintf(stderr, "(rejected: %s)\n", err.what());
    return std::nullopt;
  }
  const std::string notice = e.notice(r);
  if (!notice.empty()) std::fprintf(stderr, "\n(%s)", notice.c_str());
  return Reply{r.text,
               r.prompt_tokens,
               reused() - reused_before,
               r.tokens.size(),
               r.first_token_seconds,
               r.finish_reason == "abort",
               r.finish_reason == "length",
               e.engine->engine().stats().context_shifts - shifts_before};
}

ChatTemplate load_template(const ChatFlags& f, const gguf::GgufFile& file) {
  if (!f.chat_template_file.empty())
    return ChatTemplate::parse(read_text_file(f.chat_template_file));
  if (const auto source = chat_template_source(file)) return ChatTemplate::parse(*source);
  std::fprintf(stderr, "(the model has no chat template: using the plain \"Role: content\" one)\n");
  return ChatTemplate::fallback();
}

constexpr const char* kChatHelp =
    "  /help        this list\n"
    "  /reset       forget the conversation (the system message stays)\n"
    "  /save FILE   write the conversation as JSON chat messages\n"
    "  /load FILE   continue a conversation saved with /save\n"
    "  /exit, /bye  quit (or Ctrl-D)\n"
    "  //text       send \"/text\" to the model\n"
    "A line ending in \\ goes on with the next; \"\"\" opens a block of lines up to the next "
    "\"\"\".\n"
    "Ctrl-C stops a reply and keeps the conversation; Up/Down recall earlier lines.\n";

// A line starting with '/': runs the command; false for /exit.
bool run_chat_command(const std::string& line, Conversation& conversation) {
  const size_t space = line.find(' ');
  const std::string name = line.substr(0, space);
  const std::string arg = space == std::string::npos ? "" : line.substr(space + 1);
  if (name == "/exit" || name == "/quit" || name == "/bye") return false;
  if (name == "/help") {
    std::fputs(kChatHelp, stderr);
  } else if (name == "/reset") {
    conversation.reset();
    std::fprintf(stderr, "(conversation cleared)\n");
  } else if ((name == "/save" || name == "/load") && arg.empty()) {
    std::fprintf(stderr, "(%s needs a file name: %s FILE)\n", name.c_str(), name.c_str());
  } else if (name == "/save") {
    std::ofstream out(arg);
    out << conversation.to_json().dump(2) << "\n";
    if (!out) {
      std::fprintf(stderr, "(cannot write %s)\n", arg.c_str());
    } else {
      std::fprintf(stderr, "(saved %zu messages to %s)\n", conversation.size(), arg.c_str());
    }
  } else if (name == "/load") {
    try {
      conversation.load(nlohmann::ordered_json::parse(read_text_file(arg)), arg);
      std::fprintf(stderr, "(loaded %zu messages from %s)\n", conversation.size(), arg.c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "(not loaded: %s)\n", e.what());
    }
  } else {
    std::fprintf(stderr, "(unknown command %s; /help lists them, //text sends /text)\n",
                 name.c_str());
  }
  return true;
}

// Continues the session in `file` if it exists.
void resume_session(const std::string& file, const std::string& kv_dir,
                    Conversation& conversation) {
  const std::optional<ChatSession> s = load_chat_session(file);
  if (!s) {
    std::fprintf(stderr, "(new session %s; K/V in %s)\n", file.c_str(), kv_dir.c_str());
    return;
  }
  conversation.load(s->messages, file);
  const std::vector<int32_t> tokens = conversation.history_tokens();
  std::fprintf(stderr, "(resumed %zu messages, %zu tokens, from %s; K/V from %s)\n",
               conversation.size(), tokens.size(), file.c_str(), kv_dir.c_str());
  if (tokens != s->tokens)
    std::fprintf(stderr,
                 "(the chat template renders this session differently now: what differs is "
                 "recomputed)\n");
}

void save_session(const std::string& file, const Conversation& conversation) {
  try {
    save_chat_session(file, {conversation.to_json(), conversation.history_tokens()});
    std::fprintf(stderr, "(session saved to %s)\n", file.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "(session not saved: %s)\n", e.what());
  }
}

// How long prompts and replies may be in a context of `context` tokens.
struct ReplyBudget {
  int context = 0;
  int room = 0;         // the history is trimmed until the prompt leaves this much for the reply
  int reply_limit = 0;  // -n (or the whole context for -n -1)
  bool shifts = false;  // --context-shift: a reply goes past the context's end
  std::optional<int> shifting_limit;  // then -n, or none for -n -1
};

ReplyBudget reply_budget(const ChatFlags& f, const CommandEngine& engine) {
  ReplyBudget b;
  b.context = engine.engine->engine().max_sequence_tokens();
  b.shifts = f.context_shift;
  if (f.n_predict > 0) b.shifting_limit = f.n_predict;
  b.reply_limit = f.n_predict > 0 ? f.n_predict : b.context;
  // Static: prompts stay in max_prompt_len. Paged: a long -n must not trim the whole history
  // away, so at most half the context is kept free; a reply may still run to the context's end.
  b.room = engine.slots ? engine.slots->config().min_response_len
                        : std::min(b.reply_limit, b.context / 2);
  return b;
}

// One user message through the model; the reply joins the conversation.
void chat_turn(const std::string& message, const CommandEngine& engine, const ReplyBudget& b,
               SamplingParams p, Conversation& conversation, InterruptLatch& ctrl_c) {
  const std::optional<std::vector<int32_t>> prompt =
      conversation.prompt_with(message, b.context, b.room);
  if (!prompt) return;
  const int left = b.context - engine.engine->engine().prompt_tokens_kept(int(prompt->size()));
  p.max_tokens = b.shifts ? b.shifting_limit : std::min(b.reply_limit, left);
  const std::optional<Reply> reply = turn(engine, *prompt, p, ctrl_c);
  if (!reply) return;
  conversation.add_reply(reply->text);
  if (reply->stopped) {
    std::fprintf(stderr, "\n(stopped; the reply so far stays in the conversation)");
    return;
  }
  if (reply->length_cut && left < b.reply_limit && !b.shifts)
    std::fprintf(stderr, "\n(reply cut at the end of the %d-token context)", b.context);
  if (reply->shifts > 0)
    std::fprintf(stderr,
                 "\n(context shifted %lld times during the reply: its oldest tokens "
                 "after the first ones were dropped)",
                 static_cast<long long>(reply->shifts));
  std::fprintf(
      stderr,
      "\n(%d prompt tokens, %lld reused from earlier turns, %zu generated, first token %.1f ms)",
      reply->prompt_tokens, static_cast<long long>(reply->reused), reply->generated,
      reply->ttft_seconds * 1e3);
}

void chat(const ChatFlags& flags) {
  ChatFlags f = flags;
  if (!f.session.empty() && f.disk.dir.empty()) f.disk.dir = session_kv_dir(f.session);
  SamplingParams params = f.sampling.to_params(f.n_predict);
  const auto [path, model, tokenizer] = load_model(f);
  f.sampling.bind_grammar(params, tokenizer);
  Conversation conversation(f.system, tokenizer, load_template(f, model->file()));
  if (!f.session.empty()) resume_session(f.session, f.disk.dir, conversation);
  const CommandEngine engine =
      make_chat_engine(f, *model, tokenizer, int(conversation.history_tokens().size()));
  const ReplyBudget budget = reply_budget(f, engine);
  std::fprintf(stderr,
               "chatting with %s (context %d tokens); /help lists commands, Ctrl-C stops a "
               "reply, Ctrl-D or /bye quits\n",
               path.filename().c_str(), budget.context);
  LineEditor editor;
  InterruptLatch ctrl_c;
  while (true) {
    std::fputc('\n', stdout);
    std::fflush(stdout);
    std::optional<std::string> line = read_message(editor, ctrl_c);
    if (!line) break;
    if (ctrl_c.take() || line->empty()) continue;  // Ctrl-C at the prompt drops the line
    editor.remember(*line);
    if (line->rfind("//", 0) == 0) {
      line->erase(0, 1);
    } else if ((*line)[0] == '/') {
      if (!run_chat_command(*line, conversation)) break;
      continue;
    }
    chat_turn(*line, engine, budget, params, conversation, ctrl_c);
  }
  std::fputc('\n', stdout);
  if (!f.session.empty()) save_session(f.session, conversation);
}

void declare_flags(CLI::App& sub, ChatFlags& f) {
  sub.add_option("--system,--system-prompt", f.system, "system message (llama.cpp's -sys)");
  sub.add_option("--chat-template", f.chat_template_file,
                 "Jinja chat template file (default: the model's)");
  add_n_predict_flag(sub, f.n_predict,
                     "largest reply in tokens (the context's end also ends a reply)");
  f.add_threads_flag(sub);
  f.add_tp_flag(sub);
  add_ctx_size_flag(sub, f.ctx, "context size; 0 = the model's");
  f.kv.add_to(sub);
  f.disk.add_to(sub);
  sub.add_option("--session", f.session,
                 "keep the conversation in FILE: resumed at start, saved on exit; its K/V "
                 "persists in --kv-disk (default FILE.kv)");
  sub.add_flag("--context-shift", f.context_shift,
               "a reply that reaches the end of the context goes on: the system message "
               "stays, the older half of the rest is dropped (K re-rotated in place)");
  f.sampling.add_to(sub);
  f.static_mode.add_to(sub);
}

}  // namespace

void declare_chat_command(CLI::App& sub) {
  declare_model_command<ChatFlags>(sub, chat, declare_flags);
}

}  // namespace kvforge::cli
