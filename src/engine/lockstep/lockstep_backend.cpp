#include "engine/lockstep/lockstep_backend.h"

#include <cstring>
#include <random>
#include <stdexcept>
#include <string>

namespace kvforge {
namespace {

struct Header {
  uint32_t kind;
  uint32_t n_commands;
  uint64_t payload_bytes;
  uint32_t prompt;  // the next message comes within the deadline
  uint32_t zero;
};
static_assert(sizeof(Header) == kStepHeaderBytes);

// `prompt`: whether rank 0 promised this message within the deadline; if
// not, waits for it as long as it takes (rank 0 may be waiting on a person).
StepMessage receive(Communicator& comm, bool prompt, Header& h) {
  const double deadline = comm.deadline();
  if (!prompt) comm.set_deadline(0);
  try {
    comm.broadcast(&h, sizeof h, 0);
  } catch (...) {
    comm.set_deadline(deadline);
    throw;
  }
  comm.set_deadline(deadline);
  std::vector<uint8_t> payload(h.payload_bytes);
  if (h.payload_bytes) comm.broadcast(payload.data(), payload.size(), 0);
  if (h.kind < 1 || h.kind > 3)
    throw std::runtime_error("step message from rank 0: unknown kind " + std::to_string(h.kind));
  return {StepKind(h.kind), decode_commands(payload.data(), payload.size(), h.n_commands)};
}

void apply(const StepCommand& c, GenerationBackend& backend, int rank) {
  switch (c.op) {
    case StepCommand::Op::Add: {
      const RequestId id = backend.add_request(c.add.prompt, c.add.params, c.add.n, c.add.logprobs);
      if (id != c.add.id)
        throw std::runtime_error("tensor parallel: rank " + std::to_string(rank) +
                                 " gave a request id " + std::to_string(id) + ", rank 0 gave " +
                                 std::to_string(c.add.id) + ": the ranks diverged");
      break;
    }
    case StepCommand::Op::Abort:
      backend.abort(c.id);
      break;
    case StepCommand::Op::StopBranch:
      backend.stop_branch(c.id, c.branch);
      break;
  }
}

}  // namespace

LockstepLeader::LockstepLeader(std::unique_ptr<GenerationBackend> inner, Communicator& comm)
    : inner_(std::move(inner)), comm_(comm) {
  if (!inner_) throw std::invalid_argument("LockstepLeader: no backend");
}

LockstepLeader::~LockstepLeader() {
  if (broken_) return;  // the others end on their own (their deadline, or MPI_Abort)
  try {
    shutdown();
  } catch (const std::exception&) {
    // The others end on their own when a broadcast fails (a peer is gone).
  }
}

RequestId LockstepLeader::add_request(std::span<const int32_t> prompt, const SamplingParams& params,
                                      int n, LogprobOptions logprobs) {
  StepCommand c;
  c.add.params = params;
  // Every rank samples in lockstep, so all need the seed rank 0 samples with.
  if (!c.add.params.seed)
    c.add.params.seed = (uint64_t(std::random_device{}()) << 32) | std::random_device{}();
  c.add.id = inner_->add_request(prompt, c.add.params, n, logprobs);  // a rejection sends nothing
  c.add.prompt.assign(prompt.begin(), prompt.end());
  c.add.n = n;
  c.add.logprobs = logprobs;
  pending_.push_back(std::move(c));
  return pending_.back().add.id;
}

std::vector<StepEvent> LockstepLeader::step() {
  send(StepKind::Step);
  try {
    return inner_->step();
  } catch (const CommunicationError&) {
    broken_ = true;
    throw;
  }
}

bool LockstepLeader::abort(RequestId id) {
  StepCommand c;
  c.op = StepCommand::Op::Abort;
  c.id = id;
  pending_.push_back(c);
  return inner_->abort(id);
}

bool LockstepLeader::stop_branch(RequestId id, int branch) {
  StepCommand c;
  c.op = StepCommand::Op::StopBranch;
  c.id = id;
  c.branch = branch;
  pending_.push_back(c);
  return inner_->stop_branch(id, branch);
}

void LockstepLeader::idle() {
  heartbeats_ = true;
  send(StepKind::Idle);
}

void LockstepLeader::shutdown() {
  if (ended_) return;
  ended_ = true;
  send(StepKind::Shutdown);
}

void LockstepLeader::send(StepKind kind) {
  std::vector<uint8_t> payload = encode_commands(pending_);
  const bool prompt = heartbeats_ || inner_->has_unfinished();
  Header h{uint32_t(kind), uint32_t(pending_.size()), payload.size(), prompt, 0};
  pending_.clear();
  try {
    comm_.broadcast(&h, sizeof h, 0);
    if (!payload.empty()) comm_.broadcast(payload.data(), payload.size(), 0);
  } catch (const CommunicationError&) {
    broken_ = true;
    throw;
  }
}

void follow_leader(GenerationBackend& backend, Communicator& comm) {
  Header h{};
  for (;;) {
    const StepMessage m = receive(comm, h.prompt != 0, h);
    for (const StepCommand& c : m.commands) apply(c, backend, comm.rank());
    if (m.kind == StepKind::Shutdown) return;
    if (m.kind == StepKind::Step) backend.step();
  }
}

}  // namespace kvforge
