// The context shift over a static slot (StaticKvCache::shift,
// static_slot_shift.cpp): positions after the dropped ones move down in
// place, each moved K record being exactly what the paged pool's in-place
// re-rotation makes of the same record (rerotate_k_records, whose error
// against a fresh rotation kv_shift_test.cpp bounds per format), V records
// the same bytes, the kept head untouched, the slot's valid length cut by
// the drop, the other slot untouched. Every KV format.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "engine/kv/kv_shift.h"
#include "engine/static_pipeline/static_kv_cache.h"

namespace kvforge {
namespace {

constexpr int kLayers = 2, kKvHeads = 2, kHeadDim = 32, kCapacity = 40, kFilled = 32;
constexpr int kFirst = 4, kDrop = 12;

ModelConfig shift_config() {
  ModelConfig c;
  c.n_layer = kLayers;
  c.n_kv_head = kKvHeads;
  c.head_dim = kHeadDim;
  return c;
}

// [layer][pos][kv head][dim] random rows, K already rotated at its position.
std::vector<float> random_rows(uint32_t seed, const RopeTable* rope) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> rows(size_t(kLayers) * kFilled * kKvHeads * kHeadDim);
  for (float& x : rows) x = d(rng);
  if (rope) {
    std::vector<float> cs(size_t(rope->rope_dim()));
    for (int l = 0; l < kLayers; ++l)
      for (int p = 0; p < kFilled; ++p) {
        rope->angles(p, cs.data());
        rope->apply(rows.data() + (size_t(l) * kFilled + size_t(p)) * kKvHeads * kHeadDim, kKvHeads,
                    kHeadDim, cs.data());
      }
  }
  return rows;
}

const float* row(const std::vector<float>& rows, int layer, int pos) {
  return rows.data() + (size_t(layer) * kFilled + size_t(pos)) * kKvHeads * kHeadDim;
}

// The stored K or V record of (layer, slot, pos, head).
std::vector<uint8_t> record(const StaticKvCache& cache, int layer, int slot, int pos, int head,
                            bool k) {
  std::vector<KvSpan> spans;
  cache.spans(layer, slot, 0, pos + 1, spans);
  const KvSpan& s = spans.at(0);
  const uint8_t* r = k ? s.k + size_t(pos) * s.k_pos_stride + size_t(head) * s.k_head_stride
                       : s.v + size_t(pos) * s.v_pos_stride + size_t(head) * s.v_head_stride;
  const size_t bytes = kv_head_bytes(k ? cache.format().k : cache.format().v, kHeadDim);
  return {r, r + bytes};
}

// What the paged pool's re-rotation makes of the record `rotated_k` encodes to.
std::vector<uint8_t> paged_rerotated(KvDtype t, const float* rotated_k, const RopeTable& rope) {
  std::vector<uint8_t> rec(kv_head_bytes(t, kHeadDim));
  kv_encode_head(t, rotated_k, rec.data(), kHeadDim);
  std::vector<float> rotation(static_cast<size_t>(rope.rope_dim()));
  std::vector<float> scratch(static_cast<size_t>(kHeadDim));
  shift_rotation(rope, -kDrop, rotation.data());
  rerotate_k_records(t, rec.data(), 1, rec.size(), kHeadDim, rope, rotation.data(), scratch.data());
  return rec;
}

std::vector<uint8_t> encoded(KvDtype t, const float* x) {
  std::vector<uint8_t> rec(kv_head_bytes(t, kHeadDim));
  kv_encode_head(t, x, rec.data(), kHeadDim);
  return rec;
}

TEST(StaticKvShift, MovesRecordsDownAsThePagedPoolRotatesThemInPlace) {
  const RopeTable rope(kHeadDim, RopeConfig{}, /*neox=*/true);
  const std::vector<const RopeTable*> ropes(kLayers, &rope);
  const std::vector<float> k = random_rows(3, &rope), v = random_rows(4, nullptr);
  for (const KvDtype t : {KvDtype::F32, KvDtype::F16, KvDtype::BF16, KvDtype::Int8, KvDtype::Q4}) {
    SCOPED_TRACE(kv_dtype_name(t));
    StaticKvCache cache(shift_config(), kCapacity, /*slots=*/2, {t, t});
    for (int slot = 0; slot < 2; ++slot)
      for (int l = 0; l < kLayers; ++l)
        for (int p = 0; p < kFilled; ++p) cache.write(l, slot, p, row(k, l, p), row(v, l, p));
    cache.shift(/*slot=*/1, kFirst, kDrop, kFilled, ropes);
    EXPECT_EQ(cache.length(1), kFilled - kDrop);
    EXPECT_EQ(cache.length(0), kFilled) << "the other slot";
    for (int l = 0; l < kLayers; ++l)
      for (int h = 0; h < kKvHeads; ++h)
        for (int p = 0; p < kFilled - kDrop; ++p) {
          const int from = p < kFirst ? p : p + kDrop;  // the position the record was written at
          const float* k_row = row(k, l, from) + h * kHeadDim;
          const std::vector<uint8_t> want_k =
              p < kFirst ? encoded(t, k_row) : paged_rerotated(t, k_row, rope);
          EXPECT_EQ(record(cache, l, 1, p, h, true), want_k) << "K, layer " << l << " pos " << p;
          EXPECT_EQ(record(cache, l, 1, p, h, false), encoded(t, row(v, l, from) + h * kHeadDim))
              << "V, layer " << l << " pos " << p;
          EXPECT_EQ(record(cache, l, 0, p, h, true), encoded(t, row(k, l, p) + h * kHeadDim))
              << "the other slot's K, layer " << l << " pos " << p;
        }
  }
}

TEST(StaticKvShift, RefusesRangesOutsideTheSlot) {
  const RopeTable rope(kHeadDim, RopeConfig{}, /*neox=*/true);
  const std::vector<const RopeTable*> ropes(kLayers, &rope);
  StaticKvCache cache(shift_config(), kCapacity, 1, {});
  EXPECT_THROW(cache.shift(0, 30, 12, kFilled, ropes), std::out_of_range);
  EXPECT_THROW(cache.shift(1, 4, 12, kFilled, ropes), std::out_of_range);
  EXPECT_THROW(cache.shift(0, 4, 12, kCapacity + 1, ropes), std::out_of_range);
  EXPECT_THROW(cache.shift(0, 4, 12, kFilled, std::span(ropes).first(1)), std::out_of_range);
}

}  // namespace
}  // namespace kvforge
