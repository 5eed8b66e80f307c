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

TEST(StaticMoe, CompilingPlansIsRefusedByName) {
  const auto model = testing::make_moe_test_model(8, 2, 32);
  try {
    compile_plan(*model, PlanKind::Prefill, 8, 64, 1, 2);
    FAIL() << "a plan was compiled for a mixture of experts";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("qwen3moe: --static is not supported yet"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace kvforge
