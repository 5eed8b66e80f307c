// kvforge run: generate a continuation of a prompt, streaming text, then
// report per-phase timing (prefill = time to first token, decode per token).
// One request on the paged batching engine, or with --static/--plan on the
// static pipeline (then also the generate variants its steps used).
#include <cstdio>
#include <memory>

#include "app/cli/cli_common.h"
#include "app/cli/command_engine.h"
#include "app/cli/commands.h"
#include "app/cli/engine_flags.h"
#include "app/cli/flag_checks.h"
#include "app/cli/line_editor.h"
#include "app/cli/static_flags.h"
#include "app/cli/subcommand.h"
#include "app/generation.h"
#include "app/tokenizer/tokenizer.h"
#include "model/model.h"

namespace kvforge::cli {
namespace {

struct RunFlags : ModelFlags {
  std::string prompt = "In the beginning";
  std::string prompt_file;
  int n_predict = 128;
  int ctx = 0;
  int batch = 512;
  KvTypeFlags kv;
  KvDiskFlags disk;
  bool no_bos = false;
  bool quiet = false;
  bool context_shift = false;
  int keep = 1;  // tokens of the prompt a context shift keeps; -1 = all of it
  SamplingFlags sampling;
  StaticFlags static_flags;  // --static / --plan: the static pipeline
};

// " 256:12 512:3": generate steps per variant KV length, the variants used only.
std::string variants_used(const StaticRunner& runner) {
  std::string out;
  const std::vector<int32_t>& lens = runner.config().generate_variants;
  for (size_t i = 0; i < lens.size(); ++i)
    if (runner.steps_per_variant()[i] > 0)
      out += " " + std::to_string(lens[i]) + ":" + std::to_string(runner.steps_per_variant()[i]);
  return out.empty() ? " (none)" : out;
}

void print_timing(const GenerationResult& r, const StaticRunner* slots) {
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
  if (slots)
    std::fprintf(stderr, "variants  steps per KV length%s\n", variants_used(*slots).c_str());
  std::fprintf(stderr, "generated %5zu tokens  finish: %s  seed: %llu\n", r.tokens.size(),
               r.finish_reason == "abort" ? "interrupted (Ctrl-C)" : r.finish_reason.c_str(),
               static_cast<unsigned long long>(r.seed));
}

// The context shifts of the run and the KV pool that stayed the same throughout.
void print_shifts(const Engine& e) {
  const EngineStats s = e.stats();
  std::fprintf(stderr, "context   %5lld shifts  KV pool %d blocks x %d tokens (%s), peak %d used\n",
               static_cast<long long>(s.context_shifts), e.n_blocks(), e.block_size(),
               human_bytes(double(e.kv_pool_bytes())).c_str(), int(s.kv_blocks_used_peak));
}

// One sequence through the batching engine: a pool of exactly one context.
EngineOptions paged_options(const RunFlags& f, int ctx, int prompt_tokens) {
  EngineOptions o;
  o.context_shift = f.context_shift;
  o.n_keep = f.keep < 0 ? prompt_tokens : f.keep;
  o.n_ctx = ctx;
  o.kv_blocks = (ctx + o.block_size - 1) / o.block_size;
  o.max_seqs = 1;
  o.max_batched_tokens = f.batch;
  o.kv_format = f.kv.format();
  f.disk.apply(o);
  // A hybrid model's prefix on disk needs the recurrent-state snapshot after it.
  if (!f.disk.dir.empty()) o.state_snapshots = 1;
  return o;
}

CommandEngine make_engine(const RunFlags& f, const Model& model, const Tokenizer& tokenizer,
                          const std::filesystem::path& path, int prompt_tokens) {
  if (f.static_flags.active()) {
    CommandEngine e = make_static_engine(f.static_flags, model, tokenizer, f.kv.format(), f.threads,
                                         /*reuse_slots=*/false, f.disk,
                                         {f.context_shift, f.keep < 0 ? prompt_tokens : f.keep});
    if (!f.quiet) std::fprintf(stderr, "%s\n", e.describe_static().c_str());
    return e;
  }
  const int ctx = f.ctx > 0 ? f.ctx : std::min(model.config().n_ctx_train, 4096);
  check_context_size(model.config(), ctx, "-c/--ctx-size");
  CommandEngine e =
      make_paged_engine(model, tokenizer, f.threads, paged_options(f, ctx, prompt_tokens));
  if (!f.quiet)
    std::fprintf(stderr, "model %s: %s, %d layers, n_embd %d, %d threads, ctx %d, KV %s%s\n",
                 path.filename().c_str(), model.config().arch_name.c_str(), model.config().n_layer,
                 model.config().n_embd, e.pool->size(), ctx, f.kv.describe().c_str(),
                 describe_tp(model).c_str());
  return e;
}

void run(const RunFlags& f) {
  SamplingParams params = f.sampling.to_params(f.n_predict);
  const auto [path, model, tokenizer] = load_model(f);
  f.sampling.bind_grammar(params, tokenizer);
  const std::string prompt = f.prompt_file.empty() ? f.prompt : read_text_file(f.prompt_file);
  const std::vector<int32_t> tokens =
      tokenizer.encode(prompt, tokenizer.add_bos() && !f.no_bos, /*parse_special=*/true);
  // Ranks other than 0 follow rank 0's engine inside make_engine and end there.
  const CommandEngine engine = make_engine(f, *model, tokenizer, path, int(tokens.size()));
  std::fputs(prompt.c_str(), stdout);
  std::fflush(stdout);
  // Ctrl-C ends the generation as llama.cpp's does: the text so far, then the timing.
  InterruptLatch ctrl_c;
  const GenerationResult r = generate(
      *engine.engine, tokens, params,
      [](std::string_view s) {
        std::fwrite(s.data(), 1, s.size(), stdout);
        std::fflush(stdout);
      },
      [&ctrl_c] { return ctrl_c.take(); });
  const std::string notice = engine.notice(r);
  if (!notice.empty()) std::fprintf(stderr, "\nnote: %s", notice.c_str());
  if (!f.quiet) {
    print_timing(r, engine.slots);
    if (f.context_shift) print_shifts(engine.engine->engine());
    if (const std::string tiers = describe_kv_tiers(engine.engine->engine().stats());
        !tiers.empty())
      std::fprintf(stderr, "%s\n", tiers.c_str());
  } else
    std::fputc('\n', stdout);
}

void declare_flags(CLI::App& sub, RunFlags& flags) {
  sub.add_option("-p,--prompt", flags.prompt, "prompt text")->capture_default_str();
  sub.add_option("-f,--file", flags.prompt_file, "read the prompt from a file");
  add_n_predict_flag(sub, flags.n_predict, "tokens to generate");
  flags.add_threads_flag(sub);
  add_ctx_size_flag(sub, flags.ctx, "context size; 0 = model's, at most 4096");
  add_batch_size_flag(sub, flags.batch, "prompt tokens per forward pass");
  flags.add_tp_flag(sub);
  flags.kv.add_to(sub);
  flags.disk.add_to(sub);
  sub.add_flag("--no-bos", flags.no_bos, "do not prepend BOS even if the model wants it");
  sub.add_flag("-q,--quiet", flags.quiet, "print only the text");
  sub.add_flag("--context-shift", flags.context_shift,
               "at the end of the context keep the first --keep tokens, drop the older half of "
               "the rest and go on (K re-rotated in place, nothing recomputed)");
  sub.add_option("--keep", flags.keep,
                 "tokens of the prompt a context shift keeps (whole KV blocks); -1 = all")
      ->check(at_least(-1, "-1 = the whole prompt"))
      ->capture_default_str();
  flags.sampling.add_to(sub);
  flags.static_flags.add_to(sub);
}

}  // namespace

void declare_run_command(CLI::App& sub) {
  declare_model_command<RunFlags>(sub, run, declare_flags);
}

}  // namespace kvforge::cli
