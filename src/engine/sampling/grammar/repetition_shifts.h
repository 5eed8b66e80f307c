// Bounded repetitions, so that a stack's prefix mask can be derived from its
// neighbour's instead of walking the whole vocabulary again.
//
// grammar_lowering.cpp lowers u{m,n} to m copies of u and then a chain
//   r_j ::= u r_{j-1} | ""   (j = n - m .. 2),   r_1 ::= u | "".
// Inside a u begun in r_j, a stack holds the node resuming at r_{j-1} (the
// reference inside r_j; for a byte-set u, the node of u in r_j itself): at
// most j - 1 more u. The same stack with that node one link higher (in
// r_{j+1}) allows one u more. Where u takes at
// least one byte, telling the two apart needs j + 1 u, so j + 1 bytes: both
// accept alike every byte string of at most j bytes, and end the cut part at
// the same places along it. So inside a JSON string of at most N characters
// one walk (at the first character) serves every later position: the tokens
// of at most j bytes are the neighbour's, and only the few longer tokens are
// walked again.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/sampling/grammar/grammar.h"

namespace kvforge {

struct RepetitionShift {
  uint32_t pos = 0;    // the same place one link higher
  uint32_t bytes = 0;  // j: tokens of at most j bytes agree; 0: no neighbour
};

// (Grammar::elements index) -> for the reference to r_{j-1} inside a chain
// link r_j, or its byte-set u, where a link r_{j+1} refers to r_j: its
// neighbour; elsewhere bytes = 0.
std::vector<RepetitionShift> repetition_shifts(const Grammar& g);

}  // namespace kvforge
