#include "app/cli/static_flags.h"

#include <chrono>
#include <cstdio>

#include "engine/static_pipeline/plan_compiler.h"
#include "engine/static_pipeline/plan_file.h"

namespace kvforge::cli {
namespace {

// 256, 512, 1024 below the capacity, then the capacity itself: the issue's
// 256,512,1024,1152 for the default 1024 + 128.
std::vector<int32_t> default_variants(int32_t capacity) {
  std::vector<int32_t> v;
  for (int32_t len : {256, 512, 1024})
    if (len < capacity) v.push_back(len);
  v.push_back(capacity);
  return v;
}

}  // namespace

void StaticFlags::add_to(CLI::App& app, bool with_mode_flags) {
  app_ = &app;
  if (with_mode_flags) {
    app.add_flag("--static", enabled,
                 "run on the static (NPU-style) pipeline: fixed-shape plans, static KV cache");
    app.add_option("--plan", plan,
                   "run a plan file compiled by `kvforge compile` (implies --static)");
    app.add_option("--overflow", overflow,
                   "static: a prompt over --max-prompt-len is an error, or truncate-left")
        ->capture_default_str();
  }
  app.add_option("--max-prompt-len", max_prompt_len, "static: longest prompt in tokens")
      ->capture_default_str();
  app.add_option("--min-response-len", min_response_len,
                 "static: tokens guaranteed to the response; KV capacity = max-prompt-len + this")
      ->capture_default_str();
  app.add_option("--prefill-chunk", prefill_chunk,
                 "static: input rows of the prefill plan (a power of two)")
      ->capture_default_str();
  app.add_option("--generate-variants", variants,
                 "static: KV lengths of the generate plans, ascending, ending at the capacity "
                 "(default 256,512,1024 below the capacity, then the capacity)");
  app.add_option("--static-slots", slots,
                 "static: sequences held at once (batch of the generate plans)")
      ->capture_default_str();
}

StaticConfig StaticFlags::to_config(KvFormat kv) const {
  StaticConfig c;
  c.max_prompt_len = max_prompt_len;
  c.min_response_len = min_response_len;
  c.prefill_chunk = prefill_chunk;
  c.generate_variants =
      variants.empty() ? default_variants(c.capacity()) : parse_variant_list(variants);
  c.slots = slots;
  c.kv_format = kv;
  c.validate();
  return c;
}

bool StaticFlags::shape_given() const {
  for (const char* name : {"--max-prompt-len", "--min-response-len", "--prefill-chunk",
                           "--generate-variants", "--static-slots"})
    if (given(name)) return true;
  return false;
}

StaticConfig StaticFlags::apply_given(StaticConfig c) const {
  const int32_t old_capacity = c.capacity();
  if (given("--max-prompt-len")) c.max_prompt_len = max_prompt_len;
  if (given("--min-response-len")) c.min_response_len = min_response_len;
  if (given("--prefill-chunk")) c.prefill_chunk = prefill_chunk;
  if (given("--static-slots")) c.slots = slots;
  if (given("--generate-variants"))
    c.generate_variants = parse_variant_list(variants);
  else if (c.capacity() != old_capacity)
    c.generate_variants = default_variants(c.capacity());
  c.validate();
  return c;
}

StaticPlans prepare_static_plans(const StaticFlags& flags, const Model& model, KvFormat kv,
                                 int threads) {
  StaticPlans out;
  if (!flags.plan.empty()) {
    out.plans = load_plan_file(flags.plan, model);
    StaticConfig wanted = flags.apply_given(out.plans.config);
    if (flags.given("--kv-type") || flags.given("--kv-type-k") || flags.given("--kv-type-v"))
      wanted.kv_format = kv;
    check_plan_config(out.plans, wanted, flags.plan);
    if (flags.given("--threads") && threads != out.plans.n_threads)
      throw std::invalid_argument(
          flags.plan + ": compiled for " + std::to_string(out.plans.n_threads) + " threads, -t " +
          std::to_string(threads) + " given (recompile with kvforge compile -t " +
          std::to_string(threads) + ", or drop -t)");
    out.source = "loaded from " + flags.plan;
    return out;
  }
  const StaticConfig config = flags.to_config(kv);
  const int32_t trained = model.config().n_ctx_train;
  if (trained > 0 && config.capacity() > trained)
    std::fprintf(stderr,
                 "warning: static KV capacity %d (--max-prompt-len %d + --min-response-len %d) "
                 "exceeds the model's training context of %d tokens; positions past %d are "
                 "outside what it was trained on\n",
                 config.capacity(), config.max_prompt_len, config.min_response_len, trained,
                 trained);
  const auto t0 = std::chrono::steady_clock::now();
  out.plans = compile_plans(model, config, threads);
  out.compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  char buf[64];
  std::snprintf(buf, sizeof buf, "compiled in %.2f ms", out.compile_seconds * 1e3);
  out.source = buf;
  return out;
}

}  // namespace kvforge::cli
