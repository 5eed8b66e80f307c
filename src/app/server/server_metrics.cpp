#include "app/server/server_metrics.h"

#include <algorithm>

namespace kvforge::server {

ServerMetrics::ServerMetrics()
    : prompt_tokens(
          registry_.counter("kvforge_prompt_tokens_total", "Prompt tokens of accepted requests.")),
      generation_tokens(registry_.counter("kvforge_generation_tokens_total", "Tokens generated.")),
      client_disconnects(registry_.counter("kvforge_client_disconnects_total",
                                           "Requests aborted because the client went away.")),
      ttft(registry_.histogram("kvforge_time_to_first_token_seconds",
                               "Time from submission to a branch's first token.",
                               latency_buckets())),
      inter_token(registry_.histogram("kvforge_inter_token_latency_seconds",
                                      "Time between consecutive tokens of a branch.",
                                      latency_buckets())),
      request_duration(registry_.histogram("kvforge_request_duration_seconds",
                                           "Time from submission to a branch's last token.",
                                           latency_buckets())),
      in_flight(registry_.gauge("kvforge_requests_in_flight",
                                "Requests accepted by the engine loop and not finished.")),
      responses_stored(registry_.gauge("kvforge_responses_stored",
                                       "Responses API: responses stored (--responses-max).")),
      responses_stored_bytes(
          registry_.gauge("kvforge_responses_stored_bytes",
                          "Responses API: bytes the stored responses are counted for "
                          "(--responses-max-bytes).")) {
  publish_engine_stats(EngineStats{});
}

void ServerMetrics::count_request(const std::string& endpoint, int status) {
  registry_
      .counter("kvforge_requests_total", "HTTP requests answered, by endpoint and status.",
               {{"endpoint", endpoint}, {"status", std::to_string(status)}})
      .inc();
}

void ServerMetrics::publish_engine_stats(const EngineStats& s) {
  auto gauge = [&](const char* name, const char* help, double v) {
    registry_.gauge(name, help).set(v);
  };
  auto advance = [&](const char* name, const char* help, int64_t now, int64_t before) {
    Counter& c = registry_.counter(name, help);
    if (now > before) c.inc(static_cast<double>(now - before));
  };
  gauge("kvforge_sequences_running", "Sequences (branches) holding KV blocks.", s.running);
  gauge("kvforge_sequences_waiting", "Sequences queued for admission.", s.waiting);
  gauge("kvforge_kv_blocks_total", "Blocks in the KV pool.", s.kv_blocks_total);
  gauge("kvforge_kv_blocks_used", "KV blocks referenced by sequences.", s.kv_blocks_used);
  peak_blocks_used_ = std::max<int64_t>(peak_blocks_used_, s.kv_blocks_used);
  gauge("kvforge_kv_blocks_used_peak", "Most KV blocks referenced at once since the start.",
        static_cast<double>(peak_blocks_used_));
  gauge("kvforge_kv_blocks_free", "KV blocks free (including evictable prefix-cache blocks).",
        s.kv_blocks_free);
  gauge("kvforge_kv_usage_ratio", "Fraction of the KV pool in use.",
        s.kv_blocks_total > 0 ? static_cast<double>(s.kv_blocks_used) / s.kv_blocks_total : 0.0);
  const int64_t lookups = s.prefix.hits + s.prefix.misses;
  gauge("kvforge_prefix_cache_hit_rate", "Prefix-cache hits / (hits + misses) over full blocks.",
        lookups > 0 ? static_cast<double>(s.prefix.hits) / lookups : 0.0);
  advance("kvforge_prefix_cache_hits_total", "Full prompt blocks served from the prefix cache.",
          s.prefix.hits, last_.prefix.hits);
  advance("kvforge_prefix_cache_misses_total", "Full prompt blocks the prefix cache missed.",
          s.prefix.misses, last_.prefix.misses);
  advance("kvforge_prefix_cache_tokens_reused_total",
          "Prompt tokens whose K/V came from the prefix cache.", s.prefix.tokens_reused,
          last_.prefix.tokens_reused);
  advance("kvforge_preemptions_total", "Sequences preempted (KV freed, recomputed later).",
          s.preemptions, last_.preemptions);
  advance("kvforge_engine_steps_total", "Engine steps (forward passes).", s.steps, last_.steps);
  advance("kvforge_context_shifts_total",
          "Context shifts (serve --context-shift): a sequence's oldest tokens dropped.",
          s.context_shifts, last_.context_shifts);
  publish_comm_stats(s);
  publish_tier_stats(s);
  last_ = s;
}

// Tensor parallel: rank 0's collectives (all zero on one process).
void ServerMetrics::publish_comm_stats(const EngineStats& s) {
  auto advance = [&](const char* name, const char* help, double now, double before) {
    Counter& c = registry_.counter(name, help);
    if (now > before) c.inc(now - before);
  };
  advance("kvforge_tp_messages_total",
          "Tensor parallel: collectives rank 0 took part in (0 on one process).",
          double(s.comm_messages), double(last_.comm_messages));
  advance("kvforge_tp_bytes_sent_total", "Tensor parallel: payload bytes rank 0 sent.",
          double(s.comm_bytes_sent), double(last_.comm_bytes_sent));
  advance("kvforge_tp_bytes_received_total", "Tensor parallel: payload bytes rank 0 received.",
          double(s.comm_bytes_received), double(last_.comm_bytes_received));
  advance(
      "kvforge_tp_communication_seconds_total",
      "Tensor parallel: seconds rank 0 spent in collectives (waiting for other ranks included).",
      s.comm_seconds, last_.comm_seconds);
}

void ServerMetrics::publish_tier_stats(const EngineStats& s) {
  const KvDiskStats& d = s.disk;
  const KvDiskStats& was = last_.disk;
  auto advance = [&](const char* name, const char* help, const char* tier, double now,
                     double before) {
    Counter& c = registry_.counter(name, help, {{"tier", tier}});
    if (now > before) c.inc(now - before);
  };
  const char* hits = "Full prompt blocks served by a KV tier instead of recomputed.";
  const char* misses = "Full prompt blocks a KV tier could not serve.";
  const char* read = "Bytes served by a KV tier (ram: K/V reused; disk: file bytes read).";
  advance("kvforge_kv_tier_hits_total", hits, "ram", double(s.prefix.hits),
          double(last_.prefix.hits));
  advance("kvforge_kv_tier_misses_total", misses, "ram", double(s.prefix.misses),
          double(last_.prefix.misses));
  advance("kvforge_kv_tier_read_bytes_total", read, "ram", double(s.prefix_bytes_reused),
          double(last_.prefix_bytes_reused));
  advance("kvforge_kv_tier_hits_total", hits, "disk", double(d.hits), double(was.hits));
  advance("kvforge_kv_tier_misses_total", misses, "disk", double(d.misses), double(was.misses));
  advance("kvforge_kv_tier_read_bytes_total", read, "disk", double(d.bytes_read),
          double(was.bytes_read));
  advance("kvforge_kv_tier_written_bytes_total", "Bytes written to a KV tier's files.", "disk",
          double(d.bytes_written), double(was.bytes_written));
  advance("kvforge_kv_tier_files_stored_total", "Block files written.", "disk",
          double(d.blocks_stored), double(was.blocks_stored));
  advance("kvforge_kv_tier_load_seconds_total", "Time reading and verifying restored blocks.",
          "disk", d.load_seconds, was.load_seconds);
  advance("kvforge_kv_tier_store_seconds_total", "Time encoding and writing blocks.", "disk",
          d.store_seconds, was.store_seconds);
  advance("kvforge_kv_tier_files_rejected_total",
          "Block files rejected (truncated, corrupted, other model/format/tokens) and deleted.",
          "disk", double(d.files_rejected), double(was.files_rejected));
  advance("kvforge_kv_tier_io_errors_total", "I/O errors of a KV tier.", "disk",
          double(d.io_errors), double(was.io_errors));
  const auto gauge = [&](const char* name, const char* help, double v) {
    registry_.gauge(name, help, {{"tier", "disk"}}).set(v);
  };
  gauge("kvforge_kv_tier_degraded", "1 when an I/O error turned the tier off (RAM-only).",
        d.degraded ? 1 : 0);
  gauge("kvforge_kv_tier_files", "Block files the tier holds for this model.", double(d.files));
  gauge("kvforge_kv_tier_disk_bytes", "Bytes of those files.", double(d.bytes_on_disk));
}

}  // namespace kvforge::server
