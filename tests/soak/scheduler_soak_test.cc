// Soak test of the Scheduler (label `soak`, excluded from the default test presets): 100 000 steps
// of random arrivals and lengths on a pool small enough to force preemptions. Every step checks
// that each block is free or held by exactly one (request, group); at the end every request has
// finished with exactly its tokens and every block is free; the heap does not grow once warm.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <span>
#include <vector>

#include "attnrt/engine/scheduler.h"
#include "soak/heap_counter.h"

namespace attnrt {
namespace {

constexpr int kSteps = 100'000;
constexpr int kDrainSteps = 20'000;  // after the last arrival, every request must finish
constexpr int kWarmupSteps = 10'000;
constexpr int kMaxModelLen = 256;
constexpr int kNumBlocks = 160;
constexpr int kMaxOutstanding = 48;
constexpr std::int64_t kHeapSlackBytes =
    4096;  // arrivals pause above this many unfinished requests

// The token the "model" samples: a function of the request and position, so that a request's
// output can be checked after any number of preemptions and recomputes.
std::int32_t sampled_token(RequestId id, int position) {
  return static_cast<std::int32_t>((id * 7919 + position * 31) % 50'000);
}

// Three groups with different block sizes, one of them a sliding window. One request holds at
// most 16 + 5 + 32 blocks, so the pool keeps a lone request feasible but not 16 long ones.
KVCacheConfig soak_kv_config() {
  KVCacheConfig config;
  config.num_blocks = kNumBlocks;
  config.kv_cache_groups.push_back({{"full16"}, KVCacheSpec::full(16, 1, 8, DType::f32)});
  config.kv_cache_groups.push_back({{"window48"}, KVCacheSpec::sliding(32, 1, 8, DType::f32, 48)});
  config.kv_cache_groups.push_back({{"full8"}, KVCacheSpec::full(8, 1, 8, DType::f32)});
  return config;
}

EngineConfig soak_engine_config() {
  EngineConfig config;
  config.model.max_model_len = kMaxModelLen;
  config.scheduler.max_num_seqs = 16;
  config.scheduler.max_num_batched_tokens = 64;
  return config;
}

// Independent of Scheduler::check_consistency: every non-null block held by a running request
// is held once and is not free, and held + free + the null block account for the whole pool.
class OwnershipChecker {
 public:
  explicit OwnershipChecker(std::int64_t num_blocks)
      : owner_(static_cast<std::size_t>(num_blocks)) {}

  void check(const Scheduler& scheduler, int step) {
    std::fill(owner_.begin(), owner_.end(), -1);
    const BlockPool& pool = scheduler.block_pool();
    std::int64_t held = 0;
    for (const Request* request : scheduler.running()) {
      for (const auto& ids : request->block_ids) {
        for (const BlockId id : ids) {
          if (id == NULL_BLOCK_ID) continue;
          ASSERT_EQ(owner_[static_cast<std::size_t>(id)], -1)
              << "step " << step << ": block " << id << " held twice";
          ASSERT_FALSE(pool.is_free(id)) << "step " << step << ": held block " << id << " free";
          owner_[static_cast<std::size_t>(id)] = request->id;
          ++held;
        }
      }
    }
    ASSERT_EQ(held + pool.num_free() + 1, pool.num_blocks()) << "step " << step;
  }

 private:
  std::vector<RequestId> owner_;
};

class SoakDriver {
 public:
  SoakDriver() : scheduler_(soak_engine_config(), soak_kv_config()), checker_(kNumBlocks) {
    prompt_.resize(kMaxModelLen);
    sampled_.reserve(64);
  }

  void maybe_add_request() {
    const std::int64_t outstanding = num_added_ - num_finished_;
    if (outstanding >= kMaxOutstanding || std::uniform_int_distribution(0, 99)(rng_) >= 30) return;
    const int prompt_len = std::uniform_int_distribution(1, 200)(rng_);
    const int max_tokens = std::uniform_int_distribution(1, 80)(rng_);
    for (int i = 0; i < prompt_len; ++i) prompt_[static_cast<std::size_t>(i)] = i;
    scheduler_.add_request(std::span(prompt_).first(static_cast<std::size_t>(prompt_len)),
                           max_tokens);
    ++num_added_;
  }

  void run_step(int step) {
    const SchedulerOutput& output = scheduler_.schedule();
    ASSERT_LE(output.total_num_scheduled_tokens, 64);
    ASSERT_LE(output.scheduled.size(), 16u);
    sampled_.clear();
    for (const SchedulerEntry& entry : output.scheduled) {
      ASSERT_GE(entry.num_scheduled_tokens, 1);
      sampled_.push_back(sampled_token(entry.request->id, entry.request->num_tokens()));
    }
    for (const Request* request : scheduler_.update_from_output(sampled_)) {
      check_finished(*request);
    }
    scheduler_.check_consistency();
    checker_.check(scheduler_, step);
  }

  void check_finished(const Request& request) {
    ++num_finished_;
    const int expected = std::min(request.max_tokens, kMaxModelLen - request.num_prompt_tokens);
    ASSERT_EQ(request.num_output_tokens(), expected) << "request " << request.id;
    for (int i = 0; i < request.num_prompt_tokens; ++i) {
      ASSERT_EQ(request.token_ids[static_cast<std::size_t>(i)], i);
    }
    for (int position = request.num_prompt_tokens; position < request.num_tokens(); ++position) {
      ASSERT_EQ(request.token_ids[static_cast<std::size_t>(position)],
                sampled_token(request.id, position))
          << "request " << request.id << " position " << position;
    }
  }

  Scheduler& scheduler() { return scheduler_; }
  std::int64_t num_added() const { return num_added_; }
  std::int64_t num_finished() const { return num_finished_; }

 private:
  Scheduler scheduler_;
  OwnershipChecker checker_;
  std::mt19937 rng_{20240611};
  std::vector<std::int32_t> prompt_;
  std::vector<std::int32_t> sampled_;
  std::int64_t num_added_ = 0;
  std::int64_t num_finished_ = 0;
};

TEST(SchedulerSoakTest, RandomTrafficFinishesEveryRequestWithoutLosingBlocksOrMemory) {
  SoakDriver driver;
  std::int64_t peak_first_half = 0;   // steps kWarmupSteps .. kSteps/2
  std::int64_t peak_second_half = 0;  // steps kSteps/2 .. kSteps
  for (int step = 0; step < kSteps; ++step) {
    driver.maybe_add_request();
    driver.run_step(step);
    if (::testing::Test::HasFatalFailure()) return;
    const std::int64_t live = soak::live_heap_bytes();
    if (step >= kSteps / 2) {
      peak_second_half = std::max(peak_second_half, live);
    } else if (step >= kWarmupSteps) {
      peak_first_half = std::max(peak_first_half, live);
    }
  }
  Scheduler& scheduler = driver.scheduler();
  for (int step = kSteps; scheduler.has_unfinished_requests(); ++step) {
    ASSERT_LT(step, kSteps + kDrainSteps)
        << scheduler.num_waiting() << " waiting, " << scheduler.num_running() << " running";
    driver.run_step(step);
    if (::testing::Test::HasFatalFailure()) return;
  }

  EXPECT_EQ(driver.num_finished(), driver.num_added());
  EXPECT_GT(driver.num_added(), 5'000);
  EXPECT_GT(scheduler.num_preemptions(), 100);  // the pool was small enough to matter
  EXPECT_EQ(scheduler.block_pool().num_free(), scheduler.block_pool().num_blocks() - 1);
  scheduler.block_pool().check_consistency();
  EXPECT_GT(peak_first_half, 0);
  // Recycled requests may still meet a longer request than before, and the waiting deque may
  // take a new chunk: a few hundred bytes. A leak of one allocation per step or per request
  // would add tens of kilobytes over the second half.
  EXPECT_LE(peak_second_half, peak_first_half + kHeapSlackBytes) << "the heap grew after warm-up";
  std::printf("soak: %lld requests, %lld preemptions, peak heap %lld / %lld bytes\n",
              static_cast<long long>(driver.num_added()),
              static_cast<long long>(scheduler.num_preemptions()),
              static_cast<long long>(peak_first_half), static_cast<long long>(peak_second_half));
}

}  // namespace
}  // namespace attnrt
