// The .kvfplan file: a compiled PlanSet on disk, so `kvforge run --plan`
// starts without compiling, the way an NPU runtime loads a compiled blob.
//
// Layout (little-endian; every count bounded by the bytes that remain):
//   magic "KVFPLAN\0", u32 version (5; 4 had 5 operands per op, without the
//   output gate of gated attention; 3 lacked the mixture-of-experts op,
//   2 held the fine-grained ops of 18 codes before the plan recorded the
//   forward pass's steps, 1 also lacked the sliding-window layers)
//   u64 model fingerprint, u64 configuration fingerprint
//   configuration: i32 max_prompt_len, i32 min_response_len, i32 prefill_chunk,
//                  u32 n_variants, i32 variants[n], i32 slots, u8 K dtype, u8 V dtype
//   i32 n_threads
//   u32 n_layer, i32 layer_windows[n_layer] (0 = full attention)
//   u32 n_plans (1 prefill + one per variant), then per plan:
//     u8 kind, i32 rows, i32 kv_len, i32 n_logit_rows, u64 arena_bytes,
//     u64 matmul_scratch_bytes, u16 logits buffer, u16 attention scratch buffer,
//     u16 row runs buffer (0xFFFF without sliding-window layers),
//     u32 n_buffers, per buffer: u16 name length, name, u64 offset, u64 bytes
//     u32 n_ops, per op: u8 code, u8 norm, u8 next_norm, i16 layer, i16 next_layer,
//                        i32 rows, u16 buffers[6] (plan.h)
//     u32 n_split, i32 split[n]
//   u64 FNV-1a 64 checksum of every byte before it
//
// Loading checks, in order: magic, version, structure (truncation, counts,
// trailing bytes), checksum, the configuration's own fingerprint and
// validity, then against the model: its fingerprint, the layers' sliding
// windows and every plan's buffers, offsets, ops and shapes
// (plan_validation.h). Each failure is a
// PlanError naming the file and the problem.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "engine/static_pipeline/plan.h"
#include "engine/static_pipeline/plan_validation.h"
#include "model/model.h"

namespace kvforge {

inline constexpr uint32_t kPlanFileVersion = 5;

std::vector<uint8_t> serialize_plans(const PlanSet& set);
// Structure only (no model at hand): throws PlanError prefixed with `name`.
PlanSet parse_plans(std::span<const uint8_t> bytes, const std::string& name);

void write_plan_file(const std::filesystem::path& path, const PlanSet& set);
// Reads, parses and validates against `model`; refuses a plan compiled for
// another model ("compiled for a different model ... recompile with kvforge
// compile").
PlanSet load_plan_file(const std::filesystem::path& path, const Model& model);
PlanSet load_plans(std::span<const uint8_t> bytes, const std::string& name, const Model& model);

// Refuses a plan set whose configuration differs from `wanted`, naming each
// differing field (used when static flags are given together with --plan).
void check_plan_config(const PlanSet& set, const StaticConfig& wanted, const std::string& name);

}  // namespace kvforge
