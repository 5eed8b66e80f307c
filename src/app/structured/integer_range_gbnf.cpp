// GCC 12 reports a false -Wrestrict in std::string's operator+ ("lit" + str),
// which grammar text is built from throughout this file.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include "app/structured/integer_range_gbnf.h"

#include <algorithm>
#include <vector>

namespace kvforge {
namespace {

// Integers of any size on an open side stop at this many digits.
constexpr int kMaxDigits = 16;

std::string digit_class(char lo, char hi) {
  std::string out;
  if (lo == hi) {
    out.push_back('"');
    out.push_back(lo);
    out.push_back('"');
    return out;
  }
  out.push_back('[');
  out.push_back(lo);
  out.push_back('-');
  out.push_back(hi);
  out.push_back(']');
  return out;
}

std::string any_digits(size_t n) {
  if (n == 0) return "";
  return n == 1 ? "[0-9]" : "[0-9]{" + std::to_string(n) + "}";
}

// Digit strings of one length n between a and b (both n digits), as alternatives.
void same_length(const std::string& a, const std::string& b, const std::string& prefix,
                 std::vector<std::string>& out) {
  const size_t n = a.size();
  if (n == 0) {
    out.push_back(prefix.empty() ? "\"\"" : prefix);
    return;
  }
  const std::string sep = prefix.empty() ? "" : " ";
  if (a[0] == b[0]) {
    same_length(a.substr(1), b.substr(1), prefix + sep + digit_class(a[0], a[0]), out);
    return;
  }
  const std::string rest_a = a.substr(1), rest_b = b.substr(1);
  const bool a_all_zero = rest_a.find_first_not_of('0') == std::string::npos;
  const bool b_all_nine = rest_b.find_first_not_of('9') == std::string::npos;
  char mid_lo = char(a[0] + 1), mid_hi = char(b[0] - 1);
  if (a_all_zero)
    mid_lo = a[0];
  else
    same_length(rest_a, std::string(n - 1, '9'), prefix + sep + digit_class(a[0], a[0]), out);
  if (b_all_nine) mid_hi = b[0];
  if (mid_lo <= mid_hi) {
    std::string alt = prefix + sep + digit_class(mid_lo, mid_hi);
    if (n > 1) alt += " " + any_digits(n - 1);
    out.push_back(alt);
  }
  if (!b_all_nine)
    same_length(std::string(n - 1, '0'), rest_b, prefix + sep + digit_class(b[0], b[0]), out);
}

// Non-negative integers in [a, b]; b < 0 means no upper bound.
void non_negative(int64_t a, int64_t b, std::vector<std::string>& out) {
  std::string sa = std::to_string(a);
  const size_t max_len = b < 0 ? size_t(kMaxDigits) : std::to_string(b).size();
  for (size_t len = sa.size(); len <= max_len; ++len) {
    const std::string lo = len == sa.size() ? sa : "1" + std::string(len - 1, '0');
    const std::string hi = (b >= 0 && len == max_len) ? std::to_string(b) : std::string(len, '9');
    if (len == 1 && lo == "0" && hi == "0") {
      out.push_back("\"0\"");
      continue;
    }
    same_length(lo, hi, "", out);
  }
}

std::string join(const std::vector<std::string>& alts) {
  std::string s;
  for (size_t i = 0; i < alts.size(); ++i) s += (i ? " | " : "") + alts[i];
  std::string out = "(";
  out += s;
  out += ')';
  return out;
}

}  // namespace

std::string integer_range_gbnf(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  std::vector<std::string> alts;
  // Negative part: "-" then magnitudes in [max(1, -hi), -lo].
  if (!lo || *lo < 0) {
    const int64_t mag_lo = (hi && *hi < 0) ? -*hi : 1;
    const int64_t mag_hi = lo ? -*lo : -1;
    std::vector<std::string> neg;
    non_negative(mag_lo, mag_hi, neg);
    std::string alt = "\"-\" ";
    alt += join(neg);
    alts.push_back(std::move(alt));
  }
  if (!hi || *hi >= 0) non_negative(lo ? std::max<int64_t>(*lo, 0) : 0, hi ? *hi : -1, alts);
  return join(alts);
}

}  // namespace kvforge
