// Each subcommand registers itself on the top-level CLI11 app.
#pragma once

#include <CLI/CLI.hpp>

namespace kvforge::cli {

void add_run_command(CLI::App& app);
void add_info_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_make_model_command(CLI::App& app);
void add_quantize_command(CLI::App& app);
void add_perplexity_command(CLI::App& app);
void add_batch_command(CLI::App& app);
void add_bench_serve_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_chat_command(CLI::App& app);
void add_chat_template_command(CLI::App& app);
void add_kv_eval_command(CLI::App& app);
void add_kv_plan_command(CLI::App& app);
void add_kv_bench_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_compile_command(CLI::App& app);
void add_bench_static_command(CLI::App& app);

}  // namespace kvforge::cli
