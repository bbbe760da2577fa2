#pragma once
// Validation of CPU_FLASH's inputs (the same rules and messages as CPU_REFERENCE, prefixed
// "CPU_FLASH"): everything is checked before anything is written.

#include <span>
#include <string_view>

#include "attnrt/attention/attention_backend.h"
#include "flash_plan.h"
#include "flash_types.h"

namespace attnrt::cpu_flash {

// The byte-stride view of a layer's cache for `shape`; `kernel` names the caller in errors.
CacheView make_cache_view(const Tensor& view, const AttentionShape& shape, std::string_view kernel);

// Checks the shape and the sizes of the metadata arrays.
void check_forward(const AttentionForwardArgs& args, const CacheView& cache);
// Reads every request into `requests` (num_reqs long) and checks it; returns the batch's real
// token count. Call after check_forward.
int read_and_check_requests(const AttentionForwardArgs& args, const CacheView& cache,
                            std::span<Request> requests);

// Checks the K/V rows and that every slot is PAD_SLOT_ID or inside the view.
void check_write(const KVWriteArgs& args, const CacheView& cache);

}  // namespace attnrt::cpu_flash
