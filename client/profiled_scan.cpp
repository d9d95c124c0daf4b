// SPDX-License-Identifier: Apache-2.0
#include "client/profiled_scan.hpp"

namespace oc::client {

ProfiledScan::ProfiledScan(std::unique_ptr<format::Scan> inner, std::shared_ptr<ScanCursor> cursor)
    : inner_(std::move(inner)), cursor_(std::move(cursor)) {
  format::set_reader_stages(profile_, inner_->stats());  // planning happened when it opened
  cursor_->set_profile(profile_);
}

Result<std::optional<format::ColumnPtr>> ProfiledScan::next_batch() {
  const uint64_t asked = format::monotonic_ns();
  // Before the first call the consumer was still setting up, not holding a batch.
  if (returned_ns_ != 0) profile_.consumer_wait_ns += asked - returned_ns_;
  auto next = inner_->next();
  returned_ns_ = format::monotonic_ns();
  profile_.wait_ns += returned_ns_ - asked;
  format::set_reader_stages(profile_, inner_->stats());
  if (!next.ok()) {
    profile_.complete = true;
    cursor_->fail(next.error());
  } else if (*next) {
    profile_.rows += (**next)->length;
    profile_.batches += 1;
  } else {
    profile_.complete = true;
  }
  cursor_->set_profile(profile_);
  return next;
}

}  // namespace oc::client
