// `kvforge grammar bench -m MODEL FILE...`: time per token of the grammar
// engine on a model's vocabulary, over random walks of each grammar or schema
// (a token drawn uniformly among those allowed at each step): the mask
// (allowed tokens) and the advance, as p50 / p99 / max in microseconds, and
// the time to the first mask (compile included).
#pragma once

#include <string>
#include <vector>

#include "app/structured/constraint_spec.h"

namespace kvforge::cli {

// The grammar in a file: a JSON schema if its name ends in .json (or
// `schema`), else GBNF. Throws std::invalid_argument if it cannot be read.
ConstraintSpec constraint_spec_of_file(const std::string& path, bool schema);

// byte_walks: every walk over the byte trie (ConstraintLimits::class_walks
// off), the baseline the class trie is measured against.
void run_grammar_bench(const std::string& model, const std::vector<std::string>& files, int walks,
                       int max_steps, bool byte_walks = false);

}  // namespace kvforge::cli
