// Static-pipeline flags shared by run, chat, serve, compile and bench-static:
// declared once, driving parsing, help and defaults.
//
//   --static                   run on the static pipeline (plans compiled at start-up)
//   --plan FILE                run a plan file from `kvforge compile` (implies --static)
//   --max-prompt-len N         1024     --min-response-len N   128
//   --prefill-chunk N          256 (power of two)
//   --generate-variants LIST   KV lengths, ascending, ending at the capacity;
//                              default: 256,512,1024 below the capacity, then the capacity
//   --static-slots B           1        --overflow error|truncate-left
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "core/formats/kv_format.h"
#include "engine/static_pipeline/plan.h"
#include "model/model.h"

namespace kvforge::cli {

struct StaticFlags {
  bool enabled = false;
  std::string plan;
  int max_prompt_len = 1024;
  int min_response_len = 128;
  int prefill_chunk = 256;
  std::string variants;  // empty = the default ladder for the capacity
  int slots = 1;
  std::string overflow = "error";

  // with_mode_flags: also --static, --plan and --overflow (not for compile).
  void add_to(CLI::App& app, bool with_mode_flags = true);
  bool active() const { return enabled || !plan.empty(); }
  // Validated configuration; throws std::invalid_argument naming the flag.
  StaticConfig to_config(KvFormat kv) const;
  OverflowPolicy overflow_policy() const { return parse_overflow_policy(overflow); }
  // True when the user gave any flag that shapes plans (lengths, chunk,
  // variants, slots): with --plan these must agree with the file.
  bool shape_given() const;
  // `base` with the shape flags the user gave applied (the variants ladder
  // follows a changed capacity unless --generate-variants is given); validated.
  StaticConfig apply_given(StaticConfig base) const;
  // Whether an option of the same command was given (e.g. "--kv-type", "--threads").
  bool given(const char* name) const { return app_ && app_->count(name) > 0; }

 private:
  CLI::App* app_ = nullptr;
};

// The plans a static command runs: loaded from --plan (checked against the
// model, and against any shape flags and --kv-type given), or compiled now.
struct StaticPlans {
  PlanSet plans;
  double compile_seconds = 0;  // 0 when loaded
  std::string source;          // "compiled in 12.3 ms" or "loaded from model.kvfplan"
};
// `kv` counts only if one of --kv-type/--kv-type-k/--kv-type-v was given;
// `threads` likewise for -t when loading (a plan fixes its thread partition).
StaticPlans prepare_static_plans(const StaticFlags& flags, const Model& model, KvFormat kv,
                                 int threads);

}  // namespace kvforge::cli
