// The shapes of a static (NPU-style) pipeline, fixed before anything runs.
//
// An accelerator that executes precompiled fixed-shape programs cannot grow a
// KV cache token by token, so the cache is allocated once at
//   capacity = max_prompt_len + min_response_len
// positions per slot and an attention mask marks the valid prefix. The prompt
// goes through one prefill program of `prefill_chunk` input rows (padded) as
// many times as it needs; decoding runs the smallest "generate variant" whose
// KV length holds the sequence, so short contexts do not pay for the whole
// capacity.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/formats/kv_format.h"
#include "kvforge/overflow_policy.h"

namespace kvforge {

struct StaticConfig {
  int32_t max_prompt_len = 1024;
  int32_t min_response_len = 128;
  int32_t prefill_chunk = 256;  // input rows of the prefill plan
  std::vector<int32_t> generate_variants = {256, 512, 1024, 1152};  // KV lengths, ascending
  int32_t slots = 1;  // sequences held at once; a generate plan has one input row per slot
  KvFormat kv_format = {};

  int32_t capacity() const { return max_prompt_len + min_response_len; }

  // Throws std::invalid_argument naming the field, its value and the rule:
  // lengths positive, chunk a power of two no larger than the capacity,
  // variants strictly ascending and ending at the capacity, 1..256 slots.
  void validate() const;
  // "max_prompt_len 1024, min_response_len 128 (capacity 1152), chunk 256,
  //  variants 256,512,1024,1152, slots 1, KV f32"
  std::string describe() const;
  bool operator==(const StaticConfig&) const = default;
};

// Ties a plan file to the configuration it was compiled for: covers the
// fields that shape plans (lengths, chunk, variants, slots, KV formats).
uint64_t config_fingerprint(const StaticConfig& config);

// "256,512,1024" → {256, 512, 1024}; throws std::invalid_argument on anything else.
std::vector<int32_t> parse_variant_list(const std::string& text);
std::string format_variant_list(const std::vector<int32_t>& variants);

// "error" / "truncate-left"; throws std::invalid_argument for anything else.
OverflowPolicy parse_overflow_policy(const std::string& text);

}  // namespace kvforge
