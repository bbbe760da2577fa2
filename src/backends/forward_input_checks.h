#pragma once
// Input rules every CPU paged-attention backend applies before it writes anything: the layer's
// shape against the activation rows, and the step's metadata arrays against num_reqs. Messages
// start with the backend's name ("CPU_FLASH forward: ...").

#include <string_view>

#include "attnrt/attention/attention_backend.h"

namespace attnrt::backend_checks {

// Query heads divide into KV-head groups, windowed types are causal with a positive window or
// chunk, and the query/output rows have the layer's heads and key/value sizes.
void check_forward_shape(std::string_view backend, const AttentionForwardArgs& args, int key_size,
                         int value_size);

// query_start_loc (num_reqs + 1 entries, starting at 0), seq_lens, block-table rows and, for
// cross attention, encoder_seq_lens are long enough for num_reqs requests.
void check_step_arrays(std::string_view backend, const CommonAttentionMetadata& common,
                       bool cross);

}  // namespace attnrt::backend_checks
