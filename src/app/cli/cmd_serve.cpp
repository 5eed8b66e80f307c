// kvforge serve: an OpenAI-compatible HTTP server on the batching engine, or
// with --static/--plan on the static pipeline's batch slots (the Engine's static slots).
// One engine-loop thread owns the engine; HTTP threads talk to it through
// queues (app/server/engine_loop.h). SIGINT/SIGTERM stop it cleanly.
#include <malloc.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "app/chat/chat_template.h"
#include "app/cli/cli_common.h"
#include "app/cli/command_engine.h"
#include "app/cli/commands.h"
#include "app/cli/engine_flags.h"
#include "app/cli/flag_checks.h"
#include "app/cli/serve_responses.h"
#include "app/cli/static_flags.h"
#include "app/cli/subcommand.h"
#include "app/embedding/embedder.h"
#include "app/server/completion_service.h"
#include "app/server/embedding_service.h"
#include "app/server/engine_loop.h"
#include "app/server/exit_watchdog.h"
#include "app/server/http_server.h"
#include "app/server/server_metrics.h"
#include "app/text_engine.h"
#include "app/tools/quantize_recipe.h"
#include "model/model.h"

namespace kvforge::cli {
namespace {

struct ServeFlags : ModelFlags {
  server::HttpServerOptions http;
  EngineFlags engine;  // the paged engine's pool, scheduler and KV format
  int max_queue = 256;
  int max_n = 8;
  std::string chat_template_file;
  StaticFlags static_mode;
  std::vector<std::string> aliases;  // the model ids, instead of the file name
  bool any_model_name = false;
  std::string log_format = "text";
  bool no_access_log = false;
  bool truncate = false;  // chat conversations drop their oldest turns by default
  std::string pooling;    // embeddings: empty = the file's <arch>.pooling_type, else last
  int embd_normalize = kEmbdNormEuclidean;  // embeddings' scaling (normalize_embedding)
  std::string reasoning_format = "auto";    // as llama-server's default (reasoning_reader.h)
  ResponseStoreFlags responses;
};

ChatTemplate load_chat_template(const ServeFlags& f, const gguf::GgufFile& file) {
  if (!f.chat_template_file.empty()) {
    try {
      return ChatTemplate::parse(read_text_file(f.chat_template_file));
    } catch (const TemplateError& e) {
      throw std::runtime_error(f.chat_template_file + ": " + e.what());
    }
  }
  const std::optional<std::string> source = chat_template_source(file);
  if (!source) {
    std::fprintf(stderr,
                 "kvforge serve: the model has no chat template; chat uses the plain "
                 "\"Role: content\" fallback\n");
    return ChatTemplate::fallback();
  }
  try {
    return ChatTemplate::parse(*source);
  } catch (const TemplateError& e) {
    throw std::runtime_error(std::string("the model's chat template (tokenizer.chat_template) "
                                         "cannot be rendered: ") +
                             e.what() + "; pass --chat-template FILE to use another");
  }
}

// Renders a short conversation at load (ChatTemplate::check_renders): a
// template that blows its budget even then is refused, naming where it came from.
void test_render(const ChatTemplate& t, const std::string& origin) {
  try {
    t.check_renders();
  } catch (const TemplateBudgetExceeded& e) {
    throw std::runtime_error(origin + ": the chat template is refused: " + e.what());
  } catch (const TemplateError& e) {
    std::fprintf(stderr, "kvforge serve: warning: %s: test render failed: %s\n", origin.c_str(),
                 e.what());
  }
}

// The ids /v1/models reports (--alias, else the file name), then the
// other names a request's "model" may use.
std::vector<std::string> model_ids(const std::filesystem::path& path, const Model& model,
                                   const std::vector<std::string>& aliases) {
  std::vector<std::string> ids;
  std::vector<std::string> names = aliases;
  names.push_back(path.stem().string());
  names.push_back(model.file().get_string_or("general.name", ""));
  for (const std::string& id : names)
    if (!id.empty() && std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  return ids;
}

std::string describe_paged(const ServeFlags& f, const CommandEngine& chosen) {
  const Engine& e = chosen.engine->engine();
  const int64_t pool_tokens = int64_t(e.n_blocks()) * e.block_size();
  const int ctx = e.max_sequence_tokens();
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%d threads, KV pool %d blocks of %d (%s, %s), up to %d sequences; each "
                "sequence gets the whole context of %d tokens (llama-server would split -c "
                "across its -np slots), the pool holds %lld tokens: %lld sequences at full "
                "context",
                chosen.pool->size(), e.n_blocks(), e.block_size(), f.engine.kv.describe().c_str(),
                human_bytes(static_cast<double>(e.kv_pool_bytes())).c_str(), e.options().max_seqs,
                ctx, static_cast<long long>(pool_tokens),
                static_cast<long long>(pool_tokens / std::max(ctx, 1)));
  return buf;
}

// Before any thread starts: every thread inherits the mask, and the waiter
// of serve_until_signal is the only one that receives SIGINT/SIGTERM (the set
// returned). A vanished client must give EPIPE on write, not kill the process.
sigset_t prepare_process_for_serving() {
  std::signal(SIGPIPE, SIG_IGN);
  // Request bodies and their copies (up to --max-body each, on many threads)
  // are mapped and unmapped on their own rather than left in glibc's arenas:
  // by default the threshold grows to the largest freed block, so a burst of
  // large requests, even refused ones, would leave their memory resident
  // (docs/bench/design-measurements.md).
  mallopt(M_MMAP_THRESHOLD, 256 << 10);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  return stop_signals;
}

// Serves on `http`'s bound `port` until SIGINT/SIGTERM (or a failed socket); a signal
// starts the exit watchdog and stops the server.
void serve_until_signal(server::HttpServer& http, const sigset_t& stop_signals,
                        const std::string& host, int port) {
  std::thread signal_waiter([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    if (sig != 0) {
      server::start_exit_watchdog(std::chrono::milliseconds(4500));
      http.stop();
    }
  });
  std::fprintf(stderr, "kvforge serve: listening on http://%s:%d\n", host.c_str(), port);
  std::fflush(stderr);
  http.serve();
  // serve() returned: a signal arrived (or the socket failed). Wake the waiter if needed.
  pthread_kill(signal_waiter.native_handle(), SIGTERM);
  signal_waiter.join();
}

server::RequestLimits request_limits(const ServeFlags& f, std::vector<std::string> ids,
                                     int max_sequence_tokens, const StaticRunner* slots) {
  server::RequestLimits limits;
  limits.model_ids = std::move(ids);
  limits.listed_models = std::max<size_t>(f.aliases.size(), 1);
  limits.any_model_name = f.any_model_name;
  limits.max_n = f.max_n;
  limits.max_tokens_limit = max_sequence_tokens;
  limits.context_shift = f.engine.options.context_shift;
  limits.max_prompt_bytes = f.http.max_body_bytes;
  limits.truncate_conversations = f.truncate;
  limits.reasoning_format = parse_reasoning_format(f.reasoning_format);
  if (slots) {
    limits.max_prompt_tokens = slots->config().max_prompt_len;
    limits.truncate_long_prompts = f.static_mode.overflow_policy() == OverflowPolicy::TruncateLeft;
  }
  return limits;
}

// What GET /props and Ollama's model routes say of the file.
server::ServerProps served_props(const std::filesystem::path& path, const Model& model,
                                 size_t max_running) {
  const gguf::GgufFile& file = model.file();
  const uint32_t file_type =
      file.get_u32_or("general.file_type", std::numeric_limits<uint32_t>::max());
  return {path.string(), static_cast<int>(max_running),
          file.get_string_or("general.architecture", ""), model.n_params(),
          std::string(file_type_name(file_type))};
}

void serve(const ServeFlags& f) {
  const sigset_t stop_signals = prepare_process_for_serving();
  auto [path, model, tokenizer] = load_model(f);
  check_context_size(model->config(), f.engine.options.n_ctx, "-c/--ctx-size");
  ChatTemplate chat_template = load_chat_template(f, model->file());
  test_render(chat_template, f.chat_template_file.empty()
                                 ? path.string() + " (tokenizer.chat_template)"
                                 : f.chat_template_file);
  // The static engine brings a pool of its plans' thread count. Its slots keep
  // their K/V between requests only for slot save and restore (--slot-save-path).
  const CommandEngine chosen =
      f.static_mode.active()
          ? make_static_engine(f.static_mode, *model, tokenizer, f.engine.kv.format(), f.threads,
                               /*reuse_slots=*/!f.http.slot_save_path.empty(), f.engine.disk,
                               {f.engine.options.context_shift, f.engine.options.n_keep})
          : make_paged_engine(*model, tokenizer, f.threads, f.engine.to_options());
  TextEngine& engine = *chosen.engine;
  const StaticRunner* slots = chosen.slots;
  const std::string engine_line = slots ? chosen.describe_static() : describe_paged(f, chosen);
  const size_t max_running =
      static_cast<size_t>(slots ? slots->slots() : f.engine.options.max_seqs);
  const int max_sequence_tokens = engine.engine().max_sequence_tokens();

  server::ServerMetrics metrics;
  metrics.publish_engine_stats(engine.engine().stats());
  // A tensor-parallel run that lost a rank answers 503 and stops as on SIGTERM,
  // a moment later: the HTTP threads first write the 503s the loop just gave.
  server::EngineLoop loop(engine, metrics, max_running + static_cast<size_t>(f.max_queue), [] {
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      ::kill(::getpid(), SIGTERM);
    }).detach();
  });
  const server::RequestLimits limits =
      request_limits(f, model_ids(path, *model, f.aliases), max_sequence_tokens, slots);
  server::CompletionService service(tokenizer, chat_template, limits, max_sequence_tokens, loop);
  server::HttpServerOptions http_options = f.http;
  http_options.log_format = server::parse_log_format(f.log_format);
  http_options.access_log = !f.no_access_log;
  http_options.props = served_props(path, *model, max_running);
  const ServedResponses responses(f.responses, f.engine.disk.dir, *model);
  http_options.responses = responses.store;
  server::HttpServer http(http_options, service, metrics);
  const Embedder embedder(
      *model, *chosen.pool,
      f.pooling.empty() ? model_pooling(*model, Pooling::Last) : *pooling_from_name(f.pooling),
      f.embd_normalize);
  server::EmbeddingService embeddings(embedder, service, max_sequence_tokens);
  http.serve_embeddings(embeddings);
  const int port = http.bind();
  std::fprintf(stderr, "kvforge serve: model %s (%s); %s; embeddings: %s pooling; %s\n",
               limits.model_ids[0].c_str(), path.c_str(), engine_line.c_str(),
               pooling_name(embedder.pooling()), responses.describe().c_str());
  serve_until_signal(http, stop_signals, f.http.host, port);
  loop.stop();
  responses.save();
  std::fprintf(stderr, "kvforge serve: stopped\n");
  if (const std::string why = loop.broken(); !why.empty()) throw std::runtime_error(why);
}

// Conversations and replies longer than the context.
void declare_long_conversation_flags(CLI::App& sub, ServeFlags& f) {
  sub.add_flag("--context-shift", f.engine.options.context_shift,
               "a reply that reaches the end of the context keeps the first --keep tokens, "
               "drops the older half of the rest and goes on (per request: \"context_shift\"); "
               "a request's max_tokens may exceed the context (without one, a reply still "
               "ends there)");
  sub.add_option("--keep", f.engine.options.n_keep,
                 "tokens of each prompt a context shift keeps (whole KV blocks)")
      ->check(at_least(0))
      ->capture_default_str();
  sub.add_flag("--truncate", f.truncate,
               "a chat conversation longer than the context drops its oldest turns (never the "
               "system message) instead of a 400, as a request's \"truncation\": \"auto\"");
}

// What one client may ask of the server: queue, samples, connections, bytes, seconds.
void declare_limit_flags(CLI::App& sub, ServeFlags& f) {
  sub.add_option("--max-queue", f.max_queue,
                 "requests waiting beyond --max-seqs (static: --static-slots) before 429")
      ->check(at_least(0))
      ->capture_default_str();
  sub.add_option("--max-n", f.max_n, "largest 'n' (parallel samples) per request")
      ->check(at_least(1))
      ->capture_default_str();
  sub.add_option("--http-threads", f.http.threads, "HTTP connections served at once")
      ->check(at_least(1))
      ->capture_default_str();
  sub.add_option("--max-body", f.http.max_body_bytes, "largest request body in bytes (413 beyond)")
      ->check(at_least(1))
      ->capture_default_str();
  sub.add_option("--header-timeout", f.http.header_timeout_s,
                 "seconds for a request's line and headers to arrive (408 beyond)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub.add_option("--body-timeout", f.http.body_timeout_s,
                 "seconds for a body of --max-body bytes to arrive; a smaller body gets its "
                 "share, at least --header-timeout (408 beyond)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

void declare_flags(CLI::App& sub, ServeFlags& f) {
  sub.add_option("--host", f.http.host, "address to listen on")->capture_default_str();
  sub.add_option("--port", f.http.port, "port; 0 = any free port")
      ->check(tcp_port())
      ->capture_default_str();
  sub.add_option("--api-key", f.http.api_key,
                 "require 'Authorization: Bearer KEY' on /v1/* and /metrics");
  sub.add_flag("--metrics-public", f.http.metrics_public, "serve /metrics without the API key");
  sub.add_option("--cors-origin", f.http.cors_origin,
                 "allow browser apps from ORIGIN ('*' = any) to call the server (default: none)");
  sub.add_option(
      "--slot-save-path", f.http.slot_save_path,
      "directory of llama-server's slot save/restore files (POST /slots/ID?action=save)");
  sub.add_option("--alias", f.aliases,
                 "model id in /v1/models and responses (default: file name); repeat it or "
                 "separate with commas for several")
      ->delimiter(',')
      ->allow_extra_args(false);
  sub.add_option("--pooling", f.pooling,
                 "embeddings' pooling: mean, cls or last (default: the model file's "
                 "<arch>.pooling_type, else last, the final-normed state of the last token)")
      ->check(CLI::IsMember({"mean", "cls", "last"}));
  sub.add_option("--embd-normalize", f.embd_normalize,
                 "embeddings' normalisation, as llama.cpp numbers it: -1 none, 0 max-abs to "
                 "int16 range, 1 taxicab, 2 Euclidean, p > 2 p-norm")
      ->capture_default_str()
      ->check(CLI::Range(-1, 1000));
  sub.add_flag("--any-model-name", f.any_model_name,
               "accept any 'model' in requests (for apps with a hard-coded model id)");
  sub.add_option("--log-format", f.log_format,
                 "access log, one line per request on stderr: text or json")
      ->capture_default_str();
  sub.add_flag("--no-access-log", f.no_access_log, "do not log each request");
  f.add_tp_flag(sub);
  f.add_threads_flag(sub, "compute threads");
  f.engine.add_to(sub);
  declare_limit_flags(sub, f);
  sub.add_option("--chat-template", f.chat_template_file,
                 "Jinja chat template file (default: the model's tokenizer.chat_template)");
  sub.add_option("--reasoning-format", f.reasoning_format,
                 "a thinking model's thoughts (<think>...</think>, gpt-oss's analysis): "
                 "deepseek or auto = message.reasoning_content; deepseek-legacy = that and "
                 "the tags kept in content; none = left in content")
      ->check(CLI::IsMember({"none", "deepseek", "deepseek-legacy", "auto"}))
      ->capture_default_str();
  declare_long_conversation_flags(sub, f);
  f.responses.add_to(sub);
  f.static_mode.add_to(sub);
}

}  // namespace

void declare_serve_command(CLI::App& sub) {
  declare_model_command<ServeFlags>(sub, serve, declare_flags);
}

}  // namespace kvforge::cli
