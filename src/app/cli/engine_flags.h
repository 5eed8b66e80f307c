// Batching-engine flags shared by `batch`, `bench-serve` and (later) `serve`:
// declared once, driving parsing, help and defaults.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "app/cli/cli_common.h"
#include "kvforge/engine.h"

namespace kvforge::cli {

struct EngineFlags {
  int max_seqs = 64;
  int max_batched_tokens = 512;
  double kv_memory_mib = 512;
  int kv_blocks = 0;
  int block_size = 16;
  int ctx = 0;
  bool no_prefix_cache = false;
  KvTypeFlags kv;

  void add_to(CLI::App& app);
  EngineOptions to_options() const;
};

// One line about the pool: "KV pool 1024 blocks x 16 tokens (16384 tokens, 96.0 MiB, f32), ...".
std::string describe_engine(const Engine& engine, const std::string& kv_type);

}  // namespace kvforge::cli
