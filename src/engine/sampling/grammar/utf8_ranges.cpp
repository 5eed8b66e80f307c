#include "engine/sampling/grammar/utf8_ranges.h"

#include <algorithm>

namespace kvforge {
namespace {

constexpr uint32_t kSurrogateFirst = 0xD800;
constexpr uint32_t kSurrogateLast = 0xDFFF;

int encoded_length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

// Last code point of each encoded length.
constexpr uint32_t kLengthEnds[] = {0x7F, 0x7FF, 0xFFFF, kMaxCodePoint};

void encode(uint32_t cp, uint8_t* out, int n) {
  if (n == 1) {
    out[0] = uint8_t(cp);
    return;
  }
  for (int i = n - 1; i > 0; --i) {
    out[i] = uint8_t(0x80 | (cp & 0x3F));
    cp >>= 6;
  }
  static constexpr uint8_t kLead[] = {0, 0, 0xC0, 0xE0, 0xF0};
  out[0] = uint8_t(kLead[n] | cp);
}

// [lo, hi] within one encoded length, split until every byte position is an
// independent range (the classic construction of UTF-8 automata).
void split(uint32_t lo, uint32_t hi, std::vector<ByteRangeSeq>& out) {
  const int n = encoded_length(lo);
  if (encoded_length(hi) != n) {
    const uint32_t end = kLengthEnds[n - 1];
    split(lo, end, out);
    split(end + 1, hi, out);
    return;
  }
  for (int i = 1; i < n; ++i) {
    const uint32_t m = (uint32_t{1} << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split(lo, lo | m, out);
        split((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        split(lo, (hi & ~m) - 1, out);
        split(hi & ~m, hi, out);
        return;
      }
    }
  }
  uint8_t a[4], b[4];
  encode(lo, a, n);
  encode(hi, b, n);
  ByteRangeSeq seq;
  for (int i = 0; i < n; ++i) seq.emplace_back(a[i], b[i]);
  out.push_back(std::move(seq));
}

}  // namespace

uint32_t decode_utf8(std::string_view s, size_t& pos) {
  const uint8_t b0 = uint8_t(s[pos]);
  int n = b0 < 0x80 ? 1 : (b0 >> 5) == 6 ? 2 : (b0 >> 4) == 14 ? 3 : (b0 >> 3) == 30 ? 4 : 0;
  if (n == 0 || pos + size_t(n) > s.size()) {
    ++pos;
    return kInvalidCodePoint;
  }
  static constexpr uint8_t kLeadMask[] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  uint32_t cp = b0 & kLeadMask[n];
  for (int i = 1; i < n; ++i) {
    const uint8_t b = uint8_t(s[pos + size_t(i)]);
    if ((b & 0xC0) != 0x80) {
      ++pos;
      return kInvalidCodePoint;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  if (encoded_length(cp) != n || cp > kMaxCodePoint ||
      (cp >= kSurrogateFirst && cp <= kSurrogateLast)) {
    ++pos;
    return kInvalidCodePoint;
  }
  pos += size_t(n);
  return cp;
}

void append_utf8(std::string& out, uint32_t cp) {
  uint8_t buf[4];
  const int n = encoded_length(cp);
  encode(cp, buf, n);
  out.append(reinterpret_cast<const char*>(buf), size_t(n));
}

std::vector<CodeRange> normalize_ranges(std::vector<CodeRange> ranges, bool negate) {
  std::sort(ranges.begin(), ranges.end());
  std::vector<CodeRange> merged;
  for (const CodeRange& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().second + 1)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  if (!negate) return merged;
  std::vector<CodeRange> complement;
  uint32_t next = 0;
  for (const CodeRange& r : merged) {
    if (r.first > next) complement.emplace_back(next, r.first - 1);
    next = r.second + 1;
  }
  if (next <= kMaxCodePoint) complement.emplace_back(next, kMaxCodePoint);
  return complement;
}

std::vector<ByteRangeSeq> utf8_sequences(const std::vector<CodeRange>& ranges) {
  std::vector<ByteRangeSeq> out;
  for (auto [lo, hi] : ranges) {
    hi = std::min(hi, kMaxCodePoint);
    // Surrogates have no UTF-8 encoding: cut them out.
    if (lo <= kSurrogateLast && hi >= kSurrogateFirst) {
      if (lo < kSurrogateFirst) split(lo, kSurrogateFirst - 1, out);
      if (hi > kSurrogateLast) split(kSurrogateLast + 1, hi, out);
    } else if (lo <= hi) {
      split(lo, hi, out);
    }
  }
  return out;
}

}  // namespace kvforge
