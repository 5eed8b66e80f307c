// kvforge kv-eval: how much a KV storage format changes the model's output.
#include <cstdio>
#include <memory>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/subcommand.h"
#include "app/tokenizer/tokenizer.h"
#include "app/tools/kv_eval.h"
#include "model/model.h"

namespace kvforge::cli {
namespace {

struct KvEvalFlags : ModelFlags {
  std::string file;
  KvTypeFlags kv;
  int ctx = 0;
  int batch = 512;
  int max_tokens = 0;
  bool no_per_head = false;
};

void print_grid(const char* what, const std::vector<std::vector<double>>& g) {
  std::printf("%s cosine per layer (columns: KV heads)\n", what);
  for (size_t l = 0; l < g.size(); ++l) {
    std::printf("  layer %2zu", l);
    for (double x : g[l]) std::printf("  %.6f", x);
    std::printf("\n");
  }
}

void kv_eval(const KvEvalFlags& f) {
  const KvFormat format = f.kv.format();
  const auto [path, model, tokenizer] = load_model(f);
  std::vector<int32_t> tokens =
      tokenizer.encode(read_text_file(f.file), tokenizer.add_bos(), /*parse_special=*/false);
  if (f.max_tokens > 0 && tokens.size() > size_t(f.max_tokens)) tokens.resize(size_t(f.max_tokens));
  ThreadPool pool(f.threads);
  const KvEvalResult r = evaluate_kv_format(
      *model, pool, tokens, {.candidate = format, .window = f.ctx, .max_batch = f.batch});
  std::printf(
      "kv-eval: %s vs f32 KV, %lld tokens, %d windows of %d, %lld positions compared (%.1f s)\n",
      f.kv.describe().c_str(), static_cast<long long>(r.n_tokens), r.n_windows, r.window,
      static_cast<long long>(r.n_predicted), r.seconds);
  std::printf(
      "KV bytes per token: %llu (f32) -> %llu (%s), %.3fx of f32, %.3fx of f16\n",
      static_cast<unsigned long long>(r.kv_bytes_per_token_reference),
      static_cast<unsigned long long>(r.kv_bytes_per_token_candidate), f.kv.describe().c_str(),
      double(r.kv_bytes_per_token_candidate) / double(r.kv_bytes_per_token_reference),
      2.0 * double(r.kv_bytes_per_token_candidate) / double(r.kv_bytes_per_token_reference));
  if (!f.no_per_head) {
    print_grid("K (candidate run vs f32 run)", r.k_cosine);
    print_grid("V (candidate run vs f32 run)", r.v_cosine);
    print_grid("K (quantization alone)", r.k_cosine_quant_only);
    print_grid("V (quantization alone)", r.v_cosine_quant_only);
  }
  std::printf("logits cosine      mean %.6f  min %.6f\n", r.logits_cosine_mean,
              r.logits_cosine_min);
  std::printf("top-1 agreement    %.2f %%\n", 100.0 * r.top1_agreement);
  std::printf("KL(f32 || cand)    mean %.3e  max %.3e nats\n", r.kl_mean, r.kl_max);
  std::printf("perplexity         f32 %.4f  %s %.4f  (%+.3f %%)\n", r.ppl_reference,
              f.kv.describe().c_str(), r.ppl_candidate,
              100.0 * (r.ppl_candidate / r.ppl_reference - 1.0));
}

void declare_flags(CLI::App& sub, KvEvalFlags& f) {
  sub.add_option("-f,--file", f.file, "text file")->required();
  f.kv.add_to(sub);
  add_ctx_size_flag(sub, f.ctx, "window length in tokens; 0 = min(train ctx, 512)");
  sub.add_option("-n,--max-tokens", f.max_tokens, "use at most this many tokens; 0 = all")
      ->capture_default_str();
  f.add_threads_flag(sub);
  add_batch_size_flag(sub, f.batch, "tokens per forward pass");
  sub.add_flag("--no-per-head", f.no_per_head, "skip the per-layer / per-head K and V table");
}

}  // namespace

void declare_kv_eval_command(CLI::App& sub) {
  declare_model_command<KvEvalFlags>(sub, kv_eval, declare_flags);
}

}  // namespace kvforge::cli
