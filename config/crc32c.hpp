// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief CRC-32C (Castagnoli, the iSCSI polynomial 0x1EDC6F41, reflected 0x82F63B78): the
/// checksum of the node cache's files (format/byte_cache.hpp), with SSE4.2's crc32 instruction
/// where the CPU has it and a table otherwise; both give the same value.
#pragma once

#include <cstdint>
#include <span>

namespace oc {

/// @return the CRC-32C of @p bytes continuing from @p crc (0 to start); crc32c("123456789") is
/// 0xE3069283.
[[nodiscard]] uint32_t crc32c(std::span<const uint8_t> bytes, uint32_t crc = 0) noexcept;

}  // namespace oc
