#pragma once
// How many blocks the requests of a state layer hold (SEMANTICS §4.4). A state layer keeps one
// fixed-size state per request: vLLM's "none" cache mode holds one block per request, plus one
// per draft token; "align" (its prefix-caching mode) holds two. Prefix caching of states is out
// of scope, so attnrt plans "none" and reports "align" for comparison.

#include <cstdint>
#include <optional>
#include <string>

#include "attnrt/config/engine_config.h"
#include "attnrt/core/export.h"

namespace attnrt {

using StateCacheMode = MambaCacheMode;  // "all" is refused by validate_config

// Blocks one request needs in a state group: 1 + drafts ("none") or 2 + drafts ("align").
// Throws Error for a negative draft count.
ATTNRT_API std::int64_t state_blocks_per_request(StateCacheMode mode, int num_speculative_tokens);

// With FULL CUDA graphs every decode request needs its state block at capture: vLLM's error when
// max_num_seqs exceeds the blocks of the pool, else nullopt.
ATTNRT_API std::optional<std::string> state_blocks_refusal(int max_num_seqs,
                                                           std::int64_t num_blocks);
// The same, thrown as an Error.
ATTNRT_API void check_max_num_seqs_fits_state_blocks(int max_num_seqs, std::int64_t num_blocks);

}  // namespace attnrt
