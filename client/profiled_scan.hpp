// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief An in-process scan that reports its stages to a ScanCursor (format/scan_profile.hpp):
/// the reader's own (storage, decode), the time its consumer waited inside next() and the time
/// the scan waited for its consumer between two calls, rows and batches handed out, and its
/// error.
#pragma once

#include <memory>

#include "client/scan_cursor.hpp"
#include "format/reader.hpp"

namespace oc::client {

class ProfiledScan final : public format::Scan {
 public:
  ProfiledScan(std::unique_ptr<format::Scan> inner, std::shared_ptr<ScanCursor> cursor);

  [[nodiscard]] const format::DTypePtr& dtype() const override { return inner_->dtype(); }
  [[nodiscard]] format::StringLayout strings() const override { return inner_->strings(); }
  [[nodiscard]] format::ScanStats stats() const override { return inner_->stats(); }

 protected:
  [[nodiscard]] Result<std::optional<format::ColumnPtr>> next_batch() override;

 private:
  std::unique_ptr<format::Scan> inner_;
  std::shared_ptr<ScanCursor> cursor_;
  format::ScanProfile profile_;
  uint64_t returned_ns_ = 0;  ///< when the last batch was handed out (0: none yet)
};

}  // namespace oc::client
