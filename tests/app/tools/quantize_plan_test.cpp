// kvforge quantize's plan against llama-quantize's choices: for each mixture
// (and each with --pure), the type of every tensor of four make-model models
// equals what llama-quantize wrote for the same model. The tables under
// data/quantize_mixtures come from tools/quantize_mixtures/make_tables.py
// (which runs llama-quantize and reads the types back with gguf-py); the
// models are rebuilt here in memory from the shape and seed in each table.
#include "app/tools/quantize_plan.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "app/tools/quantize_model.h"
#include "app/tools/quantize_recipe.h"
#include "edited_model.h"
#include "model/random_model.h"
#include "test_models.h"
#include "testdata.h"

namespace kvforge {
namespace {

struct MixtureTable {
  std::map<std::string, std::string> spec;               // "n_embd" -> "256"
  std::vector<std::string> mixtures;                     // the columns
  std::map<std::string, std::vector<std::string>> rows;  // tensor -> one entry per column
};

MixtureTable read_table(const std::filesystem::path& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.is_open()) << path;
  MixtureTable t;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string first, word;
    words >> first;
    std::vector<std::string> rest;
    while (words >> word) rest.push_back(word);
    if (first == "spec") {
      for (const std::string& kv : rest)
        t.spec[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
    } else if (first == "tensor") {
      t.mixtures = rest;
    } else {
      EXPECT_EQ(rest.size(), t.mixtures.size()) << path << ": row " << first;
      t.rows[first] = rest;
    }
  }
  return t;
}

// The model make_tables.py wrote with `kvforge make-model`, rebuilt in memory.
gguf::GgufFile rebuild_model(const MixtureTable& table) {
  RandomModelSpec spec;
  const auto field = [&](const char* key) { return std::stoi(table.spec.at(key)); };
  spec.n_embd = field("n_embd");
  spec.n_layer = field("n_layer");
  spec.n_head = field("n_head");
  spec.n_kv_head = field("n_kv_head");
  spec.n_ff = field("n_ff");
  spec.n_vocab = field("n_vocab");
  spec.tied_output = field("tied") != 0;
  spec.seed = uint64_t(field("seed"));
  return gguf::GgufFile::from_bytes(make_random_model(spec).to_bytes());
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

class QuantizePlanTest : public ::testing::TestWithParam<const char*> {};

TEST_P(QuantizePlanTest, MatchesLlamaQuantize) {
  const std::string name = GetParam();
  const bool pure = name.ends_with(".pure");
  const MixtureTable table = read_table(testing::source_dir() /
                                        "tests/app/tools/data/quantize_mixtures" / (name + ".txt"));
  ASSERT_EQ(table.mixtures.size(), quant_mixtures().size()) << "a mixture without a column";
  const gguf::GgufFile model = rebuild_model(table);
  const QuantModelFacts facts = read_quant_facts(model);
  const std::vector<QuantTensor> tensors = read_quant_tensors(model);
  ASSERT_EQ(tensors.size() + 1, table.rows.size()) << "tensor count differs from the table's";
  for (size_t col = 0; col < table.mixtures.size(); ++col) {
    const std::string& mixture = table.mixtures[col];
    const QuantRecipe recipe = parse_quant_recipe(mixture, pure);
    EXPECT_EQ(std::to_string(uint32_t(recipe.ftype)), table.rows.at("general.file_type")[col])
        << mixture;
    for (const PlannedTensor& p : plan_quantization(facts, tensors, recipe)) {
      const auto row = table.rows.find(p.name);
      ASSERT_NE(row, table.rows.end()) << p.name << " is not in the table";
      EXPECT_EQ(upper(type_name(p.to)), row->second[col]) << mixture << ": " << p.name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, QuantizePlanTest,
                         ::testing::Values("e256-ff768-gqa4", "e256-ff768-gqa4.pure",
                                           "e256-ff704-gqa2", "e256-ff704-gqa2.pure",
                                           "e320-ff720-tied", "e320-ff720-tied.pure",
                                           "e64-l80-gqa4", "e64-l80-gqa4.pure"),
                         [](const auto& param_info) {
                           std::string s = param_info.param;
                           for (char& c : s)
                             if (c == '-' || c == '.') c = '_';
                           return s;
                         });

TEST(QuantizeRecipe, SingleTypesArePureAndMixtureNamesWin) {
  const QuantRecipe q4k = parse_quant_recipe("q4_k", false);
  EXPECT_TRUE(q4k.pure);
  EXPECT_EQ(q4k.base, GgmlType::Q4_K);
  EXPECT_EQ(q4k.ftype, LlamaFtype::MOSTLY_Q4_K_M);  // llama-quantize's id for the name Q4_K
  const QuantRecipe q4_0 = parse_quant_recipe("q4_0", false);
  EXPECT_FALSE(q4_0.pure);  // the mixture: output.weight gets Q6_K
  EXPECT_EQ(q4_0.name, "Q4_0");
  EXPECT_TRUE(parse_quant_recipe("Q4_0", true).pure);
  try {
    parse_quant_recipe("q9_9", false);
    FAIL() << "accepted q9_9";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("q9_9"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Q4_K_M"), std::string::npos) << e.what();
  }
}

TEST(QuantizeRecipe, PlannedTypeWithoutEncoderNamesTensorAndTypes) {
  RandomModelSpec spec;
  const gguf::GgufFile model = gguf::GgufFile::from_bytes(make_random_model(spec).to_bytes());
  std::vector<PlannedTensor> plan = plan_quantization(
      read_quant_facts(model), read_quant_tensors(model), parse_quant_recipe("q8_0", false));
  plan[1].quantized = true;
  plan[1].to = GgmlType::IQ2_XXS;  // a type no one is adding an encoder for
  const auto out = std::filesystem::temp_directory_path() / "kvforge_plan_unsupported.gguf";
  try {
    write_quantized(model, plan, LlamaFtype::MOSTLY_Q8_0, out);
    FAIL() << "wrote an iq2_xxs tensor";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'" + plan[1].name + "'"), std::string::npos) << what;
    EXPECT_NE(what.find("iq2_xxs"), std::string::npos) << what;
    EXPECT_NE(what.find("q8_0"), std::string::npos) << what;  // the supported list
  }
  EXPECT_FALSE(std::filesystem::exists(out));
}

// Head counts stored per layer (Gemma 4 files may): the first layer's, as
// llama-quantize's n_gqa() reads them.
TEST(QuantizeFacts, PerLayerHeadCountsReadTheFirstLayer) {
  const auto per_layer = [](uint32_t n) {
    return gguf::Value::array(gguf::ValueType::UINT32,
                              std::vector<gguf::Value>(9, gguf::Value::u32(n)));
  };
  const gguf::GgufFile model =
      testing::edited_model(testing::gemma4_test_spec(3, 8), [&](gguf::GgufWriter& w) {
        w.set("gemma4.attention.head_count", per_layer(4));
        w.set("gemma4.attention.head_count_kv", per_layer(2));
      });
  const QuantModelFacts facts = read_quant_facts(model);
  EXPECT_EQ(facts.n_head, 4);
  EXPECT_EQ(facts.n_head_kv, 2);
}

// general.file_type ids as llama.cpp names them: every mixture by its own
// name, the whole-file float types, nothing for an id kvforge does not plan.
TEST(FileTypeNameTest, NamesMixturesAndFloatFiles) {
  EXPECT_EQ(file_type_name(0), "F32");
  EXPECT_EQ(file_type_name(1), "F16");
  EXPECT_EQ(file_type_name(32), "BF16");
  EXPECT_EQ(file_type_name(15), "Q4_K_M");
  for (const QuantMixture& m : quant_mixtures())
    EXPECT_EQ(file_type_name(uint32_t(m.ftype)), m.name);
  EXPECT_EQ(file_type_name(4), "");  // Q4_1_SOME_F16, long gone from llama.cpp
  EXPECT_EQ(file_type_name(0xFFFFFFFF), "");
}

}  // namespace
}  // namespace kvforge
