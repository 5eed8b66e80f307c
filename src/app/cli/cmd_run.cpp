// kvforge run: generate a continuation of a prompt, streaming text, then
// report per-phase timing (prefill = time to first token, decode per token).
#include <cstdio>
#include <memory>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/static_flags.h"
#include "app/engine_generation.h"
#include "app/generation.h"
#include "app/tokenizer/tokenizer.h"
#include "engine/sequence_runner.h"
#include "model/model.h"

namespace kvforge::cli {
namespace {

struct RunFlags {
  std::string model;
  std::string prompt = "In the beginning";
  std::string prompt_file;
  int n_predict = 128;
  int threads = default_threads();
  int ctx = 0;
  int batch = 512;
  KvTypeFlags kv;
  bool no_bos = false;
  bool quiet = false;
  SamplingFlags sampling;
  StaticFlags static_flags;  // --static / --plan: the static pipeline
};

void print_timing(const GenerationResult& r) {
  const double pf_ms = r.prefill_seconds * 1e3;
  std::fprintf(
      stderr,
      "\n\nprompt    %5d tokens  prefill %9.2f ms  %9.2f tok/s  (time to first token %.2f ms)\n",
      r.prompt_tokens, pf_ms, r.prompt_tokens / r.prefill_seconds, r.first_token_seconds * 1e3);
  if (r.decode_steps > 0) {
    const double per = r.decode_seconds / r.decode_steps;
    std::fprintf(stderr, "decode    %5d tokens  %7.2f ms/token  %9.2f tok/s\n", r.decode_steps,
                 per * 1e3, 1.0 / per);
  }
  std::fprintf(stderr, "generated %5zu tokens  finish: %s  seed: %llu\n", r.tokens.size(),
               r.finish_reason.c_str(), static_cast<unsigned long long>(r.seed));
}

void run(const RunFlags& f) {
  const SamplingParams params = f.sampling.to_params(f.n_predict);
  const auto path = resolve_model_path(f.model);
  const auto model = Model::load(path);
  const Tokenizer tokenizer = Tokenizer::from_gguf(model->file());
  const std::string prompt = f.prompt_file.empty() ? f.prompt : read_text_file(f.prompt_file);
  const std::vector<int32_t> tokens =
      tokenizer.encode(prompt, tokenizer.add_bos() && !f.no_bos, /*parse_special=*/true);
  if (f.static_flags.active())
    return run_static(f.static_flags, *model, tokenizer, prompt, tokens, params, f.threads,
                      f.kv.format(), f.quiet);
  ThreadPool pool(f.threads);
  const int ctx = f.ctx > 0 ? f.ctx : std::min(model->config().n_ctx_train, 4096);
  // One sequence through the batching engine: a pool of exactly one context.
  EngineOptions engine_options;
  engine_options.n_ctx = ctx;
  engine_options.kv_blocks = (ctx + engine_options.block_size - 1) / engine_options.block_size;
  engine_options.max_seqs = 1;
  engine_options.max_batched_tokens = f.batch;
  engine_options.kv_format = f.kv.format();
  TextEngine engine(*model, tokenizer, pool, engine_options);
  if (!f.quiet)
    std::fprintf(stderr, "model %s: %s, %d layers, n_embd %d, %d threads, ctx %d, KV %s\n",
                 path.filename().c_str(), model->config().arch_name.c_str(),
                 model->config().n_layer, model->config().n_embd, pool.size(), ctx,
                 f.kv.describe().c_str());
  std::fputs(prompt.c_str(), stdout);
  std::fflush(stdout);
  const GenerationResult r = generate_with_engine(engine, tokens, params, [](std::string_view s) {
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
  });
  if (!f.quiet)
    print_timing(r);
  else
    std::fputc('\n', stdout);
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* sub = app.add_subcommand("run", "generate text from a prompt, with timing");
  sub->add_option("-m,--model", flags->model, "GGUF model (default: the model in models/)");
  sub->add_option("-p,--prompt", flags->prompt, "prompt text")->capture_default_str();
  sub->add_option("-f,--file", flags->prompt_file, "read the prompt from a file");
  sub->add_option("-n,--n-predict", flags->n_predict, "tokens to generate; -1 = until done")
      ->capture_default_str();
  sub->add_option("-t,--threads", flags->threads, "threads")->capture_default_str();
  sub->add_option("-c,--ctx-size", flags->ctx, "context size; 0 = model's, at most 4096")
      ->capture_default_str();
  sub->add_option("-b,--batch-size", flags->batch, "prompt tokens per forward pass")
      ->capture_default_str();
  flags->kv.add_to(*sub);
  sub->add_flag("--no-bos", flags->no_bos, "do not prepend BOS even if the model wants it");
  sub->add_flag("-q,--quiet", flags->quiet, "print only the text");
  flags->sampling.add_to(*sub);
  flags->static_flags.add_to(*sub);
  sub->callback([flags] { run(*flags); });
}

}  // namespace kvforge::cli
