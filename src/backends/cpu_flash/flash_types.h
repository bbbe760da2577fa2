#pragma once
// What the CPU_FLASH control code hands its SIMD kernels: the cache view as byte strides, the
// batch's requests, the work plan (items = request × KV head × query-head group × token tile × key
// split) and the per-thread scratch. Plain data, shared by plain C++ and the per-target kernels.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "attention/key_mask.h"
#include "attnrt/attention/attention_backend.h"
#include "attnrt/backends/cpu_flash/cpu_flash_backend.h"

namespace attnrt::cpu_flash {

// Query rows (token × query head) one item holds, and the number a GEMM item aims for: a 128-row
// item converts each K/V tile for twice the rows a 64-row one does (docs/cpu-flash.md §6).
inline constexpr int kMaxRows = 128;
inline constexpr int kTargetRows = 128;
// Requests with at most this many rows per KV head take the GEMV path (head dims along lanes).
inline constexpr int kGemvMaxRows = 8;
// KV heads of one GEMV item at most (each head keeps >= 5 rows' worth of scratch, see the plan).
inline constexpr int kMaxGemvHeads = kMaxRows / 5;
// Keys per GEMM tile; keys per GEMV chunk, and the ways a full unmasked chunk is walked
// interleaved (list_chunk_tokens: one row of four 16-key pages side by side).
inline constexpr int kKeyTile = 64;
inline constexpr int kGemvChunk = 64;
inline constexpr int kGemvChunkWays = 4;
// Split boundaries are multiples of this many keys; a request has at most kMaxSplits splits.
inline constexpr int kSplitAlign = 16;
inline constexpr int kMaxSplits = CpuFlashOptions::kMaxSplits;

// One layer's cache view [kernel blocks, head slots, states, content] as byte strides.
struct CacheView {
  std::byte* base = nullptr;
  DType dtype = DType::f32;
  int element_size = 4;
  int kernel_block_size = 1;
  std::int64_t num_kernel_blocks = 0;
  std::int64_t block_stride = 0;  // bytes
  std::int64_t head_stride = 0;
  std::int64_t state_stride = 0;
  int key_offset = 0;  // content entries
  int key_size = 0;
  int value_offset = 0;
  int value_size = 0;

  std::int64_t num_slots() const { return num_kernel_blocks * kernel_block_size; }
  std::byte* slot(std::int64_t slot, int head) const {
    const std::int64_t block = slot / kernel_block_size;
    const std::int64_t state = slot % kernel_block_size;
    return base + block * block_stride + state * state_stride + head * head_stride;
  }
  // Start of a token's content (K then V) for key position `position` of a block-table row.
  const std::byte* token(const std::int32_t* block_row, int position, int head) const {
    const std::int64_t block = block_row[position / kernel_block_size];
    return base + block * block_stride + (position % kernel_block_size) * state_stride +
           head * head_stride;
  }
  int stored_bytes() const {
    return std::max(key_offset + key_size, value_offset + value_size) * element_size;
  }
};

// One request of the batch, read from the device arrays.
struct Request {
  int query_start = 0;
  int query_len = 0;
  int kv_len = 0;
  int first_position = 0;  // absolute position of the first query token
  const std::int32_t* block_row = nullptr;
};

enum class ItemKind : std::uint8_t { gemm, gemv };

// How one request's work is cut into items. Item i of the request is split i % num_splits of
// base item i / num_splits; base items run over tiles fastest (counted from the last tile, the
// longest under causal masks, so it starts first), then head groups, then KV-head ranges.
struct RequestPlan {
  ItemKind kind = ItemKind::gemm;
  int tile_tokens = 1;  // query tokens per tile
  int num_tiles = 0;
  int group_heads = 1;  // query heads per head group
  int head_groups = 1;
  int kv_heads_per_item = 1;  // GEMV items read several KV heads block by block
  int num_splits = 1;
  int item_begin = 0;               // index of the request's first item in the batch
  int merge_begin = 0;              // index of its first merge (split requests)
  std::int64_t partial_offset = 0;  // floats into the partial area

  int kv_head_ranges(int num_kv_heads) const {
    return (num_kv_heads + kv_heads_per_item - 1) / kv_heads_per_item;
  }
  int base_items(int num_kv_heads) const {
    return kv_head_ranges(num_kv_heads) * head_groups * num_tiles;
  }
  int rows_per_item() const { return kv_heads_per_item * tile_tokens * group_heads; }
};

// A decoded item: which rows it holds and which keys it reads. Rows run over query heads
// fastest, then tokens, then KV heads.
struct Item {
  int request = 0;
  int kv_head = 0;  // first KV head
  int num_kv_heads = 1;
  int head_begin = 0;   // first query head of the group, relative to the KV head's heads
  int num_heads = 0;    // query heads per token and KV head
  int token_begin = 0;  // relative to the request's first query token
  int num_tokens = 0;
  int split = 0;
  int num_splits = 1;
  float* partial = nullptr;  // split items write (O, max, sum) here; others the output

  int rows_per_kv_head() const { return num_tokens * num_heads; }
  int rows() const { return num_kv_heads * rows_per_kv_head(); }
};

// Floats of one split partial: unnormalised rows of O, then row maxima, then row sums.
inline std::int64_t partial_floats(int rows, int value_size) {
  return static_cast<std::int64_t>(rows) * (value_size + 2);
}

// One split partial in that layout: the online-softmax state of its rows (flash_softmax-inl.h).
struct PartialRows {
  float* data = nullptr;
  int rows = 0;
  int value_size = 0;

  float* o(int row) const { return data + static_cast<std::int64_t>(row) * value_size; }
  float& max(int row) const { return data[static_cast<std::int64_t>(rows) * value_size + row]; }
  float& sum(int row) const {
    return data[static_cast<std::int64_t>(rows) * (value_size + 1) + row];
  }
};

// Per-thread scratch: Qᵀ and Oᵀ (rows along lanes), a packed K and V tile, the score tile, and
// per-row masks and softmax state. Every region starts on a cache line.
struct ScratchLayout {
  std::int64_t q = 0, o = 0, k = 0, v = 0, s = 0, row_begin = 0, row_end = 0, max = 0, sum = 0,
               alpha = 0, total = 0;  // float offsets

  static ScratchLayout of(int key_size, int value_size) {
    const auto align = [](std::int64_t floats) { return (floats + 15) / 16 * 16; };
    ScratchLayout s;
    std::int64_t at = 0;
    const auto take = [&](std::int64_t floats) {
      const std::int64_t start = at;
      at += align(floats);
      return start;
    };
    s.q = take(static_cast<std::int64_t>(key_size) * kMaxRows);
    s.o = take(static_cast<std::int64_t>(value_size) * kMaxRows);
    s.k = take(static_cast<std::int64_t>(key_size) * kKeyTile);
    s.v = take(static_cast<std::int64_t>(value_size) * kKeyTile);
    // GEMM: one score tile; GEMV: a chunk's scores for every head of the item.
    s.s = take(std::max<std::int64_t>(kKeyTile, kGemvChunk) * kMaxRows);
    s.row_begin = take(kMaxRows);
    s.row_end = take(kMaxRows);
    s.max = take(kMaxRows);
    s.sum = take(kMaxRows);
    s.alpha = take(kMaxRows);
    s.total = at;
    return s;
  }
  std::size_t bytes() const { return static_cast<std::size_t>(total) * sizeof(float); }
};

// How a GEMM (prefill) item of a bf16 cache multiplies: f32 FMAs on the widened cache, or bf16
// products on AVX512-BF16 dot products or AMX tiles.
enum class PrefillProducts : std::uint8_t { f32, bf16_dot, amx_tiles };

// Everything one forward call's kernels read. Spans point into the workspace.
struct ForwardTask {
  CacheView cache;
  ActivationView query;
  ActivationView output;
  KeyMask mask;
  float scale_log2 = 1.f;  // softmax scale × log2(e): the kernels use exp2
  int num_kv_heads = 1;
  int group_size = 1;     // query heads per KV head
  bool bf16_dot = false;  // bf16 caches may use AVX512-BF16 dot products (CPU permitting)
  // ... and GEMM items these products (bf16_prefill_products_available() permitting).
  PrefillProducts prefill_products = PrefillProducts::f32;
  // The four-row stream prefetches its next step: stream_prefetch_helps() (AMD before Zen 5).
  bool stream_prefetch = false;
  std::span<const Request> requests;
  std::span<const RequestPlan> plans;
  int num_items = 0;
  int num_merges = 0;
  float* partials = nullptr;
  float* scratch = nullptr;  // num_threads × scratch.total floats
  ScratchLayout scratch_layout;
  int num_threads = 1;
};

}  // namespace attnrt::cpu_flash
