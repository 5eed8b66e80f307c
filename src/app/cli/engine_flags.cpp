#include "app/cli/engine_flags.h"

#include <cstdio>

namespace kvforge::cli {

void EngineFlags::add_to(CLI::App& app) {
  app.add_option("--max-seqs,--parallel", max_seqs, "sequences running at once (llama.cpp's -np)")
      ->capture_default_str();
  app.add_option("--max-batched-tokens", max_batched_tokens,
                 "tokens per forward pass (decodes + prefill chunks)")
      ->capture_default_str();
  app.add_option("--kv-memory", kv_memory_mib, "KV pool size in MiB (unless --kv-blocks)")
      ->capture_default_str();
  app.add_option("--kv-blocks", kv_blocks, "KV pool size in blocks; 0 = from --kv-memory")
      ->capture_default_str();
  app.add_option("--block-size", block_size, "tokens per KV block (power of two, 1..256)")
      ->capture_default_str();
  app.add_option("-c,--ctx-size", ctx, "context per sequence; 0 = the model's")
      ->capture_default_str();
  app.add_flag("--no-prefix-cache", no_prefix_cache, "do not reuse K/V of shared prompt prefixes");
  kv.add_to(app);
}

EngineOptions EngineFlags::to_options() const {
  EngineOptions o;
  o.max_seqs = max_seqs;
  o.max_batched_tokens = max_batched_tokens;
  o.kv_memory_mib = kv_memory_mib;
  o.kv_blocks = kv_blocks;
  o.block_size = block_size;
  o.n_ctx = ctx;
  o.enable_prefix_cache = !no_prefix_cache;
  o.kv_format = kv.format();
  return o;
}

std::string describe_engine(const Engine& e, const std::string& kv_type) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "KV pool %d blocks x %d tokens (%lld tokens, %s, %s), max %d seqs, "
                "%d tokens/step, prefix cache %s",
                e.n_blocks(), e.block_size(), (long long)e.n_blocks() * e.block_size(),
                human_bytes(double(e.kv_pool_bytes())).c_str(), kv_type.c_str(),
                e.options().max_seqs, e.options().max_batched_tokens,
                e.options().enable_prefix_cache ? "on" : "off");
  return buf;
}

}  // namespace kvforge::cli
