// Every weight format refuses a row holding NaN or ±infinity (std::invalid_argument from its
// quantize_row_*), one row per format: the row's length, the index of the bad value and the
// values tried there (the rest of the row is finite).
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/formats/iq4_nl.h"
#include "core/formats/iq4_xs.h"
#include "core/formats/q2_k.h"
#include "core/formats/q3_k.h"
#include "core/formats/q4_0.h"
#include "core/formats/q4_1.h"
#include "core/formats/q4_k.h"
#include "core/formats/q5_0.h"
#include "core/formats/q5_1.h"
#include "core/formats/q5_k.h"
#include "core/formats/q6_k.h"
#include "core/formats/q8_0.h"

namespace kvforge {
namespace {

struct NonFiniteRow {
  const char* name;
  int n;         // row length
  float filler;  // every other value of the row
  int at;
  std::vector<float> values;                    // tried in turn at `at`, each must be refused
  void (*quantize)(const float* x, int64_t n);  // the format's quantize_row_*
};

// Test names and failure messages name the format.
void PrintTo(const NonFiniteRow& r, std::ostream* os) { *os << r.name; }

template <typename Block, int kBlockElems, void (*kQuantize)(const float*, Block*, int64_t)>
void quantize_into_blocks(const float* x, int64_t n) {
  std::vector<Block> blocks(size_t(n / kBlockElems));
  kQuantize(x, blocks.data(), n);
}

const NonFiniteRow kRows[] = {
    {"Q4_0", 64, 0.0f, 40, {-INFINITY}, quantize_into_blocks<BlockQ4_0, 32, quantize_row_q4_0>},
    {"Q8_0", 32, 0.0f, 17, {NAN, INFINITY}, quantize_into_blocks<BlockQ8_0, 32, quantize_row_q8_0>},
    {"Q4_1", 64, 0.0f, 40, {NAN}, quantize_into_blocks<BlockQ4_1, 32, quantize_row_q4_1>},
    {"Q5_0", 64, 0.0f, 40, {NAN}, quantize_into_blocks<BlockQ5_0, 32, quantize_row_q5_0>},
    {"Q5_1", 64, 0.0f, 3, {INFINITY}, quantize_into_blocks<BlockQ5_1, 32, quantize_row_q5_1>},
    {"IQ4_NL", 64, 0.0f, 3, {INFINITY}, quantize_into_blocks<BlockIQ4_NL, 32, quantize_row_iq4_nl>},
    {"Q2_K", 512, 1.0f, 300, {NAN}, quantize_into_blocks<BlockQ2_K, 256, quantize_row_q2_k>},
    {"Q3_K", 256, 1.0f, 17, {INFINITY}, quantize_into_blocks<BlockQ3_K, 256, quantize_row_q3_k>},
    {"Q4_K", 256, 1.0f, 255, {NAN}, quantize_into_blocks<BlockQ4_K, 256, quantize_row_q4_k>},
    {"Q5_K", 512, 1.0f, 300, {NAN}, quantize_into_blocks<BlockQ5_K, 256, quantize_row_q5_k>},
    {"Q6_K", 512, 1.0f, 300, {-INFINITY}, quantize_into_blocks<BlockQ6_K, 256, quantize_row_q6_k>},
    {"IQ4_XS",
     512,
     1.0f,
     511,
     {INFINITY},
     quantize_into_blocks<BlockIQ4_XS, 256, quantize_row_iq4_xs>},
};

class NonFiniteInput : public ::testing::TestWithParam<NonFiniteRow> {};

TEST_P(NonFiniteInput, IsRefused) {
  const NonFiniteRow& r = GetParam();
  std::vector<float> x(size_t(r.n), r.filler);
  for (float v : r.values) {
    x[size_t(r.at)] = v;
    EXPECT_THROW(r.quantize(x.data(), r.n), std::invalid_argument) << v;
  }
}

std::string row_name(const ::testing::TestParamInfo<NonFiniteRow>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Formats, NonFiniteInput, ::testing::ValuesIn(kRows), row_name);

}  // namespace
}  // namespace kvforge
