// The static pipeline does not record the mixture-of-experts FFN yet (its
// grouping of tokens by expert changes shape with the routing): compiling
// plans for such a model is refused by name, never run wrongly.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "engine/static_pipeline/plan_compiler.h"
#include "test_models.h"

namespace kvforge {
namespace {

// Compiling a prefill plan throws, naming the architecture.
void expect_refused(const Model& model, const std::string& arch) {
  try {
    compile_plan(model, PlanKind::Prefill, 8, 64, 1, 2);
    FAIL() << "a plan was compiled for " << arch;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(arch + ": --static is not supported yet"),
              std::string::npos)
        << e.what();
  }
}

TEST(StaticMoe, CompilingPlansIsRefusedByName) {
  expect_refused(*testing::make_moe_test_model(8, 2, 32), "qwen3moe");
}

TEST(StaticMoe, CompilingPlansForGptOssIsRefusedByName) {
  RandomModelSpec spec;
  spec.arch = "gpt-oss";
  spec.sliding_window = 6;
  expect_refused(*testing::make_test_model(spec), "gpt-oss");
}

TEST(StaticMoe, CompilingPlansForTheHybridMixturesIsRefusedByName) {
  for (const char* arch : {"qwen35moe", "qwen3next"}) {
    RandomModelSpec spec;
    spec.arch = arch;
    spec.n_layer = 4;  // layer 3 full attention, the others Gated DeltaNet
    expect_refused(*testing::make_test_model(spec), arch);
  }
}

}  // namespace
}  // namespace kvforge
