// Scheduler: FCFS admission within the token budget and max_num_seqs, chunked prefill, decode,
// block growth per KV cache group, preemption and recompute, sliding-window release, finishing
// and errors. Block ids are computed by hand: the pool hands out 1, 2, ... and then reuses freed
// blocks oldest-freed first.

#include "attnrt/engine/scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "attnrt/core/error.h"
#include "scheduler_test_helpers.h"

namespace attnrt {
namespace {

using namespace scheduler_testing;

TEST(SchedulerTest, AdmitsFirstComeFirstServedWithinTheTokenBudget) {
  Scheduler scheduler(engine_config(4, 10), kv_config(32, {full(4)}));
  EXPECT_EQ(scheduler.add_request(prompt(4), 2), 0);
  EXPECT_EQ(scheduler.add_request(prompt(3), 2), 1);
  EXPECT_EQ(scheduler.add_request(prompt(5), 2), 2);

  const SchedulerOutput& first = scheduler.schedule();
  ASSERT_EQ(first.scheduled.size(), 3u);
  EXPECT_EQ(chunk_sizes(first), (std::vector<int>{4, 3, 3}));  // the third prompt is split
  EXPECT_EQ(first.total_num_scheduled_tokens, 10);
  EXPECT_TRUE(first.has_prefill);
  for (int i = 0; i < 3; ++i) {
    const SchedulerEntry& entry = first.scheduled[static_cast<std::size_t>(i)];
    EXPECT_EQ(entry.request->id, i);
    EXPECT_EQ(entry.slot, i);
    EXPECT_EQ(entry.num_computed_tokens, 0);
    EXPECT_TRUE(entry.is_prefill);
    EXPECT_TRUE(entry.overwrite);
    EXPECT_EQ(new_ids(first, i, 0), Ids{i + 1});
  }
  EXPECT_TRUE(first.scheduled[0].samples);
  EXPECT_TRUE(first.scheduled[1].samples);
  EXPECT_FALSE(first.scheduled[2].samples);
  const std::vector<std::int32_t> sampled = {10, 11, 12};
  EXPECT_TRUE(scheduler.update_from_output(sampled).empty());
  EXPECT_THAT(first.scheduled[0].request->output_token_ids(), ElementsAre(10));
  EXPECT_THAT(first.scheduled[2].request->output_token_ids(), ElementsAre());  // chunk only

  // Running requests continue: two decodes and the rest of the split prompt.
  const SchedulerOutput& second = scheduler.schedule();
  EXPECT_EQ(chunk_sizes(second), (std::vector<int>{1, 1, 2}));
  EXPECT_EQ(second.scheduled[0].num_computed_tokens, 4);
  EXPECT_FALSE(second.scheduled[0].is_prefill);
  EXPECT_FALSE(second.scheduled[0].overwrite);
  EXPECT_EQ(new_ids(second, 0, 0), Ids{4});  // token 5 opens block 2 of request 0
  EXPECT_EQ(new_ids(second, 1, 0), Ids{});   // token 4 still fits in its first block
  EXPECT_EQ(second.scheduled[2].num_computed_tokens, 3);
  EXPECT_TRUE(second.scheduled[2].is_prefill);
  EXPECT_TRUE(second.scheduled[2].samples);
  EXPECT_EQ(new_ids(second, 2, 0), Ids{5});
  const std::vector<std::int32_t> sampled2 = {20, 21, 22};
  const auto finished = scheduler.update_from_output(sampled2);
  ASSERT_EQ(finished.size(), 2u);
  EXPECT_THAT(finished[0]->output_token_ids(), ElementsAre(10, 20));
  EXPECT_THAT(finished[1]->output_token_ids(), ElementsAre(11, 21));

  const SchedulerOutput& third = scheduler.schedule();
  ASSERT_EQ(third.finished.size(), 2u);
  EXPECT_EQ(third.finished[0].request_id, 0);
  EXPECT_EQ(third.finished[0].slot, 0);
  EXPECT_EQ(third.finished[1].slot, 1);
  EXPECT_EQ(chunk_sizes(third), (std::vector<int>{1}));
  EXPECT_FALSE(third.has_prefill);
}

TEST(SchedulerTest, KeepsAtMostMaxNumSeqsRunningAndReusesSlots) {
  Scheduler scheduler(engine_config(2, 100), kv_config(32, {full(4)}));
  scheduler.add_request(prompt(2), 1);
  scheduler.add_request(prompt(2), 5);
  scheduler.add_request(prompt(2), 5);
  EXPECT_EQ(scheduler.schedule().scheduled.size(), 2u);
  EXPECT_EQ(scheduler.num_waiting(), 1);
  EXPECT_EQ(scheduler.update_from_output(std::vector<std::int32_t>{1, 2}).size(), 1u);

  const SchedulerOutput& output = scheduler.schedule();
  ASSERT_EQ(output.scheduled.size(), 2u);
  EXPECT_EQ(output.scheduled[0].request->id, 1);  // running first
  EXPECT_EQ(output.scheduled[0].slot, 1);
  EXPECT_EQ(output.scheduled[1].request->id, 2);  // admitted into the freed slot 0
  EXPECT_EQ(output.scheduled[1].slot, 0);
  EXPECT_TRUE(output.scheduled[1].overwrite);
  // Request 0's block 1 went back to the pool and is reused after the never-used blocks.
  EXPECT_EQ(new_ids(output, 1, 0), Ids{3});
  EXPECT_EQ(scheduler.num_waiting(), 0);
}

TEST(SchedulerTest, SplitsALongPromptIntoBudgetSizedChunksThenDecodes) {
  Scheduler scheduler(engine_config(4, 8), kv_config(16, {full(4)}));
  scheduler.add_request(prompt(20), 2);
  const int expected_computed[] = {0, 8, 16};
  const int expected_chunk[] = {8, 8, 4};
  const Ids expected_ids[] = {{1, 2}, {3, 4}, {5}};
  for (int i = 0; i < 3; ++i) {
    const SchedulerOutput& output = scheduler.schedule();
    ASSERT_EQ(output.scheduled.size(), 1u);
    const SchedulerEntry& entry = output.scheduled[0];
    EXPECT_EQ(entry.num_computed_tokens, expected_computed[i]);
    EXPECT_EQ(entry.num_scheduled_tokens, expected_chunk[i]);
    EXPECT_TRUE(entry.is_prefill);
    EXPECT_EQ(entry.samples, i == 2);
    EXPECT_EQ(entry.overwrite, i == 0);
    EXPECT_EQ(new_ids(output, 0, 0), expected_ids[i]);
    const std::vector<std::int32_t> sampled = {7 + i};
    scheduler.update_from_output(sampled);
  }
  const SchedulerOutput& decode = scheduler.schedule();
  EXPECT_EQ(decode.scheduled[0].num_computed_tokens, 20);
  EXPECT_EQ(decode.scheduled[0].num_scheduled_tokens, 1);
  EXPECT_FALSE(decode.scheduled[0].is_prefill);
  EXPECT_FALSE(decode.has_prefill);
  EXPECT_EQ(new_ids(decode, 0, 0), Ids{6});  // token 21 opens block 6
  const auto finished = scheduler.update_from_output(std::vector<std::int32_t>{8});
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_THAT(finished[0]->output_token_ids(), ElementsAre(9, 8));  // only the last chunk sampled
  EXPECT_EQ(finished[0]->num_prompt_tokens, 20);
  EXPECT_FALSE(scheduler.has_unfinished_requests());
  EXPECT_EQ(scheduler.block_pool().num_free(), 15);
}

TEST(SchedulerTest, FinishesAtMaxModelLen) {
  Scheduler scheduler(engine_config(4, 100, /*max_model_len=*/6), kv_config(16, {full(4)}));
  scheduler.add_request(prompt(4), 10);
  EXPECT_TRUE(step(scheduler).empty());
  const auto finished = step(scheduler, 2000);
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0]->num_tokens(), 6);
  EXPECT_THAT(finished[0]->output_token_ids(), ElementsAre(1000, 2000));
  EXPECT_TRUE(finished[0]->is_finished());
  EXPECT_EQ(finished[0]->slot, -1);
}

TEST(SchedulerTest, GrowsEveryGroupByItsOwnBlockSize) {
  Scheduler scheduler(engine_config(4, 100), kv_config(16, {full(4), full(2)}));
  scheduler.add_request(prompt(5), 4);
  const SchedulerOutput& prefill = scheduler.schedule();
  EXPECT_EQ(new_ids(prefill, 0, 0), (Ids{1, 2}));     // cdiv(5, 4)
  EXPECT_EQ(new_ids(prefill, 0, 1), (Ids{3, 4, 5}));  // cdiv(5, 2)
  scheduler.update_from_output(std::vector<std::int32_t>{1});
  const SchedulerOutput& decode6 = scheduler.schedule();  // 6 tokens: 2 and 3 blocks
  EXPECT_EQ(new_ids(decode6, 0, 0), Ids{});
  EXPECT_EQ(new_ids(decode6, 0, 1), Ids{});
  scheduler.update_from_output(std::vector<std::int32_t>{2});
  const SchedulerOutput& decode7 = scheduler.schedule();  // 7 tokens: 2 and 4 blocks
  EXPECT_EQ(new_ids(decode7, 0, 0), Ids{});
  EXPECT_EQ(new_ids(decode7, 0, 1), Ids{6});
  EXPECT_EQ(decode7.scheduled[0].request->block_ids[1], (Ids{3, 4, 5, 6}));
  scheduler.update_from_output(std::vector<std::int32_t>{3});
}

TEST(SchedulerTest, PreemptsTheNewestRequestAndRecomputesItsTokensLater) {
  // Block size 2, five usable blocks: two 4-token prompts take four.
  Scheduler scheduler(engine_config(4, 100), kv_config(6, {full(2)}));
  scheduler.add_request(prompt(4), 2);
  scheduler.add_request(prompt(4, 200), 3);
  const SchedulerOutput& first = scheduler.schedule();
  EXPECT_EQ(new_ids(first, 0, 0), (Ids{1, 2}));
  EXPECT_EQ(new_ids(first, 1, 0), (Ids{3, 4}));
  scheduler.update_from_output(std::vector<std::int32_t>{10, 20});

  // Request 0's fifth token takes the last block; request 1 then finds none and, being the
  // newest, preempts itself. Nobody is admitted in a step that preempted.
  const SchedulerOutput& second = scheduler.schedule();
  ASSERT_EQ(second.scheduled.size(), 1u);
  EXPECT_EQ(new_ids(second, 0, 0), Ids{5});
  ASSERT_EQ(second.preempted.size(), 1u);
  EXPECT_EQ(second.preempted[0].request_id, 1);
  EXPECT_EQ(second.preempted[0].slot, 1);
  EXPECT_EQ(scheduler.num_preemptions(), 1);
  EXPECT_EQ(scheduler.num_waiting(), 1);
  EXPECT_EQ(scheduler.block_pool().num_free(), 2);  // blocks 3 and 4 are back
  scheduler.check_consistency();
  const auto finished = scheduler.update_from_output(std::vector<std::int32_t>{11});
  ASSERT_EQ(finished.size(), 1u);  // request 0 is done: blocks 1, 2, 5 are back

  // Request 1 recomputes its prompt and its generated token 20 as one prefill: 5 tokens, 3
  // blocks, the oldest freed first.
  const SchedulerOutput& third = scheduler.schedule();
  ASSERT_EQ(third.scheduled.size(), 1u);
  const SchedulerEntry& resumed = third.scheduled[0];
  EXPECT_EQ(resumed.request->id, 1);
  EXPECT_EQ(resumed.request->num_preemptions, 1);
  EXPECT_EQ(resumed.slot, 0);
  EXPECT_TRUE(resumed.overwrite);
  EXPECT_TRUE(resumed.is_prefill);
  EXPECT_TRUE(resumed.samples);
  EXPECT_EQ(resumed.num_computed_tokens, 0);
  EXPECT_EQ(resumed.num_scheduled_tokens, 5);
  EXPECT_EQ(new_ids(third, 0, 0), (Ids{3, 4, 1}));
  EXPECT_THAT(resumed.request->token_ids, ElementsAre(200, 201, 202, 203, 20));
  scheduler.update_from_output(std::vector<std::int32_t>{21});
  EXPECT_FALSE(scheduler.schedule().scheduled[0].is_prefill);
  const auto done = scheduler.update_from_output(std::vector<std::int32_t>{22});
  ASSERT_EQ(done.size(), 1u);
  EXPECT_THAT(done[0]->output_token_ids(), ElementsAre(20, 21, 22));
  EXPECT_EQ(scheduler.block_pool().num_free(), 5);
}

TEST(SchedulerTest, PreemptsFromTheBackSoOlderRequestsKeepRunning) {
  Scheduler scheduler(engine_config(4, 100), kv_config(6, {full(2)}));
  scheduler.add_request(prompt(4), 5);  // blocks 1, 2
  scheduler.add_request(prompt(2), 5);  // block 3
  scheduler.add_request(prompt(4), 5);  // blocks 4, 5
  step(scheduler);
  const SchedulerOutput& output = scheduler.schedule();
  ASSERT_EQ(output.preempted.size(), 1u);
  EXPECT_EQ(output.preempted[0].request_id, 2);
  EXPECT_EQ(output.preempted[0].slot, 2);
  ASSERT_EQ(output.scheduled.size(), 2u);
  EXPECT_EQ(new_ids(output, 0, 0), Ids{4});  // request 0 takes the victim's blocks in order
  EXPECT_EQ(new_ids(output, 1, 0), Ids{5});
  EXPECT_EQ(output.scheduled[1].request->block_ids[0], (Ids{3, 5}));
  EXPECT_EQ(scheduler.num_running(), 2);
  scheduler.check_consistency();
}

TEST(SchedulerTest, SlidingWindowGroupsReturnBlocksTheWindowLeftBehind) {
  // Group 0: full attention; group 1: a 3-token window. Both use 2-token blocks.
  Scheduler scheduler(engine_config(4, 4), kv_config(16, {full(2), sliding(2, 3)}));
  scheduler.add_request(prompt(6), 3);
  const SchedulerOutput& chunk1 = scheduler.schedule();  // tokens 0..3
  EXPECT_EQ(new_ids(chunk1, 0, 0), (Ids{1, 2}));
  EXPECT_EQ(new_ids(chunk1, 0, 1), (Ids{3, 4}));
  scheduler.update_from_output(std::vector<std::int32_t>{0});

  // The query at position 4 reads positions 2..4: block 3 (positions 0, 1) is returned.
  const SchedulerOutput& chunk2 = scheduler.schedule();
  const Request& request = *chunk2.scheduled[0].request;
  EXPECT_EQ(new_ids(chunk2, 0, 0), Ids{5});
  EXPECT_EQ(new_ids(chunk2, 0, 1), Ids{6});
  EXPECT_EQ(request.block_ids[0], (Ids{1, 2, 5}));
  EXPECT_EQ(request.block_ids[1], (Ids{NULL_BLOCK_ID, 4, 6}));
  EXPECT_TRUE(scheduler.block_pool().is_free(3));
  scheduler.update_from_output(std::vector<std::int32_t>{1});

  // Position 6 reads 4..6: block 4 goes too; block 3, freed last, is handed out after 7 and 8.
  const SchedulerOutput& decode = scheduler.schedule();
  EXPECT_EQ(new_ids(decode, 0, 0), Ids{7});
  EXPECT_EQ(new_ids(decode, 0, 1), Ids{8});
  EXPECT_EQ(request.block_ids[1], (Ids{NULL_BLOCK_ID, NULL_BLOCK_ID, 6, 8}));
  EXPECT_EQ(request.num_owned_blocks(1), 2);
  EXPECT_TRUE(scheduler.block_pool().is_free(4));
  EXPECT_EQ(scheduler.block_pool().num_free(), 15 - 6);
  scheduler.check_consistency();
  scheduler.update_from_output(std::vector<std::int32_t>{2});

  EXPECT_EQ(step(scheduler).size(), 1u);  // the third generated token finishes it
  EXPECT_EQ(scheduler.block_pool().num_free(), 15);
  scheduler.check_consistency();
}

TEST(SchedulerTest, RejectsARequestThatCannotFitEvenAlone) {
  // Two usable blocks of 2 tokens. The last generated token needs no KV: a 4-token prompt with
  // one output token needs 2 blocks, with two output tokens 3.
  Scheduler scheduler(engine_config(4, 100), kv_config(3, {full(2)}));
  EXPECT_THAT(error_of([&] { scheduler.add_request(prompt(4), 2); }),
              HasSubstr("request 0 (4 prompt tokens, max_tokens 2) may need 3 KV cache blocks but "
                        "the pool has 2 (1 short), even with no other request; raise "
                        "cache.memory, or lower max_tokens or model.max_model_len"));
  EXPECT_EQ(scheduler.num_waiting(), 0);
  EXPECT_EQ(scheduler.add_request(prompt(4), 1), 0);
  EXPECT_EQ(step(scheduler).size(), 1u);
}

TEST(SchedulerTest, ASlidingWindowBoundsTheBlocksOfALongRequest) {
  // A 3-token window in 2-token blocks with 4-token steps holds at most cdiv(2 + 4, 2) + 1 = 4
  // blocks, however long the request.
  Scheduler tight(engine_config(4, 4), kv_config(4, {sliding(2, 3)}));
  EXPECT_THAT(error_of([&] { tight.add_request(prompt(40), 10); }),
              HasSubstr("may need 4 KV cache blocks but the pool has 3 (1 short)"));

  Scheduler scheduler(engine_config(4, 4), kv_config(5, {sliding(2, 3)}));
  scheduler.add_request(prompt(40), 10);
  int steps = 0;
  while (scheduler.has_unfinished_requests()) {
    const SchedulerOutput& output = scheduler.schedule();
    ASSERT_TRUE(output.preempted.empty());
    EXPECT_LE(output.scheduled[0].request->num_owned_blocks(0), 4);
    scheduler.check_consistency();
    scheduler.update_from_output(std::vector<std::int32_t>{steps++});
  }
  EXPECT_EQ(steps, 10 + 9);  // 40 / 4 prefill chunks, then 9 decodes
  EXPECT_EQ(scheduler.block_pool().num_free(), 4);
}

TEST(SchedulerTest, RejectsBadConfigsAndRequests) {
  EngineConfig speculative = engine_config(4, 100);
  speculative.speculative.num_speculative_tokens = 2;
  EXPECT_THAT(error_of([&] { Scheduler s(speculative, kv_config(8, {full(2)})); }),
              HasSubstr("num_speculative_tokens is 2"));
  EXPECT_THAT(error_of([&] { Scheduler s(engine_config(0, 100), kv_config(8, {full(2)})); }),
              HasSubstr("max_num_seqs 0 must be >= 1"));
  EXPECT_THAT(error_of([&] { Scheduler s(engine_config(4, 0), kv_config(8, {full(2)})); }),
              HasSubstr("max_num_batched_tokens 0 must be >= 1"));
  const KVCacheSpec cross = KVCacheSpec::cross(2, 1, 8, DType::f32);
  EXPECT_THAT(error_of([&] {
                Scheduler s(engine_config(4, 100), kv_config(8, {full(2), cross}));
              }),
              HasSubstr("KV cache group 1 holds cross-attention layers"));
  EXPECT_THAT(error_of([&] { Scheduler s(engine_config(4, 100), kv_config(1, {full(2)})); }),
              HasSubstr("num_blocks 1 must be in [2,"));

  Scheduler scheduler(engine_config(4, 100, /*max_model_len=*/8), kv_config(8, {full(2)}));
  EXPECT_THAT(error_of([&] { scheduler.add_request({}, 1); }),
              HasSubstr("at least one prompt token"));
  EXPECT_THAT(error_of([&] { scheduler.add_request(prompt(8), 1); }),
              HasSubstr("a prompt of 8 tokens leaves no room to generate within "
                        "model.max_model_len 8"));
  EXPECT_THAT(error_of([&] { scheduler.add_request(prompt(2), 0); }),
              HasSubstr("max_tokens 0 must be >= 1"));
  EXPECT_FALSE(scheduler.has_unfinished_requests());

  scheduler.add_request(prompt(2), 1);
  EXPECT_THAT(error_of([&] { scheduler.update_from_output({}); }),
              HasSubstr("without a schedule()"));
  scheduler.schedule();
  EXPECT_THAT(error_of([&] { scheduler.schedule(); }), HasSubstr("called again before"));
  EXPECT_THAT(error_of([&] { scheduler.update_from_output({}); }),
              HasSubstr("got 0 sampled tokens for 1 scheduled requests"));
}

}  // namespace
}  // namespace attnrt
