#pragma once
// The engine soak test's traffic: the soak config, random arrivals and cancellations around
// Engine::step(), the per-step checks of engine_soak_checks.h, and the drain at the end.

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <vector>

#include "attnrt/config/config_loader.h"
#include "attnrt/engine/engine.h"
#include "soak/engine_soak_checks.h"

namespace attnrt::soak {

constexpr int kMaxModelLen = 256;
constexpr int kMaxPromptLen = 64;
constexpr int kMaxOutputLen = 32;
constexpr int kBlockBytes = 8 << 10;  // 16 tokens x 2 KV heads x 32 x (K, V) x bf16 x 2 tensors
constexpr int kNumBlocks = 32;        // the null block and 31 usable ones

struct SoakSettings {
  int steps = 0;
  int drain_steps = 0;  // after the last arrival every request must finish within these
  int warmup_steps = 0;
  int arrival_percent = 0;  // chance per step of a new request
  int abort_per_mille = 0;  // chance per step of cancelling a random unfinished request
  int max_outstanding = 0;  // arrivals pause at this many unfinished requests
  bool record_logits = false;
  std::uint32_t seed = 0;
};

// tiny-yoco with max_model_len 256 and 32-token steps over at most 8 requests. A request (prompt
// <= 64, output <= 32 tokens) holds at most cdiv(95, 16) = 6 blocks in each group, so one always
// fits the 31 usable blocks but 8 running ones rarely do: preemption is routine. Requests longer
// than the window of 64 tokens give window blocks back.
inline EngineConfig soak_config() {
  EngineConfig config = default_config();
  config.model.max_model_len = kMaxModelLen;
  config.cache.memory = std::int64_t{kNumBlocks} * kBlockBytes;
  config.cache.kv_sharing_fast_prefill = true;
  config.scheduler.max_num_seqs = 8;
  config.scheduler.max_num_batched_tokens = 32;
  config.compilation.capture_sizes = {1, 2, 4, 8, 16, 32};
  return config;
}

inline EngineOptions soak_options(bool record_logits) {
  EngineOptions options;
  options.seed = 5;
  options.record_logits = record_logits;
  return options;
}

// Heap bytes of an allocation, as the soak test's counting operator new counts them.
inline std::int64_t usable_bytes(const void* pointer) {
  return pointer == nullptr
             ? 0
             : static_cast<std::int64_t>(malloc_usable_size(const_cast<void*>(pointer)));
}

class EngineSoakDriver {
 public:
  explicit EngineSoakDriver(const SoakSettings& settings)
      : settings_(settings),
        engine_(soak_config(), soak_options(settings.record_logits)),
        checker_(engine_),
        rng_(settings.seed) {
    prompt_.resize(kMaxModelLen);
    outstanding_.reserve(static_cast<std::size_t>(settings.max_outstanding));
    was_preempted_.assign(static_cast<std::size_t>(settings.steps), 0);  // <= 1 arrival a step
  }

  // Cancellations, arrivals, one step and its checks.
  void run_step(int step, bool arrivals) {
    maybe_abort_request();
    if (arrivals) maybe_add_request();
    const std::int64_t batches = engine_.stats().steps;
    ASSERT_TRUE(engine_.step());
    checker_.check(engine_, engine_.stats().steps > batches, step);
    for (const Request* request : engine_.scheduler().running()) {
      if (request->num_preemptions > 0) was_preempted_[static_cast<std::size_t>(request->id)] = 1;
    }
    std::erase_if(outstanding_, [this](RequestId id) {
      return engine_.requests()[static_cast<std::size_t>(id)].finished;
    });
  }

  // Heap bytes the engine's per-request records hold: they are kept for the whole run by design
  // (Engine::requests()), so they are taken out of the growth check.
  std::int64_t record_bytes() const {
    return record_bytes_ + usable_bytes(engine_.requests().data());
  }

  const Engine& engine() const { return engine_; }
  const EngineStepChecker::Coverage& coverage() const { return checker_.coverage(); }
  std::int64_t num_added() const { return num_added_; }
  bool was_preempted(RequestId id) const { return was_preempted_[static_cast<std::size_t>(id)]; }

 private:
  // An idle engine always gets a request, so that every step of the soak is an engine step.
  void maybe_add_request() {
    const bool idle = outstanding_.empty();
    if (!idle && (static_cast<int>(outstanding_.size()) >= settings_.max_outstanding ||
                  std::uniform_int_distribution(0, 99)(rng_) >= settings_.arrival_percent)) {
      return;
    }
    const int prompt_len = std::uniform_int_distribution(1, kMaxPromptLen)(rng_);
    const int max_tokens = std::uniform_int_distribution(1, kMaxOutputLen)(rng_);
    std::uniform_int_distribution<std::int32_t> token(0, engine_.model().vocab_size() - 1);
    for (int i = 0; i < prompt_len; ++i) prompt_[static_cast<std::size_t>(i)] = token(rng_);
    const RequestId id = engine_.add_request(
        std::span(prompt_).first(static_cast<std::size_t>(prompt_len)), max_tokens);
    const RequestRecord& record = engine_.requests()[static_cast<std::size_t>(id)];
    record_bytes_ += usable_bytes(record.prompt.data()) + usable_bytes(record.output.data());
    outstanding_.push_back(id);
    ++num_added_;
  }

  void maybe_abort_request() {
    if (outstanding_.empty() ||
        std::uniform_int_distribution(0, 999)(rng_) >= settings_.abort_per_mille) {
      return;
    }
    const auto victim =
        std::uniform_int_distribution<std::size_t>(0, outstanding_.size() - 1)(rng_);
    engine_.abort_request(outstanding_[victim]);
    outstanding_.erase(outstanding_.begin() + static_cast<std::ptrdiff_t>(victim));
  }

  SoakSettings settings_;
  Engine engine_;
  EngineStepChecker checker_;
  std::mt19937 rng_;
  std::vector<std::int32_t> prompt_;
  std::vector<RequestId> outstanding_;       // added, not finished nor aborted
  std::vector<std::uint8_t> was_preempted_;  // by request id
  std::int64_t num_added_ = 0;
  std::int64_t record_bytes_ = 0;  // prompt and output buffers of every record
};

// Runs `settings.steps` steps with arrivals, then drains; callers check HasFatalFailure().
inline void run_soak(EngineSoakDriver& driver, const SoakSettings& settings,
                     const std::function<void(int)>& after_step) {
  for (int step = 0; step < settings.steps; ++step) {
    driver.run_step(step, /*arrivals=*/true);
    if (::testing::Test::HasFatalFailure()) return;
    after_step(step);
  }
  for (int step = settings.steps; driver.engine().has_unfinished_requests(); ++step) {
    ASSERT_LT(step, settings.steps + settings.drain_steps)
        << driver.engine().scheduler().num_waiting() << " waiting, "
        << driver.engine().scheduler().num_running() << " running";
    driver.run_step(step, /*arrivals=*/false);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Every request finished or was aborted, and every block is back in the pool.
inline void expect_drained(const EngineSoakDriver& driver) {
  const Engine& engine = driver.engine();
  EXPECT_EQ(static_cast<std::int64_t>(engine.requests().size()), driver.num_added());
  EXPECT_EQ(engine.num_finished() + engine.num_aborted(), driver.num_added());
  for (const RequestRecord& record : engine.requests()) {
    EXPECT_NE(record.finished, record.aborted) << "request " << record.id;
  }
  EXPECT_EQ(engine.num_kv_blocks_in_use(), 0);
  EXPECT_EQ(engine.scheduler().block_pool().num_free(), engine.num_kv_blocks());
  EXPECT_NO_THROW(engine.scheduler().block_pool().check_consistency());
}

}  // namespace attnrt::soak
