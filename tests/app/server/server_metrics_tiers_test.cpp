// The KV-tier metrics of /metrics: counters per tier advance by the change in
// the engine's stats, gauges follow the disk tier's state.
#include <gtest/gtest.h>

#include "app/server/server_metrics.h"

namespace kvforge::server {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

TEST(ServerMetricsTiers, HitsMissesBytesPerTierAndDiskState) {
  ServerMetrics m;
  EngineStats s;
  s.prefix.hits = 3;
  s.prefix.misses = 5;
  s.prefix_bytes_reused = 3000;
  s.disk.enabled = true;
  s.disk.hits = 4;
  s.disk.misses = 1;
  s.disk.bytes_read = 4100;
  s.disk.files_rejected = 1;
  s.disk.files = 9;
  m.publish_engine_stats(s);
  s.disk.hits = 6;
  s.disk.degraded = true;
  s.disk.io_errors = 1;
  m.publish_engine_stats(s);
  const std::string text = m.render();
  EXPECT_TRUE(has_line(text, "kvforge_kv_tier_hits_total{tier=\"ram\"} 3")) << text;
  EXPECT_TRUE(has_line(text, "kvforge_kv_tier_hits_total{tier=\"disk\"} 6")) << text;
  EXPECT_TRUE(has_line(text, "kvforge_kv_tier_misses_total{tier=\"ram\"} 5")) << text;
  EXPECT_TRUE(has_line(text, "kvforge_kv_tier_misses_total{tier=\"disk\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "kvforge_kv_tier_read_bytes_total{tier=\"ram\"} 3000")) << text;
  EXPECT_TRUE(has_line(text, "kvforge_kv_tier_read_bytes_total{tier=\"disk\"} 4100")) << text;
  EXPECT_TRUE(has_line(text, "kvforge_kv_tier_files_rejected_total{tier=\"disk\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "kvforge_kv_tier_io_errors_total{tier=\"disk\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "kvforge_kv_tier_degraded{tier=\"disk\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "kvforge_kv_tier_files{tier=\"disk\"} 9")) << text;
}

}  // namespace
}  // namespace kvforge::server
