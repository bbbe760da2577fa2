#pragma once
// A tensor-parallel group of threads in one process: each rank is a thread with its own
// ThreadCommunicator over a shared ThreadGroup. Collectives meet at a barrier that gives up
// after a timeout (throwing Error), so a test whose ranks disagree fails instead of hanging.
// Sums add the ranks' values in rank order, so every rank gets the same bytes.

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "attnrt/core/error.h"
#include "attnrt/engine/communicator.h"

namespace attnrt::testing {

class ThreadGroup {
 public:
  explicit ThreadGroup(int world) : world_(world), posted_(static_cast<std::size_t>(world)) {}

  int world() const { return world_; }
  void post(int rank, void* data) { posted_[static_cast<std::size_t>(rank)] = data; }
  void* posted(int rank) const { return posted_[static_cast<std::size_t>(rank)]; }

  // Every rank's arrival; throws Error when the others do not come within the timeout.
  void arrive_and_wait() {
    std::unique_lock lock(mutex_);
    const std::uint64_t generation = generation_;
    if (++arrived_ == world_) {
      arrived_ = 0;
      ++generation_;
      all_arrived_.notify_all();
      return;
    }
    if (!all_arrived_.wait_for(lock, std::chrono::seconds(30),
                               [&] { return generation_ != generation; })) {
      throw Error("thread group: a collective waited 30 s for the other ranks");
    }
  }

 private:
  int world_;
  std::vector<void*> posted_;
  std::mutex mutex_;
  std::condition_variable all_arrived_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;
};

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(ThreadGroup& group, int rank) : group_(group), rank_(rank) {}

  int rank() const override { return rank_; }
  int world() const override { return group_.world(); }
  void all_reduce_sum(std::span<float> data) override {
    group_.post(rank_, data.data());
    group_.arrive_and_wait();
    sum_.assign(data.size(), 0.f);
    for (int r = 0; r < world(); ++r) {
      const auto* other = static_cast<const float*>(group_.posted(r));
      for (std::size_t i = 0; i < data.size(); ++i) sum_[i] += other[i];
    }
    group_.arrive_and_wait();  // everyone has read every rank's data
    std::copy(sum_.begin(), sum_.end(), data.begin());
  }
  void broadcast(std::span<std::byte> data, int root) override {
    group_.post(rank_, data.data());
    group_.arrive_and_wait();
    if (rank_ != root && !data.empty()) std::memcpy(data.data(), group_.posted(root), data.size());
    group_.arrive_and_wait();
  }
  double seconds_in_collectives() const override { return 0; }

 private:
  ThreadGroup& group_;
  int rank_;
  std::vector<float> sum_;
};

// Runs body(communicator) on `world` threads and rethrows the first rank's exception, if any
// (a vector of each rank's error text, "" for none, goes to `errors` when given).
inline void run_ranks(int world, const std::function<void(Communicator&)>& body,
                      std::vector<std::string>* errors = nullptr) {
  ThreadGroup group(world);
  std::vector<std::exception_ptr> failures(static_cast<std::size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      ThreadCommunicator communicator(group, r);
      try {
        body(communicator);
      } catch (...) {
        failures[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  if (errors != nullptr) {
    for (const std::exception_ptr& failure : failures) {
      std::string text;
      try {
        if (failure) std::rethrow_exception(failure);
      } catch (const std::exception& e) {
        text = e.what();
      }
      errors->push_back(text);
    }
    return;
  }
  for (const std::exception_ptr& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
}

}  // namespace attnrt::testing
