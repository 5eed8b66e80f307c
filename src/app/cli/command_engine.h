// The engine a command (run, chat, serve) drives: a TextEngine on the Engine,
// paged or with --static/--plan on the static pipeline's batch slots, with
// the thread pool it computes on.
#pragma once

#include <memory>
#include <string>

#include "app/cli/engine_flags.h"
#include "app/cli/static_flags.h"
#include "app/generation.h"
#include "app/text_engine.h"
#include "app/tokenizer/tokenizer.h"
#include "core/threadpool.h"
#include "engine/static_pipeline/static_runner.h"
#include "model/model.h"

namespace kvforge::cli {

// `engine` is declared after `pool`, so it goes first.
struct CommandEngine {
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<TextEngine> engine;
  const StaticRunner* slots = nullptr;  // the engine's static slots' runner, else null
  std::string plans_source;             // static: StaticPlans::source

  // "static pipeline: <config>; plans compiled in 3.1 ms; 2 threads; arena 1.0 KiB, KV 4.5 MiB"
  std::string describe_static() const;
  // The sentence run and chat print when the static pipeline cut the prompt
  // or stopped at its capacity; empty otherwise (and on the paged engine).
  std::string notice(const GenerationResult& r) const;
};

// The paged engine on a pool of `threads`; EngineOptions::eos_token_ids
// comes from the tokenizer when empty. Tensor parallel (model.tp() > 1):
// on rank 0 an engine that leads the others (engine/lockstep/); on the
// other ranks it follows rank 0's engine to its end, then throws
// FollowerFinished instead of returning.
CommandEngine make_paged_engine(const Model& model, const Tokenizer& tokenizer, int threads,
                                EngineOptions options);
// For commands that run many paged engines one after another on one pool
// (bench-serve): one process, a TextEngine; tensor parallel, on rank 0 one
// that leads the others, and on the other ranks nullptr once they have
// followed rank 0's engine to its end. Every rank must call it the same
// number of times with the same options.
std::unique_ptr<TextEngine> lead_or_follow_paged(const Model& model, const Tokenizer& tokenizer,
                                                 ThreadPool& pool, EngineOptions options);
// The plans of prepare_static_plans run by the Engine's static slots on a pool
// of the plans' thread count; reuse_slots: see EngineOptions; disk: the
// KV disk tier (--kv-disk), off when its directory is empty. Tensor
// parallel: as make_paged_engine (each rank compiles the plans of its share).
// --context-shift and --keep (EngineOptions::context_shift, n_keep).
struct ContextShiftFlags {
  bool on = false;
  int32_t n_keep = 1;
};
CommandEngine make_static_engine(const StaticFlags& flags, const Model& model,
                                 const Tokenizer& tokenizer, KvFormat kv, int threads,
                                 bool reuse_slots = false, const KvDiskFlags& disk = {},
                                 ContextShiftFlags shift = {});

}  // namespace kvforge::cli
