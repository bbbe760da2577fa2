#pragma once
// The documented range of every integer the config gives (docs/config.md, "Limits"). The loader
// and validate_config refuse a value outside its range, naming its JSON path, so that every size
// derived from these values downstream stays far inside 64 bits. Each bound is generous next to
// real models (the largest context in 2026 is ~10M tokens, the widest head 576 entries).

#include <cstddef>
#include <cstdint>

namespace attnrt::limits {

inline constexpr int kMaxModelLen = 1 << 26;       // tokens: model.max_model_len, max_encoder_len
inline constexpr int kMaxHiddenSize = 1 << 20;     // model.hidden_size
inline constexpr int kMaxVocabSize = 1 << 24;      // model.vocab_size
inline constexpr int kMaxHeads = 16384;            // num_heads, num_kv_heads
inline constexpr int kMaxHeadSize = 16384;         // head_size, head_size_v
inline constexpr int kMaxWindow = kMaxModelLen;    // sliding_window, attention_chunk_size
inline constexpr std::size_t kMaxNameBytes = 256;  // layer, model, profile and backend names
inline constexpr int kMaxRepeat = 100000;          // one repeat count
inline constexpr int kMaxRepeatNesting = 16;       // repeat blocks inside repeat blocks
inline constexpr std::size_t kMaxLayers = 100000;  // the expanded model.layers
inline constexpr int kMaxJsonDepth = 64;           // nested objects and arrays in the file
inline constexpr std::size_t kMaxConfigBytes = std::size_t{64} << 20;  // a config file
inline constexpr int kMaxBlockSize = 65536;  // cache.block_size, kernel block sizes
inline constexpr std::int64_t kMaxNumBlocks = (std::int64_t{1} << 31) - 1;  // int32 block ids
inline constexpr std::uint64_t kMaxMemory = std::uint64_t{1} << 48;         // cache.memory, bytes
inline constexpr int kMaxBatchedTokens = 1 << 21;         // max_num_batched_tokens, capture sizes
inline constexpr std::size_t kMaxCaptureSizes = 4096;     // entries of compilation.capture_sizes
inline constexpr int kMaxNumSeqs = 65536;                 // scheduler.max_num_seqs
inline constexpr int kMaxSpeculativeTokens = 128;         // speculative.num_speculative_tokens
inline constexpr int kMaxUbatches = 16;                   // parallel.num_ubatches
inline constexpr int kMaxTensorParallel = 1024;           // parallel.tensor_parallel_size
inline constexpr int kMaxLoRACases = 65536;               // one lora.capture_cases entry
inline constexpr std::size_t kMaxLoRACaseCount = 1024;    // entries of lora.capture_cases
inline constexpr std::size_t kMaxBackendProfiles = 1024;  // entries of backends
inline constexpr int kMaxStateDim = 1 << 20;  // a state layer's sizes, groups and head counts
inline constexpr int kMaxConvKernel = 64;     // a state layer's conv_kernel

}  // namespace attnrt::limits
