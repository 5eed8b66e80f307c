#include "engine/kv/kv_shift.h"

#include <cmath>

namespace kvforge {

void shift_rotation(const RopeTable& rope, int32_t delta, float* cos_sin) {
  rope.angles(delta, cos_sin);
  for (int i = 0; i < rope.n_pairs(); ++i) {
    const double c = cos_sin[2 * i], s = cos_sin[2 * i + 1], m = std::hypot(c, s);
    cos_sin[2 * i] = float(c / m);
    cos_sin[2 * i + 1] = float(s / m);
  }
}

void rerotate_k_records(KvDtype t, uint8_t* first, size_t n, size_t stride, int head_dim,
                        const RopeTable& rope, const float* rotation, float* scratch) {
  for (size_t i = 0; i < n; ++i) {
    uint8_t* record = first + i * stride;
    kv_decode_head(t, record, scratch, head_dim);
    rope.apply(scratch, 1, head_dim, rotation);
    kv_encode_head(t, scratch, record, head_dim);
  }
}

}  // namespace kvforge
