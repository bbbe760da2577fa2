#pragma once
// The rows of one work item (query tokens × query heads of one GQA group) and the keys each may
// see within the item's split; plus where a row's query and output live. Plain C++ shared by the
// GEMM and GEMV paths of every SIMD target.

#include <algorithm>
#include <limits>

#include "flash_types.h"

namespace attnrt::cpu_flash {

// Keys [begin, end) of split `split` of `keys`: equal chunks on kSplitAlign boundaries (the last
// splits may be empty).
inline KeyRange split_range(KeyRange keys, int split, int num_splits) {
  if (num_splits <= 1) return keys;
  const int length = keys.end - keys.begin;
  int chunk = (length + num_splits - 1) / num_splits;
  chunk = (chunk + kSplitAlign - 1) / kSplitAlign * kSplitAlign;
  const int begin = std::min(keys.end, keys.begin + split * chunk);
  return {begin, std::min(keys.end, begin + chunk)};
}

// Per-row key bounds and online-softmax state of an item, in scratch; rows are token-major.
struct RowSet {
  int count = 0;
  int padded = 0;     // count rounded up to whole vectors
  KeyRange keys;      // keys any row sees within the split
  int max_begin = 0;  // every row sees [max_begin, min_end)
  int min_end = 0;
  float* begin = nullptr;  // per row, as floats for vector compares; padded rows see nothing
  float* end = nullptr;
  float* max = nullptr;    // running max (log2 units)
  float* sum = nullptr;    // running sum of exp2(score - max)
  float* alpha = nullptr;  // rescale of the last tile
};

inline const Request& request_of(const ForwardTask& task, const Item& item) {
  return task.requests[item.request];
}

inline int row_token(const Item& item, int row) {
  return item.token_begin + row % item.rows_per_kv_head() / item.num_heads;
}

inline int row_head(const ForwardTask& task, const Item& item, int row) {
  const int kv_head = item.kv_head + row / item.rows_per_kv_head();
  return kv_head * task.group_size + item.head_begin + row % item.num_heads;
}

inline const float* query_row(const ForwardTask& task, const Item& item, int row) {
  return task.query.row(request_of(task, item).query_start + row_token(item, row),
                        row_head(task, item, row));
}

inline float* output_row(const ForwardTask& task, const Item& item, int row) {
  return task.output.row(request_of(task, item).query_start + row_token(item, row),
                         row_head(task, item, row));
}

// The item's keys before splitting: the union of its tokens' visible ranges.
inline KeyRange item_keys(const ForwardTask& task, const Item& item) {
  const Request& request = request_of(task, item);
  KeyRange keys{std::numeric_limits<int>::max(), 0};
  for (int t = item.token_begin; t < item.token_begin + item.num_tokens; ++t) {
    const KeyRange visible = visible_keys(task.mask, request.first_position + t, request.kv_len);
    if (visible.begin >= visible.end) continue;
    keys.begin = std::min(keys.begin, visible.begin);
    keys.end = std::max(keys.end, visible.end);
  }
  return keys.begin < keys.end ? keys : KeyRange{0, 0};
}

inline RowSet prepare_rows(const ForwardTask& task, const Item& item, int lanes, float* scratch) {
  const ScratchLayout& layout = task.scratch_layout;
  const Request& request = request_of(task, item);
  RowSet rows;
  rows.count = item.rows();
  rows.padded = (rows.count + lanes - 1) / lanes * lanes;
  rows.keys = split_range(item_keys(task, item), item.split, item.num_splits);
  rows.begin = scratch + layout.row_begin;
  rows.end = scratch + layout.row_end;
  rows.max = scratch + layout.max;
  rows.sum = scratch + layout.sum;
  rows.alpha = scratch + layout.alpha;
  rows.max_begin = rows.keys.begin;
  rows.min_end = rows.keys.end;
  for (int m = 0; m < rows.padded; ++m) {
    KeyRange visible{0, 0};
    if (m < rows.count) {
      visible =
          visible_keys(task.mask, request.first_position + row_token(item, m), request.kv_len);
      visible.begin = std::max(visible.begin, rows.keys.begin);
      visible.end = std::min(visible.end, rows.keys.end);
      if (visible.begin >= visible.end) visible = {0, 0};
      rows.max_begin = std::max(rows.max_begin, visible.begin);
      rows.min_end = std::min(rows.min_end, visible.end);
    }
    rows.begin[m] = static_cast<float>(visible.begin);
    rows.end[m] = static_cast<float>(visible.end);
    rows.max[m] = -std::numeric_limits<float>::infinity();
    rows.sum[m] = 0.f;
    rows.alpha[m] = 1.f;
  }
  return rows;
}

// Content addresses (K then V) of keys [first, first + count) of the item's request for its first
// KV head. `ways` > 1 lists them that many ways interleaved (keys n, n + count / ways, ...: with
// 16-key pages, the same row of `ways` pages side by side), so that walking the list reads
// several pages at once, which hides each page's first miss behind the others'
// (docs/cpu-flash.md §6). Only for chunks nothing masks, whose count is a
// multiple of `ways`: the softmax does not care about the order then.
inline void list_chunk_tokens(const ForwardTask& task, const Item& item, int first, int count,
                              int ways, const std::byte** tokens) {
  const std::int32_t* block_row = request_of(task, item).block_row;
  const int spacing = count / ways;
  for (int n = 0; n < count; ++n) {
    const int key = (n % ways) * spacing + n / ways;
    tokens[n] = task.cache.token(block_row, first + key, item.kv_head);
  }
}

// Every row sees every key of the split (a decode token's heads), so no key needs masking.
inline bool rows_share_keys(const RowSet& rows) {
  return rows.max_begin == rows.keys.begin && rows.min_end == rows.keys.end;
}

// Rows [first, first + count) of `rows` (the same keys), e.g. one KV head's rows of an item.
inline RowSet slice_rows(const RowSet& rows, int first, int count) {
  RowSet slice = rows;
  slice.count = count;
  slice.padded = count;
  slice.begin += first;
  slice.end += first;
  slice.max += first;
  slice.sum += first;
  slice.alpha += first;
  return slice;
}

}  // namespace attnrt::cpu_flash
