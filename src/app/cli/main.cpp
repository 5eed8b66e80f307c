// kvforge: one executable, one subcommand per job.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "app/cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"kvforge: LLaMA-family inference engine (GGUF models)", "kvforge"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "help for every subcommand");
  kvforge::cli::add_run_command(app);
  kvforge::cli::add_info_command(app);
  kvforge::cli::add_tokenize_command(app);
  kvforge::cli::add_make_model_command(app);
  kvforge::cli::add_quantize_command(app);
  kvforge::cli::add_perplexity_command(app);
  kvforge::cli::add_batch_command(app);
  kvforge::cli::add_bench_serve_command(app);
  kvforge::cli::add_serve_command(app);
  kvforge::cli::add_chat_command(app);
  kvforge::cli::add_chat_template_command(app);
  kvforge::cli::add_kv_eval_command(app);
  kvforge::cli::add_kv_plan_command(app);
  kvforge::cli::add_kv_bench_command(app);
  kvforge::cli::add_bench_command(app);
  kvforge::cli::add_compile_command(app);
  kvforge::cli::add_bench_static_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "kvforge: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
