#include "model/vocab_argmax.h"

#include <algorithm>
#include <limits>

#include "core/ops/argmax.h"

namespace kvforge {

void summarize_vocab_slice(const float* slice, int64_t rows, int64_t n, int64_t first, float* out) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* row = slice + i * n;
    const ArgmaxResult r = argmax_checked(row, n);
    float* s = out + i * kSliceMaxFloats;
    if (r.first_invalid >= 0) {
      // argmax_checked's index is meaningless then: any finite or -inf value
      // stands in for the maximum, the invalid one decides.
      s[0] = -std::numeric_limits<float>::infinity();
      s[1] = float(first);
      s[2] = float(first + r.first_invalid);
      s[3] = row[r.first_invalid];
    } else {
      s[0] = row[r.index];
      s[1] = float(first + r.index);
      s[2] = -1;
      s[3] = 0;
    }
  }
}

void rebuild_argmax_rows(const float* summaries, int64_t slices, int64_t rows, int64_t n_vocab,
                         float* logits) {
  std::fill_n(logits, rows * n_vocab, -std::numeric_limits<float>::infinity());
  for (int64_t k = 0; k < slices; ++k)
    for (int64_t i = 0; i < rows; ++i) {
      const float* s = summaries + (k * rows + i) * kSliceMaxFloats;
      float* row = logits + i * n_vocab;
      row[int64_t(s[1])] = s[0];
      if (s[2] >= 0) row[int64_t(s[2])] = s[3];
    }
}

}  // namespace kvforge
