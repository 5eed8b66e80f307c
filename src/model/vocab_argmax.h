// Greedy-only steps on several ranks: instead of gathering every rank's
// logits of its vocabulary rows ([rows][V/N] floats each), the ranks gather
// what an argmax needs from each slice, 4 floats per logits row, and every
// rank rebuilds rows whose argmax is the full row's.
//
// A slice's summary ([rows][kSliceMaxFloats] floats):
//   0  the slice's largest value (argmax_checked's: -0 and +0 equal, -inf a value)
//   1  the vocabulary id of its lowest index holding it
//   2  the vocabulary id of its first NaN or +inf, -1 when none
//   3  that invalid value (0 when none)
// Ids are held as floats, exact below 2^24 (fits_vocab_argmax()).
//
// The rebuilt row is -inf everywhere except, for each slice, its maximum at
// its id and its first invalid value at its id. argmax_checked over it gives
// the full row's result bit for bit: the largest value and the lowest id
// holding it (each slice contributes its lowest, so the lowest of those is
// the row's), and the row's first invalid id with its value; all -inf stays
// all -inf. What the sampler's greedy path reads (Sampler::sample) is
// therefore the same; anything else (logprobs, penalties, top-k, the
// logits callback) needs the full row.
#pragma once

#include <cstdint>

namespace kvforge {

inline constexpr int64_t kSliceMaxFloats = 4;

// Whether ids of a vocabulary of n_vocab fit a float exactly.
inline bool fits_vocab_argmax(int64_t n_vocab) { return n_vocab <= (int64_t(1) << 24); }

// slice: [rows][n] logits of vocabulary ids first .. first + n - 1 (n >= 1);
// out: [rows][kSliceMaxFloats].
void summarize_vocab_slice(const float* slice, int64_t rows, int64_t n, int64_t first, float* out);

// summaries: [slices][rows][kSliceMaxFloats], every slice's; logits:
// [rows][n_vocab], overwritten with the rebuilt rows.
void rebuild_argmax_rows(const float* summaries, int64_t slices, int64_t rows, int64_t n_vocab,
                         float* logits);

}  // namespace kvforge
