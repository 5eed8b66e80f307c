#include "app/cli/command_engine.h"

#include <cstdio>

#include "app/cli/cli_common.h"
#include "app/structured/constraint_cache.h"
#include "engine/lockstep/lockstep_leader.h"

namespace kvforge::cli {

namespace {

// What a follower binds grammars to: the vocabulary rank 0's grammars use.
GrammarVocabularySource vocabulary_of(const Tokenizer& tokenizer) {
  return [&tokenizer] { return grammar_vocabulary(tokenizer); };
}

// Tensor parallel: every rank runs `own`; rank 0 leads the others, which
// follow it to the end and then leave through FollowerFinished. One process:
// `own` as it is.
std::unique_ptr<Engine> lead_or_follow(const Model& model, const Tokenizer& tokenizer,
                                       std::unique_ptr<Engine> own) {
  if (model.tp() == 1) return own;
  Communicator& comm = world();
  if (comm.rank() != 0) {
    follow_leader(*own, comm, vocabulary_of(tokenizer));
    throw FollowerFinished{};
  }
  own->lead(comm);
  return own;
}

}  // namespace

CommandEngine make_paged_engine(const Model& model, const Tokenizer& tokenizer, int threads,
                                EngineOptions options) {
  CommandEngine out;
  out.pool = std::make_unique<ThreadPool>(threads);
  if (model.tp() == 1) {
    out.engine = std::make_unique<TextEngine>(model, tokenizer, *out.pool, std::move(options));
    return out;
  }
  if (options.eos_token_ids.empty()) options.eos_token_ids = tokenizer.eog_ids();
  options.comm = &world();
  out.engine = std::make_unique<TextEngine>(
      tokenizer, lead_or_follow(model, tokenizer,
                                std::make_unique<Engine>(model, *out.pool, std::move(options))));
  return out;
}

std::unique_ptr<TextEngine> lead_or_follow_paged(const Model& model, const Tokenizer& tokenizer,
                                                 ThreadPool& pool, EngineOptions options) {
  if (model.tp() == 1)
    return std::make_unique<TextEngine>(model, tokenizer, pool, std::move(options));
  if (options.eos_token_ids.empty()) options.eos_token_ids = tokenizer.eog_ids();
  options.comm = &world();
  auto own = std::make_unique<Engine>(model, pool, std::move(options));
  Communicator& comm = world();
  if (comm.rank() != 0) {
    follow_leader(*own, comm, vocabulary_of(tokenizer));
    return nullptr;
  }
  own->lead(comm);
  return std::make_unique<TextEngine>(tokenizer, std::move(own));
}

CommandEngine make_static_engine(const StaticFlags& flags, const Model& model,
                                 const Tokenizer& tokenizer, KvFormat kv, int threads,
                                 bool reuse_slots, const KvDiskFlags& disk,
                                 ContextShiftFlags shift) {
  const OverflowPolicy overflow = flags.overflow_policy();
  StaticPlans prepared = prepare_static_plans(flags, model, kv, threads);
  CommandEngine out;
  out.plans_source = prepared.source;
  out.pool = std::make_unique<ThreadPool>(prepared.plans.n_threads);
  EngineOptions options;
  options.eos_token_ids = tokenizer.eog_ids();
  options.overflow = overflow;
  options.reuse_slots = reuse_slots;
  options.kv_disk_dir = disk.dir;
  options.kv_disk_gib = disk.gib;
  options.context_shift = shift.on;
  options.n_keep = shift.n_keep;
  if (model.tp() > 1) options.comm = &world();
  auto slots =
      std::make_unique<Engine>(model, *out.pool, std::move(prepared.plans), std::move(options));
  out.slots = slots->static_runner();
  out.engine =
      std::make_unique<TextEngine>(tokenizer, lead_or_follow(model, tokenizer, std::move(slots)));
  return out;
}

std::string CommandEngine::describe_static() const {
  const StaticRunner& r = *slots;
  char buf[160];
  std::snprintf(buf, sizeof buf, "; plans %s; %d threads; arena %.1f KiB, KV %.1f MiB",
                plans_source.c_str(), pool->size(),
                double(r.plans().largest_arena_bytes()) / 1024.0,
                double(engine->engine().kv_pool_bytes()) / (1024.0 * 1024.0));
  return "static pipeline: " + r.config().describe() + buf;
}

std::string CommandEngine::notice(const GenerationResult& r) const {
  if (!slots) return "";
  const StaticConfig& c = slots->config();
  std::string out;
  if (r.prompt_tokens_dropped > 0)
    out = "prompt truncated on the left: " + std::to_string(r.prompt_tokens_dropped) + " of " +
          std::to_string(r.prompt_tokens + r.prompt_tokens_dropped) +
          " tokens dropped to fit --max-prompt-len " + std::to_string(c.max_prompt_len) + ". ";
  if (r.reached_context)
    out += "generation stopped at the static KV capacity of " + std::to_string(c.capacity()) +
           " tokens (max_prompt_len " + std::to_string(c.max_prompt_len) + " + min_response_len " +
           std::to_string(c.min_response_len) + ").";
  return out;
}

}  // namespace kvforge::cli
