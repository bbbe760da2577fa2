#pragma once
// The per-step invariants of the engine soak test, read through Engine's public accessors after
// Engine::step() returned (the scheduler has applied the step; block-table rows of requests that
// finished in it are emptied only by the next step):
// - every usable KV block is free or held by exactly one (running request, group);
// - every running request's block-table row is its manager blocks expanded to kernel ids;
// - the step's batch: gathered rows equal the request rows, padded rows are zero, positions run
//   up to seq_lens, and every real slot is the request's block at the token's offset; padding
//   slots are PAD_SLOT_ID.
// Failures are gtest fatal failures; callers check ::testing::Test::HasFatalFailure().

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "attnrt/engine/engine.h"

namespace attnrt::soak {

class EngineStepChecker {
 public:
  explicit EngineStepChecker(const Engine& engine)
      : owner_(static_cast<std::size_t>(engine.scheduler().block_pool().num_blocks()), kFree),
        holder_(static_cast<std::size_t>(engine.config().scheduler.max_num_seqs), nullptr) {}

  // What the checks covered so far, so that a soak can show it met each case.
  struct Coverage {
    std::int64_t slots = 0;             // real slots checked against a request's block
    std::int64_t padding_slots = 0;     // padding token rows checked to be PAD_SLOT_ID
    std::int64_t released_columns = 0;  // window columns a running request gave back
    std::int64_t finished_rows = 0;     // batch rows of requests that finished in their step
  };
  const Coverage& coverage() const { return coverage_; }

  // `batch_ran`: the step laid out and ran a batch (the input batch and slot mappings are its).
  void check(const Engine& engine, bool batch_ran, std::int64_t step) {
    step_ = step;
    check_ownership(engine);
    if (::testing::Test::HasFatalFailure()) return;
    ASSERT_NO_THROW(engine.scheduler().check_consistency()) << "step " << step;
    check_rows(engine);
    if (::testing::Test::HasFatalFailure() || !batch_ran) return;
    for (int g = 0; g < engine.block_tables().num_groups(); ++g) {
      check_batch_group(engine, g);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }

 private:
  static constexpr RequestId kFree = -1;

  // Independent of KVBlockManager::check_consistency: held + free + the null block = the pool.
  void check_ownership(const Engine& engine) {
    const BlockPool& pool = engine.scheduler().block_pool();
    std::fill(owner_.begin(), owner_.end(), kFree);
    std::fill(holder_.begin(), holder_.end(), nullptr);
    std::int64_t held = 0;
    for (const Request* request : engine.scheduler().running()) {
      holder_[static_cast<std::size_t>(request->slot)] = request;
      for (const std::vector<BlockId>& ids : request->block_ids) {
        for (const BlockId id : ids) {
          if (id == NULL_BLOCK_ID) continue;  // a column a sliding window gave back
          ASSERT_GT(id, 0) << "step " << step_;
          ASSERT_LT(id, pool.num_blocks()) << "step " << step_;
          RequestId& owner = owner_[static_cast<std::size_t>(id)];
          ASSERT_EQ(owner, kFree) << "step " << step_ << ": block " << id << " held by request "
                                  << owner << " and request " << request->id;
          ASSERT_FALSE(pool.is_free(id)) << "step " << step_ << ": held block " << id << " free";
          owner = request->id;
          ++held;
        }
      }
    }
    ASSERT_EQ(held + pool.num_free() + 1, pool.num_blocks()) << "step " << step_ << ": lost blocks";
  }

  // Columns the request holds as NULL_BLOCK_ID keep their old id in the row: no query reads them
  // (they lie behind the window), so only held columns are compared.
  void check_rows(const Engine& engine) {
    const BlockTables& tables = engine.block_tables();
    for (const Request* request : engine.scheduler().running()) {
      for (int g = 0; g < tables.num_groups(); ++g) {
        const KernelBlockGeometry& geometry = tables.geometry(g);
        const std::vector<BlockId>& ids = request->block_ids[static_cast<std::size_t>(g)];
        const std::span<const std::int32_t> row = tables.row(g, request->slot);
        ASSERT_EQ(row.size(), ids.size() * static_cast<std::size_t>(geometry.ratio))
            << "step " << step_ << ": request " << request->id << " group " << g;
        for (std::size_t column = 0; column < ids.size(); ++column) {
          if (ids[column] == NULL_BLOCK_ID) {
            ++coverage_.released_columns;
            continue;
          }
          for (int j = 0; j < geometry.ratio; ++j) {
            ASSERT_EQ(row[column * geometry.ratio + j], geometry.kernel_block_id(ids[column], j))
                << "step " << step_ << ": request " << request->id << " group " << g << " column "
                << column;
          }
        }
      }
    }
  }

  static bool slots_translated(const Engine& engine, int g) {
    if (!engine.block_tables().geometry(g).needs_slot_translation()) return false;
    const auto& groups = engine.plan().backends.attn_groups[static_cast<std::size_t>(g)];
    return std::ranges::any_of(groups, &AttentionGroup::slot_mappings_translated);
  }

  void check_batch_group(const Engine& engine, int g) {
    const InputBatch& batch = engine.input_batch();
    const BlockTableView gathered = engine.block_tables().block_table(g);
    ASSERT_EQ(gathered.num_rows, batch.num_reqs_padded()) << "step " << step_;
    for (int i = 0; i < batch.num_reqs(); ++i) {
      check_batch_request(engine, g, i);
      if (::testing::Test::HasFatalFailure()) return;
    }
    for (int i = batch.num_reqs(); i < batch.num_reqs_padded(); ++i) {
      const std::span<const std::int32_t> row = gathered.row(i);
      ASSERT_TRUE(std::ranges::all_of(row, [](std::int32_t id) { return id == 0; }))
          << "step " << step_ << ": padded batch row " << i << " group " << g;
    }
    // Past the real tokens every entry is padding, to the end of the buffer (no stale slots).
    const std::span<const std::int64_t> buffer = engine.block_tables().slot_mapping_buffer(g);
    for (std::size_t t = static_cast<std::size_t>(batch.num_tokens()); t < buffer.size(); ++t) {
      ASSERT_EQ(buffer[t], PAD_SLOT_ID) << "step " << step_ << ": token row " << t;
    }
    coverage_.padding_slots += batch.num_tokens_padded() - batch.num_tokens();
  }

  // Batch request i: its row in the tables, its positions, and the slot of each of its tokens.
  // A request no longer running finished in this step and gave its blocks back, and nothing has
  // been allocated since: its blocks must all be free.
  void check_batch_request(const Engine& engine, int g, int i) {
    const InputBatch& batch = engine.input_batch();
    const BlockTables& tables = engine.block_tables();
    const KernelBlockGeometry& geometry = tables.geometry(g);
    const int req_index = batch.idx_mapping()[i];
    const Request* holder = holder_[static_cast<std::size_t>(req_index)];
    const std::span<const std::int32_t> row = tables.row(g, req_index);
    ASSERT_TRUE(std::ranges::equal(row, tables.block_table(g).row(i).first(row.size())))
        << "step " << step_ << ": gathered row " << i << " group " << g;
    const int first = batch.query_start_loc()[i];
    const int end = batch.query_start_loc()[i + 1];
    const int seq_len = batch.seq_lens()[i];
    if (holder != nullptr) {
      ASSERT_EQ(seq_len, holder->num_computed_tokens) << "step " << step_;
    } else {
      ++coverage_.finished_rows;
    }
    const bool translated = slots_translated(engine, g);
    for (int t = first; t < end; ++t) {
      const std::int64_t position = batch.positions()[t];
      ASSERT_EQ(position, seq_len - (end - t)) << "step " << step_ << ": token row " << t;
      const std::int64_t slot = tables.slot_mapping(g)[t];
      if (batch.is_padding()[t] != 0) {
        ASSERT_EQ(slot, PAD_SLOT_ID) << "step " << step_ << ": token row " << t;
        continue;
      }
      const std::int64_t column = position / geometry.manager_block_size;
      ASSERT_LT(column * geometry.ratio, static_cast<std::int64_t>(row.size())) << "step " << step_;
      const BlockId block =
          holder != nullptr
              ? holder->block_ids[static_cast<std::size_t>(g)][static_cast<std::size_t>(column)]
              : static_cast<BlockId>(row[column * geometry.ratio] / geometry.slots_per_block);
      if (holder != nullptr) {
        ASSERT_NE(block, NULL_BLOCK_ID) << "step " << step_ << ": writes a released column";
        ASSERT_EQ(owner_[static_cast<std::size_t>(block)], holder->id) << "step " << step_;
      } else {
        ASSERT_TRUE(engine.scheduler().block_pool().is_free(block))
            << "step " << step_ << ": block " << block << " of a finished request is not free";
      }
      const std::int64_t manager_slot = std::int64_t{block} * geometry.manager_block_size +
                                        position % geometry.manager_block_size;
      ASSERT_EQ(slot, translated ? geometry.map_to_kernel_slot(manager_slot) : manager_slot)
          << "step " << step_ << ": token row " << t << " position " << position << " group " << g;
      ++coverage_.slots;
    }
  }

  std::vector<RequestId> owner_;        // by block id: the running request holding it
  std::vector<const Request*> holder_;  // by request slot: the running request in it
  std::int64_t step_ = 0;
  Coverage coverage_;
};

}  // namespace attnrt::soak
