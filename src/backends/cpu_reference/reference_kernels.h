#pragma once
// The reference kernels behind CpuReferenceBackend: plain loops, fp32 accumulation. Both validate
// their whole input before writing anything, and throw Error naming the token or request at fault.

#include "attnrt/attention/attention_backend.h"

namespace attnrt::cpu_reference {

// Stores K and V (MLA: the latent) of every token whose slot is not PAD_SLOT_ID.
void write_kv(const KVWriteArgs& args);

// Varlen paged attention of every query row of the batch over its request's cached keys.
void attention_forward(const AttentionForwardArgs& args);

}  // namespace attnrt::cpu_reference
