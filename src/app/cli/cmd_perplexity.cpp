// kvforge perplexity: how well a model predicts a text.
#include <cstdio>
#include <memory>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/progress_line.h"
#include "app/cli/subcommand.h"
#include "app/tokenizer/tokenizer.h"
#include "app/tools/perplexity.h"
#include "model/model.h"

namespace kvforge::cli {
namespace {

struct PerplexityFlags : ModelFlags {
  std::string file;
  int ctx = 0;
  int batch = 512;
};

void perplexity(const PerplexityFlags& f) {
  const auto [path, model, tokenizer] = load_model(f);
  // Under mpirun rank 0 reads the text and every rank evaluates it in lockstep.
  std::vector<int32_t> tokens;
  if (world().rank() == 0)
    tokens = tokenizer.encode(read_text_file(f.file), tokenizer.add_bos(), /*parse_special=*/false);
  broadcast_tokens(world(), tokens);
  const int window = f.ctx > 0 ? f.ctx : std::min(model->config().n_ctx_train, 512);
  ThreadPool pool(f.threads);
  SequenceRunner runner(*model, pool,
                        {.n_ctx = window, .max_batch = f.batch, .kv_format = {}, .comm = &world()});
  std::fprintf(stderr, "perplexity: %zu tokens, windows of %d\n", tokens.size(), window);
  ProgressLine progress;
  const PerplexityResult r =
      compute_perplexity(runner, tokens, window, [&progress](int i, int n, double ppl) {
        progress.update("[%d/%d] running ppl %.4f", i, n, ppl);
        if (i == n) progress.finish();
      });
  std::printf(
      "perplexity %.4f  (mean NLL %.6f nats over %lld predicted tokens, %d windows of %d, %.2f "
      "s)\n",
      r.perplexity(), r.mean_nll(), static_cast<long long>(r.n_predicted), r.n_windows, window,
      r.seconds);
}

void declare_flags(CLI::App& sub, PerplexityFlags& f) {
  sub.add_option("-f,--file", f.file, "text file")->required();
  add_ctx_size_flag(sub, f.ctx, "window length in tokens; 0 = min(train ctx, 512)");
  f.add_threads_flag(sub);
  f.add_tp_flag(sub);
  add_batch_size_flag(sub, f.batch, "tokens per forward pass");
}

}  // namespace

void declare_perplexity_command(CLI::App& sub) {
  declare_model_command<PerplexityFlags>(sub, perplexity, declare_flags);
}

}  // namespace kvforge::cli
