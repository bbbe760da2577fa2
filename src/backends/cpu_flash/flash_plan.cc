// Work planning of CPU_FLASH: per request a GEMM or GEMV tiling, key splits when the batch is too
// small to keep the threads busy, and the item/merge numbering the kernels decode.

#include "flash_plan.h"

#include <algorithm>

namespace attnrt::cpu_flash {
namespace {

int ceil_div(std::int64_t a, std::int64_t b) {
  return static_cast<int>((a + b - 1) / b);
}

// Tiling of one request without splits. GEMV items read `gemv_kv_heads` KV heads at most.
RequestPlan tile_request(const Request& request, int group_size, int num_kv_heads,
                         int gemv_kv_heads) {
  RequestPlan plan;
  if (request.query_len == 0) {
    plan.num_tiles = 0;  // padded or idle: nothing to do
    return plan;
  }
  if (request.query_len * group_size <= kGemvMaxRows) {
    plan.kind = ItemKind::gemv;
    plan.tile_tokens = request.query_len;
    plan.num_tiles = 1;
    plan.group_heads = group_size;
    plan.head_groups = 1;
    // Every KV head of a block in one pass: the block's page is read front to back. The kernels
    // keep each head's rows twice in scratch (plain, and rotated in groups of 4).
    const int rows = request.query_len * group_size;
    plan.kv_heads_per_item =
        std::clamp(std::min(kMaxRows / (2 * rows + 3), gemv_kv_heads), 1, num_kv_heads);
    static_assert(kMaxRows / (2 * 1 + 3) <= kMaxGemvHeads);
    return plan;
  }
  plan.kind = ItemKind::gemm;
  plan.group_heads = std::min(group_size, kMaxRows);
  plan.head_groups = ceil_div(group_size, plan.group_heads);
  plan.tile_tokens = std::max(1, kTargetRows / plan.group_heads);
  plan.num_tiles = ceil_div(request.query_len, plan.tile_tokens);
  return plan;
}

// Splits proportional to each request's keys so the batch has about 4 items per thread.
void choose_splits(std::span<const Request> requests, int num_kv_heads, const PlanPolicy& policy,
                   std::span<RequestPlan> plans) {
  const int target_items = 4 * policy.num_threads;
  std::int64_t base_items = 0;
  std::int64_t work = 0;
  for (std::size_t r = 0; r < requests.size(); ++r) {
    const int base = plans[r].base_items(num_kv_heads);
    base_items += base;
    work += static_cast<std::int64_t>(base) * requests[r].kv_len;
  }
  if (policy.num_threads <= 1 || base_items >= target_items || work == 0) return;
  const int max_splits = std::clamp(policy.max_splits, 1, kMaxSplits);
  for (std::size_t r = 0; r < requests.size(); ++r) {
    const int kv_len = requests[r].kv_len;
    if (plans[r].num_tiles == 0 || kv_len < 2 * policy.min_split_keys) continue;
    const int wanted = ceil_div(static_cast<std::int64_t>(target_items) * kv_len, work);
    const int allowed = std::min(max_splits, kv_len / std::max(1, policy.min_split_keys));
    plans[r].num_splits = std::clamp(wanted, 1, allowed);
  }
}

std::int64_t partials_needed(std::span<const RequestPlan> plans, int num_kv_heads, int value_size) {
  std::int64_t floats = 0;
  for (const RequestPlan& plan : plans) {
    if (plan.num_splits > 1) {
      floats +=
          partial_slot_floats(plan, value_size) * plan.base_items(num_kv_heads) * plan.num_splits;
    }
  }
  return floats;
}

// Halves every split count until the partials fit the workspace.
void fit_partials(int num_kv_heads, int value_size, std::int64_t room,
                  std::span<RequestPlan> plans) {
  while (partials_needed(plans, num_kv_heads, value_size) > room) {
    for (RequestPlan& plan : plans) plan.num_splits = std::max(1, plan.num_splits / 2);
  }
}

// The last request whose range of `begin` starts at or before `index` (empty ranges skipped).
template <typename Begin>
int owner_of(std::span<const RequestPlan> plans, int index, Begin begin) {
  const auto it = std::upper_bound(plans.begin(), plans.end(), index,
                                   [&](int i, const RequestPlan& plan) { return i < begin(plan); });
  return static_cast<int>(it - plans.begin()) - 1;
}

// Item fields common to items and merges: `base` numbers (KV head, head group, tile).
Item base_item(const ForwardTask& task, int request, int base) {
  const RequestPlan& plan = task.plans[request];
  Item item;
  item.request = request;
  const int tile = plan.num_tiles - 1 - base % plan.num_tiles;  // longest tiles first
  const int head_group = (base / plan.num_tiles) % plan.head_groups;
  item.kv_head = base / plan.num_tiles / plan.head_groups * plan.kv_heads_per_item;
  item.num_kv_heads = std::min(plan.kv_heads_per_item, task.num_kv_heads - item.kv_head);
  item.head_begin = head_group * plan.group_heads;
  item.num_heads = std::min(plan.group_heads, task.group_size - item.head_begin);
  item.token_begin = tile * plan.tile_tokens;
  item.num_tokens = std::min(plan.tile_tokens, task.requests[request].query_len - item.token_begin);
  item.num_splits = plan.num_splits;
  return item;
}

}  // namespace

void read_requests(const CommonAttentionMetadata& common, const AttentionShape& shape,
                   std::span<Request> requests) {
  const bool cross = shape.type == AttentionType::cross;
  for (int r = 0; r < common.num_reqs; ++r) {
    Request& request = requests[r];
    request.query_start = common.query_start_loc[r];
    request.query_len = common.query_start_loc[r + 1] - request.query_start;
    if (cross) {
      request.kv_len =
          common.encoder_seq_lens.empty() ? common.seq_lens[r] : common.encoder_seq_lens[r];
      request.first_position = 0;
    } else {
      request.kv_len = common.seq_lens[r];
      request.first_position = request.kv_len - request.query_len;
    }
    request.block_row = common.block_table.row(r).data();
  }
}

PlanTotals plan_batch(std::span<const Request> requests, const AttentionShape& shape,
                      const PlanPolicy& policy, std::span<RequestPlan> plans) {
  const int group_size = shape.num_heads / shape.num_kv_heads;
  // Fewer decode requests than threads: the threads share a request's keys (splits), each item
  // reading whole token rows, which streams best (docs/cpu-flash.md §6). Only requests too short
  // to split share out their KV heads among items instead.
  int decodes = 0;
  for (const Request& request : requests) {
    decodes += request.query_len > 0 && request.query_len * group_size <= kGemvMaxRows;
  }
  const int items_per_decode = ceil_div(policy.num_threads, std::max(decodes, 1));
  const int shared_kv_heads = ceil_div(shape.num_kv_heads, std::max(items_per_decode, 1));
  for (std::size_t r = 0; r < requests.size(); ++r) {
    const bool splittable = requests[r].kv_len >= 2 * policy.min_split_keys;
    plans[r] = tile_request(requests[r], group_size, shape.num_kv_heads,
                            splittable ? shape.num_kv_heads : shared_kv_heads);
  }
  choose_splits(requests, shape.num_kv_heads, policy, plans);
  fit_partials(shape.num_kv_heads, shape.head_size_v, policy.partial_floats, plans);

  PlanTotals totals;
  for (RequestPlan& plan : plans) {
    const int base = plan.base_items(shape.num_kv_heads);
    plan.item_begin = totals.num_items;
    plan.merge_begin = totals.num_merges;
    plan.partial_offset = totals.partial_floats;
    totals.num_items += base * plan.num_splits;
    if (plan.num_splits > 1) {
      totals.num_merges += base;
      totals.partial_floats +=
          partial_slot_floats(plan, shape.head_size_v) * base * plan.num_splits;
    }
  }
  return totals;
}

std::int64_t partial_slot_floats(const RequestPlan& plan, int value_size) {
  return partial_floats(plan.rows_per_item(), value_size);
}

Item decode_item(const ForwardTask& task, int index) {
  const int request =
      owner_of(task.plans, index, [](const RequestPlan& p) { return p.item_begin; });
  const RequestPlan& plan = task.plans[request];
  const int local = index - plan.item_begin;
  Item item = base_item(task, request, local / plan.num_splits);
  item.split = local % plan.num_splits;
  if (plan.num_splits > 1) {
    item.partial =
        task.partials + plan.partial_offset +
        static_cast<std::int64_t>(local) * partial_slot_floats(plan, task.cache.value_size);
  }
  return item;
}

Item decode_merge(const ForwardTask& task, int index) {
  const int request =
      owner_of(task.plans, index, [](const RequestPlan& p) { return p.merge_begin; });
  const RequestPlan& plan = task.plans[request];
  const int base = index - plan.merge_begin;
  Item item = base_item(task, request, base);
  item.partial = task.partials + plan.partial_offset +
                 static_cast<std::int64_t>(base) * plan.num_splits *
                     partial_slot_floats(plan, task.cache.value_size);
  return item;
}

}  // namespace attnrt::cpu_flash
