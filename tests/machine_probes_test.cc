// The machine probes `attnrt bench attention` reads kernel figures against: they measure, and
// an order that does not fit the probe buffer is refused with an error that names it.

#include "support/machine_probes.h"

#include <gtest/gtest.h>

#include <string>

#include "error_of.h"

namespace attnrt {
namespace {

using testing::error_of;

constexpr std::size_t kProbeBytes = std::size_t{8} << 20;

TEST(DramReadProbe, SequentialAndPagedReadsGiveRates) {
  const DramReadProbe probe(kProbeBytes);
  EXPECT_GT(probe.measure(2, 1), 0.0);
  EXPECT_GT(probe.measure_paged(PagedReadOrder{}, 2, 1), 0.0);
  // One page at a time, 64-byte records, one record a row: the smallest order there is.
  EXPECT_GT(probe.measure_paged(
                {.record_bytes = 64, .records_per_row = 1, .rows_per_page = 1, .ways = 1}, 1, 1),
            0.0);
}

TEST(DramReadProbe, PagedOrderThatDoesNotFitIsRefused) {
  const DramReadProbe probe(kProbeBytes);
  const auto message = [&](const PagedReadOrder& order) {
    return error_of([&] { probe.measure_paged(order, 2, 1); });
  };
  EXPECT_NE(message({.record_bytes = 100}).find("record_bytes 100"), std::string::npos);
  EXPECT_NE(message({.record_bytes = 0}).find("record_bytes 0"), std::string::npos);
  EXPECT_NE(message({.ways = 0}).find("ways 0"), std::string::npos);
  EXPECT_NE(message({.rows_per_page = -1}).find("rows_per_page -1"), std::string::npos);
  // 4 pages of 8 MiB cannot fit in an 8 MiB buffer.
  EXPECT_NE(message({.record_bytes = 1 << 20, .records_per_row = 8}).find("do not fit"),
            std::string::npos);
}

}  // namespace
}  // namespace attnrt
