// engine/lockstep/step_message: what rank 0 encodes the other ranks decode,
// field for field; a truncated or padded message is an error naming it.
#include "engine/lockstep/step_message.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace kvforge {
namespace {

std::vector<StepCommand> sample_commands() {
  StepCommand add;
  add.add.id = 7;
  add.add.prompt = {1, 2, 3, 40000};
  add.add.params.temperature = 0.5f;
  add.add.params.top_k = 3;
  add.add.params.seed = 0x123456789abcdefull;
  add.add.params.max_tokens = 9;
  add.add.params.stop = {"\n\n", "END"};
  add.add.params.ignore_eos = true;
  add.add.params.context_shift = false;
  add.add.params.n_keep = 12;
  add.add.n = 2;
  add.add.logprobs = {true, 5};
  StepCommand abort;
  abort.op = StepCommand::Op::Abort;
  abort.id = 3;
  StepCommand stop;
  stop.op = StepCommand::Op::StopBranch;
  stop.id = 7;
  stop.branch = 1;
  return {add, abort, stop};
}

TEST(StepMessage, DecodesWhatItEncodes) {
  const std::vector<StepCommand> in = sample_commands();
  const std::vector<uint8_t> bytes = encode_commands(in);
  const std::vector<StepCommand> out = decode_commands(bytes.data(), bytes.size(), 3);
  ASSERT_EQ(out.size(), 3u);
  const AddCommand& a = out[0].add;
  EXPECT_EQ(out[0].op, StepCommand::Op::Add);
  EXPECT_EQ(a.id, 7);
  EXPECT_EQ(a.prompt, in[0].add.prompt);
  EXPECT_EQ(a.params.temperature, 0.5f);
  EXPECT_EQ(a.params.top_k, 3);
  EXPECT_EQ(a.params.seed, in[0].add.params.seed);
  EXPECT_EQ(a.params.max_tokens, 9);
  EXPECT_EQ(a.params.stop, in[0].add.params.stop);
  EXPECT_TRUE(a.params.ignore_eos);
  EXPECT_EQ(a.params.context_shift, false);
  EXPECT_EQ(a.params.n_keep, 12);
  EXPECT_EQ(a.rules, nullptr);
  EXPECT_EQ(a.n, 2);
  EXPECT_TRUE(a.logprobs.enabled);
  EXPECT_EQ(a.logprobs.top, 5);
  EXPECT_EQ(out[1].op, StepCommand::Op::Abort);
  EXPECT_EQ(out[1].id, 3);
  EXPECT_EQ(out[2].op, StepCommand::Op::StopBranch);
  EXPECT_EQ(out[2].branch, 1);
}

TEST(StepMessage, UnsetOptionalsStayUnset) {
  StepCommand c;
  c.add.prompt = {5};
  const std::vector<uint8_t> bytes = encode_commands({c});
  const AddCommand a = decode_commands(bytes.data(), bytes.size(), 1)[0].add;
  EXPECT_FALSE(a.params.seed.has_value());
  EXPECT_FALSE(a.params.max_tokens.has_value());
  EXPECT_FALSE(a.params.context_shift.has_value());
  EXPECT_FALSE(a.params.n_keep.has_value());
}

TEST(StepMessage, TruncatedOrPaddedIsAnError) {
  std::vector<uint8_t> bytes = encode_commands(sample_commands());
  EXPECT_THROW(decode_commands(bytes.data(), bytes.size() - 1, 3), std::runtime_error);
  EXPECT_THROW(decode_commands(bytes.data(), bytes.size(), 2), std::runtime_error);
  bytes.push_back(0);
  EXPECT_THROW(decode_commands(bytes.data(), bytes.size(), 3), std::runtime_error);
}

}  // namespace
}  // namespace kvforge
