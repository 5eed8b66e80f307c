#include "engine/static_pipeline/static_config.h"

#include <charconv>
#include <stdexcept>

#include "model/model_fingerprint.h"

namespace kvforge {
namespace {

[[noreturn]] void bad(const std::string& what) {
  throw std::invalid_argument("static configuration: " + what);
}

}  // namespace

void StaticConfig::validate() const {
  if (max_prompt_len < 1) bad("max_prompt_len " + std::to_string(max_prompt_len) + " must be >= 1");
  if (min_response_len < 1)
    bad("min_response_len " + std::to_string(min_response_len) + " must be >= 1");
  if (int64_t(max_prompt_len) + min_response_len > (int64_t(1) << 24))
    bad("capacity " + std::to_string(int64_t(max_prompt_len) + min_response_len) +
        " exceeds 16777216 positions");
  if (prefill_chunk < 1 || (prefill_chunk & (prefill_chunk - 1)) != 0)
    bad("prefill_chunk " + std::to_string(prefill_chunk) + " must be a power of two");
  if (prefill_chunk > capacity())
    bad("prefill_chunk " + std::to_string(prefill_chunk) + " exceeds the capacity " +
        std::to_string(capacity()));
  if (generate_variants.empty()) bad("generate_variants is empty");
  for (size_t i = 0; i < generate_variants.size(); ++i) {
    if (generate_variants[i] < 1)
      bad("generate variant " + std::to_string(generate_variants[i]) + " must be >= 1");
    if (i > 0 && generate_variants[i] <= generate_variants[i - 1])
      bad("generate_variants " + format_variant_list(generate_variants) +
          " must be strictly ascending");
  }
  if (generate_variants.back() != capacity())
    bad("generate_variants " + format_variant_list(generate_variants) +
        " must end at the capacity max_prompt_len + min_response_len = " +
        std::to_string(capacity()));
  if (slots < 1 || slots > 256) bad("slots " + std::to_string(slots) + " must be in [1, 256]");
}

std::string StaticConfig::describe() const {
  std::string kv = kv_dtype_name(kv_format.k);
  if (kv_format.v != kv_format.k) kv = std::string("K ") + kv + ", V " + kv_dtype_name(kv_format.v);
  return "max_prompt_len " + std::to_string(max_prompt_len) + ", min_response_len " +
         std::to_string(min_response_len) + " (capacity " + std::to_string(capacity()) +
         "), prefill chunk " + std::to_string(prefill_chunk) + ", variants " +
         format_variant_list(generate_variants) + ", slots " + std::to_string(slots) + ", KV " + kv;
}

std::vector<int32_t> parse_variant_list(const std::string& text) {
  std::vector<int32_t> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find(',', begin);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(begin, end - begin);
    int32_t value = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size())
      throw std::invalid_argument("generate variants '" + text +
                                  "': expected comma-separated integers such as 256,512,1152");
    out.push_back(value);
    begin = end + 1;
  }
  return out;
}

std::string format_variant_list(const std::vector<int32_t>& variants) {
  std::string s;
  for (size_t i = 0; i < variants.size(); ++i) {
    if (i > 0) s.push_back(',');
    s.append(std::to_string(variants[i]));
  }
  return s;
}

OverflowPolicy parse_overflow_policy(const std::string& text) {
  if (text == "error") return OverflowPolicy::Error;
  if (text == "truncate-left") return OverflowPolicy::TruncateLeft;
  throw std::invalid_argument("--overflow '" + text + "': expected error or truncate-left");
}

uint64_t config_fingerprint(const StaticConfig& c) {
  Fnv1a64 h;
  h.str("kvforge static config v1");
  h.u64(uint64_t(c.max_prompt_len));
  h.u64(uint64_t(c.min_response_len));
  h.u64(uint64_t(c.prefill_chunk));
  h.u64(c.generate_variants.size());
  for (int32_t v : c.generate_variants) h.u64(uint64_t(v));
  h.u64(uint64_t(c.slots));
  h.u64(uint64_t(c.kv_format.k));
  h.u64(uint64_t(c.kv_format.v));
  return h.value();
}

}  // namespace kvforge
