// The static pipeline does not run hybrid models yet (its plans record no
// linear-attention step and its cache holds no recurrent state): compiling a
// plan for one is refused naming the architecture, never run wrong.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "engine/static_pipeline/plan_compiler.h"
#include "model/model.h"
#include "model/random_model.h"

namespace kvforge {
namespace {

TEST(StaticHybrid, PlansForAHybridModelAreRefused) {
  RandomModelSpec spec;
  spec.arch = "qwen35";
  spec.n_layer = 4;
  spec.head_dim = 32;
  const auto bytes = make_random_model(spec).to_bytes();
  const auto model = Model::from_file(gguf::GgufFile::from_bytes(bytes, "q35"));
  for (const PlanKind kind : {PlanKind::Prefill, PlanKind::Generate}) {
    try {
      compile_plan(*model, kind, 4, 64, 1, 1);
      FAIL() << "a static plan was compiled for a hybrid model";
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("qwen35"), std::string::npos) << what;
      EXPECT_NE(what.find("linear-attention"), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace kvforge
