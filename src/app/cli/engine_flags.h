// Batching-engine flags shared by `batch`, `bench-serve` and (later) `serve`:
// declared once, driving parsing, help and defaults.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "app/cli/cli_common.h"
#include "kvforge/engine.h"

namespace kvforge::cli {

// The disk tier under the paged engine's prefix cache (--kv-disk,
// --kv-disk-size), on run, batch, chat, serve and bench-serve.
struct KvDiskFlags {
  std::string dir;
  double gib = 4;

  void add_to(CLI::App& app);
  void apply(EngineOptions& o) const;
};

// The flags bind to `options`' fields (their defaults are its defaults);
// the KV type and the disk tier are flag groups of their own, folded in by
// to_options().
struct EngineFlags {
  EngineOptions options;
  KvTypeFlags kv;
  KvDiskFlags disk;

  void add_to(CLI::App& app);
  EngineOptions to_options() const;
};

// Hits, misses and bytes per tier, load/store time, files rejected: one
// line for summaries ("" when the disk tier is off).
std::string describe_kv_tiers(const EngineStats& st);

// One line about the pool: "KV pool 1024 blocks x 16 tokens (16384 tokens, 96.0 MiB, f32), ...".
std::string describe_engine(const Engine& engine, const std::string& kv_type);

}  // namespace kvforge::cli
