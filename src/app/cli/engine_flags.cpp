#include "app/cli/engine_flags.h"

#include <cstdio>

#include "app/cli/flag_checks.h"

namespace kvforge::cli {

void EngineFlags::add_to(CLI::App& app) {
  EngineOptions& o = options;
  app.add_option("--max-seqs,--parallel", o.max_seqs, "sequences running at once (llama.cpp's -np)")
      ->check(at_least(1))
      ->capture_default_str();
  app.add_option("--max-batched-tokens", o.max_batched_tokens,
                 "tokens per forward pass (decodes + prefill chunks)")
      ->check(at_least(1))
      ->capture_default_str();
  app.add_option("--kv-memory", o.kv_memory_mib, "KV pool size in MiB (unless --kv-blocks)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--kv-blocks", o.kv_blocks, "KV pool size in blocks; 0 = from --kv-memory")
      ->check(at_least(0, "0 = from --kv-memory"))
      ->capture_default_str();
  app.add_option("--block-size", o.block_size, "tokens per KV block (power of two, 1..256)")
      ->capture_default_str();
  add_ctx_size_flag(app, o.n_ctx, "context per sequence; 0 = the model's");
  app.add_flag_callback(
      "--no-prefix-cache", [&o] { o.enable_prefix_cache = false; },
      "do not reuse K/V of shared prompt prefixes");
  app.add_option("--state-snapshots", o.state_snapshots,
                 "hybrid models: recurrent-state snapshots kept for prefix reuse (out of "
                 "--kv-memory; 0 = no prefix reuse)")
      ->check(at_least(0, "0 = no prefix reuse"))
      ->capture_default_str();
  kv.add_to(app);
  disk.add_to(app);
}

void KvDiskFlags::add_to(CLI::App& app) {
  app.add_option("--kv-disk", dir,
                 "directory for a persistent KV tier: prompt blocks are stored there and "
                 "restored instead of recomputed (same model and KV format)");
  app.add_option("--kv-disk-size", gib, "size limit of --kv-disk in GiB")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
}

void KvDiskFlags::apply(EngineOptions& o) const {
  o.kv_disk_dir = dir;
  o.kv_disk_gib = gib;
}

std::string describe_kv_tiers(const EngineStats& st) {
  if (!st.disk.enabled) return "";
  const KvDiskStats& d = st.disk;
  char buf[512];
  std::snprintf(
      buf, sizeof buf,
      "KV tiers: RAM %lld block hits (%s), %lld misses; disk %lld hits (%s read, "
      "%.1f ms), %lld misses, %lld stored (%s, %.1f ms), %lld rejected, %lld files "
      "(%s)%s",
      (long long)st.prefix.hits, human_bytes(double(st.prefix_bytes_reused)).c_str(),
      (long long)st.prefix.misses, (long long)d.hits, human_bytes(double(d.bytes_read)).c_str(),
      d.load_seconds * 1e3, (long long)d.misses, (long long)d.blocks_stored,
      human_bytes(double(d.bytes_written)).c_str(), d.store_seconds * 1e3,
      (long long)d.files_rejected, (long long)d.files, human_bytes(double(d.bytes_on_disk)).c_str(),
      d.degraded ? ", DEGRADED to RAM-only after an I/O error" : "");
  std::string out = buf;
  if (d.state_hits > 0 || d.states_stored > 0)  // a hybrid model's recurrent-state snapshots
    out += "; disk state snapshots " + std::to_string(d.state_hits) + " restored, " +
           std::to_string(d.states_stored) + " stored";
  return out;
}

EngineOptions EngineFlags::to_options() const {
  EngineOptions o = options;
  o.kv_format = kv.format();
  disk.apply(o);
  return o;
}

std::string describe_engine(const Engine& e, const std::string& kv_type) {
  char buf[1024];
  std::snprintf(
      buf, sizeof buf,
      "KV pool %d blocks x %d tokens (%lld tokens, %s, %s), max %d seqs, "
      "%d tokens/step, prefix cache %s%s%s",
      e.n_blocks(), e.block_size(), (long long)e.n_blocks() * e.block_size(),
      human_bytes(double(e.kv_pool_bytes())).c_str(), kv_type.c_str(), e.options().max_seqs,
      e.options().max_batched_tokens, e.options().enable_prefix_cache ? "on" : "off",
      e.options().kv_disk_dir.empty() ? "" : ", disk tier ", e.options().kv_disk_dir.c_str());
  return buf;
}

}  // namespace kvforge::cli
