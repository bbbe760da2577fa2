// Scheduler::abort_request: a running request's blocks come back at once and its slot is
// reported finished at the next schedule(); queued and preempted requests leave the queue; a bad
// id changes nothing.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "attnrt/core/error.h"
#include "attnrt/engine/scheduler.h"
#include "scheduler_test_helpers.h"

namespace attnrt {
namespace {

using namespace scheduler_testing;

TEST(SchedulerAbortTest, FreesARunningRequestsBlocksAndReportsItsSlotNextStep) {
  Scheduler scheduler(engine_config(4, 100), kv_config(16, {full(2)}));
  scheduler.add_request(prompt(4), 5);  // slot 0, blocks 1, 2
  scheduler.add_request(prompt(3), 5);  // slot 1, blocks 3, 4
  step(scheduler);
  scheduler.abort_request(1);
  EXPECT_EQ(scheduler.num_running(), 1);
  EXPECT_EQ(scheduler.num_aborted(), 1);
  EXPECT_EQ(scheduler.block_pool().num_free(), 15 - 2);  // blocks 3 and 4 are back at once
  EXPECT_TRUE(scheduler.block_pool().is_free(3));
  scheduler.check_consistency();

  // The next request takes the released slot; the step reports it so its row is emptied first.
  scheduler.add_request(prompt(2), 1);
  const SchedulerOutput& output = scheduler.schedule();
  ASSERT_EQ(output.finished.size(), 1u);
  EXPECT_EQ(output.finished[0].request_id, 1);
  EXPECT_EQ(output.finished[0].slot, 1);
  ASSERT_EQ(output.scheduled.size(), 2u);
  EXPECT_EQ(output.scheduled[0].request->id, 0);
  EXPECT_EQ(output.scheduled[1].request->id, 2);
  EXPECT_EQ(output.scheduled[1].slot, 1);
  // Freed blocks queue behind the never-used ones: request 0's third block is 5, then 6.
  EXPECT_EQ(new_ids(output, 0, 0), (Ids{5}));
  EXPECT_EQ(new_ids(output, 1, 0), (Ids{6}));
  scheduler.update_from_output(std::vector<std::int32_t>{7, 8});
  scheduler.check_consistency();
}

TEST(SchedulerAbortTest, RemovesAWaitingOrPreemptedRequestFromTheQueue) {
  // Five usable blocks of 2 tokens: request 1 preempts itself on its fifth token (as above).
  Scheduler scheduler(engine_config(4, 100), kv_config(6, {full(2)}));
  scheduler.add_request(prompt(4), 4);
  scheduler.add_request(prompt(4, 200), 3);
  step(scheduler);
  scheduler.add_request(prompt(2, 300), 3);  // waits: nobody is admitted in a preempting step
  const SchedulerOutput& second = scheduler.schedule();
  ASSERT_EQ(second.preempted.size(), 1u);
  scheduler.update_from_output(std::vector<std::int32_t>{11});
  ASSERT_EQ(scheduler.num_waiting(), 2);  // request 1 (preempted), then request 2

  scheduler.abort_request(1);
  scheduler.abort_request(2);
  EXPECT_EQ(scheduler.num_waiting(), 0);
  EXPECT_EQ(scheduler.num_aborted(), 2);
  scheduler.check_consistency();
  while (scheduler.has_unfinished_requests()) {
    const SchedulerOutput& output = scheduler.schedule();
    EXPECT_TRUE(output.finished.empty());  // neither aborted request held a slot
    for (const SchedulerEntry& entry : output.scheduled) EXPECT_EQ(entry.request->id, 0);
    scheduler.update_from_output(std::vector<std::int32_t>(output.scheduled.size(), 1));
  }
  EXPECT_EQ(scheduler.block_pool().num_free(), 5);
}

TEST(SchedulerAbortTest, RejectsUnknownFinishedAndAbortedIdsAndChangesNothing) {
  Scheduler scheduler(engine_config(4, 100), kv_config(16, {full(2)}));
  scheduler.add_request(prompt(3), 1);  // finishes after its first step
  scheduler.add_request(prompt(3), 4);
  scheduler.add_request(prompt(3), 4);
  ASSERT_EQ(step(scheduler).size(), 1u);
  scheduler.abort_request(2);
  const int free_blocks = scheduler.block_pool().num_free();

  EXPECT_THAT(error_of([&] { scheduler.abort_request(0); }),
              HasSubstr("cannot abort request 0: it already finished or was aborted"));
  EXPECT_THAT(error_of([&] { scheduler.abort_request(2); }),
              HasSubstr("cannot abort request 2: it already finished or was aborted"));
  EXPECT_THAT(error_of([&] { scheduler.abort_request(3); }),
              HasSubstr("cannot abort request 3: no such request (3 were added"));
  EXPECT_THAT(error_of([&] { scheduler.abort_request(-1); }), HasSubstr("no such request"));
  scheduler.schedule();
  EXPECT_THAT(error_of([&] { scheduler.abort_request(1); }),
              HasSubstr("between schedule() and update_from_output()"));
  scheduler.update_from_output(std::vector<std::int32_t>{5});

  EXPECT_EQ(scheduler.num_aborted(), 1);
  EXPECT_EQ(scheduler.num_running(), 1);
  EXPECT_EQ(scheduler.num_waiting(), 0);
  EXPECT_EQ(scheduler.block_pool().num_free(), free_blocks);  // request 1 still fits its 2 blocks
  scheduler.check_consistency();
}

}  // namespace
}  // namespace attnrt
