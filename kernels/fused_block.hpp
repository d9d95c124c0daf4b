// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The fused decode of one tile by one thread block, written once for the CUDA kernel
/// (kernels/fused_decode.cu) and the host executor (`run_plan_on_host`, kernels/fused_plan.hpp).
///
/// The body is a sequence of phases separated by barriers. A `Block` runs a phase and a barrier:
///
///     b.threads()          threads in the block (kThreadsPerBlock on both sides)
///     b.each(f)            f(thread) for this thread (device) or for every thread (host)
///     b.sync()             __syncthreads() (device); ends a phase (host)
///     b.report(word, bits) ORs error bits into a plan's error word (atomicOr on the device)
///
/// The host block runs every thread of a phase before the next phase, in reverse thread order,
/// and refuses a phase that starts before the previous one ended with `sync()`: a barrier
/// missing from the body fails the CPU tests, and so does a phase whose threads depend on each
/// other's writes, since the host's thread order differs from any the device would follow.
///
/// Shared memory: `tile` holds kFastLanesBlock words of T (the kernel's `__shared__` array, a
/// host array on the host). Phases of one tile at packed positions [first, first + 1024):
///   1. source: thread k fills tile words k, k + threads, ... (bitpacked: row k / L of lane
///      k % L, so neighbouring threads read neighbouring words; other sources: position k);
///   2. patches (if any): the tile's patches overwrite their positions;
///   3. ops + store: thread k takes tile[k] through the scalar ops and stores row
///      first + k - offset, so a warp's stores are contiguous;
///   4. output patches (if any, ALP's): overwrite the tile's rows they name.
/// Every branch between barriers depends on the plan only, so every thread reaches each barrier.
#pragma once

#include "kernels/fused_stages.hpp"

namespace oc::kernels {

/// Decodes tile @p t of @p p (device or host pointers alike) with the threads of @p b, ORing
/// kFusedError* bits into @p error (the calling thread's on the device, the block's on the host).
template <class T, class Block>
OC_HOST_DEVICE inline void fused_decode_tile(const FusedParams& p, uint64_t t, Block& b, T* tile,
                                             uint32_t& error) {
  using format::encodings::fastlanes_index;
  using format::encodings::kFastLanesBlock;
  constexpr unsigned kLanes = kFastLanesBlock / (sizeof(T) * 8);
  const unsigned threads = b.threads();
  const uint64_t first = t * kFastLanesBlock;
  if (p.source == FusedSource::bitpacked) {
    const uint64_t words_per_block = format::encodings::packed_block_bytes(p.bit_width) / sizeof(T);
    const T* block = static_cast<const T*>(p.packed) + t * words_per_block;
    b.each([&](unsigned thread) {
      for (unsigned k = thread; k < kFastLanesBlock; k += threads) {
        const unsigned lane = k % kLanes, row = k / kLanes;
        tile[fastlanes_index(row, lane)] = fused_extract<T>(block, p.bit_width, row, lane);
      }
    });
  } else {
    b.each([&](unsigned thread) {
      for (unsigned k = thread; k < kFastLanesBlock && first + k < p.len; k += threads) {
        tile[k] = static_cast<T>(fused_source_value(p, first + k));
      }
    });
  }
  b.sync();
  if (p.patch_count > 0) {
    b.each([&](unsigned thread) {
      // Every thread finds the tile's patches itself: the same few cached loads, no barrier.
      const uint64_t begin = fused_lower_bound(p.patch_positions, p.patch_count, first);
      const uint64_t end =
          fused_lower_bound(p.patch_positions, p.patch_count, first + kFastLanesBlock);
      for (uint64_t i = begin + thread; i < end; i += threads) {
        tile[p.patch_positions[i] - first] = static_cast<T>(p.patch_values[i]);
      }
    });
    b.sync();
  }
  const unsigned out_bytes = p.out_bytes();
  b.each([&](unsigned thread) {
    for (unsigned k = thread; k < kFastLanesBlock; k += threads) {
      const uint64_t position = first + k;
      if (position < p.offset || position - p.offset >= p.len) continue;
      fused_store(p.out, position - p.offset, out_bytes,
                  fused_apply_ops(p, tile[k], position - p.offset, error));
    }
  });
  b.sync();
  if (p.out_patch_count > 0) {
    b.each([&](unsigned thread) {
      const uint64_t row_begin = first > p.offset ? first - p.offset : 0;
      const uint64_t row_end = first + kFastLanesBlock - p.offset;
      const uint64_t begin = fused_lower_bound(p.out_patch_rows, p.out_patch_count, row_begin);
      const uint64_t end = fused_lower_bound(p.out_patch_rows, p.out_patch_count, row_end);
      for (uint64_t i = begin + thread; i < end; i += threads) {
        fused_store(p.out, p.out_patch_rows[i], out_bytes, p.out_patch_values[i]);
      }
    });
    b.sync();
  }
}

/// Decodes tile @p t of @p p with a tile of 8-byte words in shared memory, whatever the source's
/// word type: the body of a batched launch, whose plans may differ in word type.
template <class Block>
OC_HOST_DEVICE inline void fused_decode_tile_any(const FusedParams& p, uint64_t t, Block& b,
                                                 uint64_t* tile, uint32_t& error) {
  switch (p.packed_bytes) {  // uniform across the block: a plan has one word type
    case 1:
      fused_decode_tile(p, t, b, reinterpret_cast<uint8_t*>(tile), error);
      break;
    case 2:
      fused_decode_tile(p, t, b, reinterpret_cast<uint16_t*>(tile), error);
      break;
    case 4:
      fused_decode_tile(p, t, b, reinterpret_cast<uint32_t*>(tile), error);
      break;
    default:
      fused_decode_tile(p, t, b, tile, error);
      break;
  }
}

/// A batch of plans decoded by one launch: block-tile `g` (0 <= g < total tiles) is tile
/// g - tile_starts[i] of plan i, where i is the last plan whose start is <= g.
/// Byte layout (device memory): `count` FusedParams, then `count` + 1 ascending u64 tile starts
/// (tile_starts[0] = 0, tile_starts[count] = total tiles).
struct FusedBatchParams {
  const FusedParams* plans = nullptr;
  const uint64_t* tile_starts = nullptr;
  uint32_t count = 0;
  uint64_t total_tiles = 0;
};

/// @return the plan that block-tile @p g of @p batch belongs to (binary search over the starts).
[[nodiscard]] OC_HOST_DEVICE inline uint32_t fused_batch_plan(const FusedBatchParams& batch,
                                                              uint64_t g) noexcept {
  // The first start > g, minus one; empty plans (zero tiles) share their start with the next.
  return static_cast<uint32_t>(fused_upper_bound(batch.tile_starts, batch.count + 1, g) - 1);
}

/// Block @p block of a grid of @p grid blocks decodes tiles block, block + grid, ... of @p p,
/// then reports its error bits to `p.error` (when set).
template <class T, class Block>
OC_HOST_DEVICE inline void fused_decode_grid(const FusedParams& p, uint64_t block, uint64_t grid,
                                             Block& b, T* tile) {
  uint32_t error = 0;
  for (uint64_t t = block; t < p.tiles(); t += grid) fused_decode_tile(p, t, b, tile, error);
  if (error != 0 && p.error != nullptr) b.report(p.error, error);
}

/// Block @p block of a grid of @p grid blocks decodes block-tiles block, block + grid, ... of
/// @p batch, reporting each tile's error bits to its own plan's error word.
template <class Block>
OC_HOST_DEVICE inline void fused_decode_batch_grid(const FusedBatchParams& batch, uint64_t block,
                                                   uint64_t grid, Block& b, uint64_t* tile) {
  for (uint64_t g = block; g < batch.total_tiles; g += grid) {
    const uint32_t i = fused_batch_plan(batch, g);
    const FusedParams& p = batch.plans[i];
    uint32_t error = 0;
    fused_decode_tile_any(p, g - batch.tile_starts[i], b, tile, error);
    if (error != 0 && p.error != nullptr) b.report(p.error, error);
  }
}

}  // namespace oc::kernels
