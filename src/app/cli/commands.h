// The subcommands of `kvforge`, in --help order: each one's name and
// one-line help, and the function (in its cmd_*.cpp) that declares its flags
// on the subcommand and what runs once they are parsed.
#pragma once

#include <CLI/CLI.hpp>

namespace kvforge::cli {

void declare_run_command(CLI::App& sub);
void declare_info_command(CLI::App& sub);
void declare_tokenize_command(CLI::App& sub);
void declare_make_model_command(CLI::App& sub);
void declare_quantize_command(CLI::App& sub);
void declare_perplexity_command(CLI::App& sub);
void declare_batch_command(CLI::App& sub);
void declare_bench_serve_command(CLI::App& sub);
void declare_serve_command(CLI::App& sub);
void declare_chat_command(CLI::App& sub);
void declare_chat_template_command(CLI::App& sub);
void declare_kv_eval_command(CLI::App& sub);
void declare_kv_plan_command(CLI::App& sub);
void declare_kv_bench_command(CLI::App& sub);
void declare_bench_command(CLI::App& sub);
void declare_compile_command(CLI::App& sub);
void declare_bench_static_command(CLI::App& sub);
void declare_grammar_command(CLI::App& sub);

struct Subcommand {
  const char* name;
  const char* help;
  void (*declare)(CLI::App& sub);
};

inline constexpr Subcommand kSubcommands[] = {
    {"run", "generate text from a prompt, with timing", declare_run_command},
    {"info", "describe a GGUF file", declare_info_command},
    {"tokenize", "split text into tokens with a model's tokenizer", declare_tokenize_command},
    {"make-model", "write a random-weight GGUF model of any supported architecture",
     declare_make_model_command},
    {"quantize", "convert weight matrices to another format", declare_quantize_command},
    {"perplexity", "perplexity of a model on a text file", declare_perplexity_command},
    {"batch", "generate for every line of a file at once (continuous batching), with totals",
     declare_batch_command},
    {"bench-serve", "continuous-batching throughput/latency vs concurrency; prefix-cache TTFT",
     declare_bench_serve_command},
    {"serve", "OpenAI-compatible HTTP server (completions, chat, SSE, metrics)",
     declare_serve_command},
    {"chat", "interactive chat in the terminal, reusing the KV cache of earlier turns",
     declare_chat_command},
    {"chat-template", "render messages through a chat template (debugging)",
     declare_chat_template_command},
    {"kv-eval", "accuracy of a KV storage format against an f32 KV cache on a text",
     declare_kv_eval_command},
    {"kv-plan", "weight + KV memory at a context and batch; what fits a memory budget",
     declare_kv_plan_command},
    {"kv-bench", "decode speed at long context per KV format (ratios to f16)",
     declare_kv_bench_command},
    {"bench", "prefill (pp) and decode (tg) speed against the measured memory bandwidth",
     declare_bench_command},
    {"compile", "compile static-pipeline plans for a model into a plan file",
     declare_compile_command},
    {"bench-static", "static pipeline: compile time, step time per variant, static vs dynamic",
     declare_bench_static_command},
    {"grammar", "check a GBNF grammar or JSON schema: what it compiles to, or the error",
     declare_grammar_command},
};

}  // namespace kvforge::cli
