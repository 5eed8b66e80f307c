// The metrics `kvforge serve` exposes on GET /metrics (Prometheus text):
//   kvforge_requests_total{endpoint,status}      HTTP requests answered
//   kvforge_prompt_tokens_total                  prompt tokens of accepted requests
//   kvforge_generation_tokens_total              tokens generated
//   kvforge_time_to_first_token_seconds          histogram, per branch
//   kvforge_inter_token_latency_seconds          histogram, between consecutive tokens
//   kvforge_request_duration_seconds             histogram, submission to last token
//   kvforge_client_disconnects_total             requests aborted because the client left
//   kvforge_requests_in_flight                   accepted, not finished
//   kvforge_sequences_running / _waiting         engine scheduler state
//   kvforge_kv_blocks_total / _used / _free      KV pool (free includes evictable cached blocks);
//                                                with --static: the batch slots, used = filled
//   kvforge_kv_blocks_used_peak                  most blocks used at once since start (the
//                                                chat page shows it: a short request ends
//                                                between two polls of _used)
//   kvforge_kv_usage_ratio                       used / total
//   kvforge_prefix_cache_hits_total / _misses_total, kvforge_prefix_cache_hit_rate
//   kvforge_prefix_cache_tokens_reused_total
//   kvforge_kv_tier_hits_total{tier} / _misses_total{tier}  full prompt blocks per tier
//                                                (ram: the prefix cache; disk: --kv-disk)
//   kvforge_kv_tier_read_bytes_total{tier}       K/V bytes served (ram) / file bytes read (disk)
//   kvforge_kv_tier_written_bytes_total{tier="disk"}, kvforge_kv_tier_files_stored_total
//   kvforge_kv_tier_load_seconds_total / _store_seconds_total{tier="disk"}
//   kvforge_kv_tier_files_rejected_total         damaged or foreign files, deleted
//   kvforge_kv_tier_io_errors_total, kvforge_kv_tier_degraded (1: RAM-only after an I/O error)
//   kvforge_kv_tier_files / kvforge_kv_tier_disk_bytes   what the disk tier holds now
//   kvforge_responses_stored / _stored_bytes     the Responses API's stored responses
//                                                (response_store.h), read at each scrape
//   kvforge_preemptions_total, kvforge_engine_steps_total
//   kvforge_tp_messages_total, kvforge_tp_bytes_sent_total / _received_total,
//   kvforge_tp_communication_seconds_total  tensor parallel: rank 0's collectives
//                                                (per step: divide by engine_steps_total)
#pragma once

#include <string>

#include "app/server/metrics.h"
#include "kvforge/engine.h"

namespace kvforge::server {

class ServerMetrics {
 private:
  MetricsRegistry registry_;  // first: the references below point into it

 public:
  ServerMetrics();

  void count_request(const std::string& endpoint, int status);
  // From the engine loop after each step: gauges follow the engine's stats,
  // counters advance by the change since the previous call.
  void publish_engine_stats(const EngineStats& stats);

  std::string render() const { return registry_.render(); }

  Counter& prompt_tokens;
  Counter& generation_tokens;
  Counter& client_disconnects;
  Histogram& ttft;
  Histogram& inter_token;
  Histogram& request_duration;
  Gauge& in_flight;
  Gauge& responses_stored;
  Gauge& responses_stored_bytes;

 private:
  void publish_comm_stats(const EngineStats& stats);
  void publish_tier_stats(const EngineStats& stats);

  EngineStats last_;
  int64_t peak_blocks_used_ = 0;
};

}  // namespace kvforge::server
