// SPDX-License-Identifier: Apache-2.0
// The facade and the page loop (pco/src/wrapped/page_decompressor.rs,
// pco/src/metadata/page.rs).
//
// Page layout:
//   header, per latent variable (lookback, primary, secondary):
//     state_n x [latent width] delta state (the lookback variable has none; the secondary has
//                              one only when the delta encoding applies to it)
//     4 x [ans_size_log] initial tANS state indices
//   zero bits to a byte boundary
//   per batch of up to 256 values, per latent variable: its bins and offsets (latents.hpp)
//   zero bits to a byte boundary after the last batch
//
// A delta'd variable reads min(256, remaining - state_n) latents in a batch of
// min(256, remaining) values (delta.hpp says why that adds up); the lookback variable reads as
// many as the primary. Nothing says where a page ends but the values it holds, so the position
// is checked after each variable's batch, as pcodec does.
#include "format/pcodec/pcodec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <type_traits>
#include <vector>

#include "format/pcodec/chunk_meta.hpp"
#include "format/pcodec/delta.hpp"
#include "format/pcodec/latents.hpp"
#include "format/pcodec/modes.hpp"

namespace oc::format::pcodec {
namespace detail {

/// Zero bytes after a page's copy: one batch of one latent variable reads at most
/// 256 x (14 + 64) bits plus a 16-byte load, and starts within the page.
inline constexpr size_t kPagePad = 4096;

class ChunkImpl {
 public:
  explicit ChunkImpl(ChunkMeta m) : meta(std::move(m)) {}
  virtual ~ChunkImpl() = default;
  ChunkImpl(const ChunkImpl&) = delete;
  ChunkImpl& operator=(const ChunkImpl&) = delete;
  [[nodiscard]] virtual Result<void> decode_page(std::span<const uint8_t> page, uint32_t n,
                                                 uint8_t* out) const = 0;
  ChunkMeta meta;
};

namespace {

size_t sat_sub(size_t a, size_t b) { return a > b ? a - b : 0; }

/// A chunk whose numbers have latents of type L and whose primary latents have type P (L, or
/// u32 for Dict indices).
template <class L, class P>
class TypedChunk final : public ChunkImpl {
 public:
  explicit TypedChunk(ChunkMeta m) : ChunkImpl(std::move(m)), primary_(meta.primary) {
    if (meta.lookback) lookback_.emplace(*meta.lookback);
    if (meta.secondary) secondary_.emplace(*meta.secondary);
    kind_ = is_float(meta.number)        ? NumKind::floating
            : is_signed_int(meta.number) ? NumKind::signed_int
                                         : NumKind::unsigned_int;
    mode_.mode = meta.mode;
    mode_.base = static_cast<L>(meta.base);
    if (meta.mode == ModeKind::float_mult) {
      mode_.base = number_bits<L, NumKind::floating>(static_cast<L>(meta.base));
    }
    mode_.k = meta.quant_k;
    dict_.reserve(meta.dict.size());
    for (uint64_t x : meta.dict) dict_.push_back(static_cast<L>(x));
    mode_.dict = dict_.data();
    mode_.dict_len = dict_.size();
  }

  Result<void> decode_page(std::span<const uint8_t> page, uint32_t n, uint8_t* out) const override {
    OC_EXPECT(n <= kMaxPageValues, corrupt, "pco page of {} values (at most {})", n,
              kMaxPageValues);
    thread_local std::vector<uint8_t> padded;
    padded.resize(page.size() + kPagePad);
    if (!page.empty()) std::memcpy(padded.data(), page.data(), page.size());
    std::memset(padded.data() + page.size(), 0, kPagePad);
    const uint8_t* buf = padded.data();
    const size_t bit_size = page.size() * 8;

    const DeltaMeta& d = meta.delta;
    const size_t state_n = d.state_n();
    const size_t sec_state_n = meta.secondary_delta() ? state_n : 0;

    // The header, checked to fit before it is read.
    uint64_t header_bits = 4 * uint64_t{meta.primary.ans_size_log} + state_n * meta.primary.bits;
    if (meta.lookback) header_bits += 4 * uint64_t{meta.lookback->ans_size_log};
    if (meta.secondary) {
      header_bits +=
          4 * uint64_t{meta.secondary->ans_size_log} + sec_state_n * meta.secondary->bits;
    }
    OC_EXPECT(header_bits <= bit_size, corrupt,
              "pco page of {} bytes is shorter than its {}-bit header", page.size(), header_bits);
    size_t pos = 0;
    auto read_states = [&](uint32_t ans_size_log) {
      std::array<uint32_t, 4> s{};
      for (uint32_t& x : s) {
        x = static_cast<uint32_t>(read_bits_at(buf, pos, ans_size_log));
        pos += ans_size_log;
      }
      return s;
    };
    std::array<uint32_t, 4> lookback_states{}, primary_states{}, secondary_states{};
    if (meta.lookback) lookback_states = read_states(meta.lookback->ans_size_log);

    // Delta state: Consecutive moments, Conv1's last latents, or the start of Lookback's V.
    const bool lookback = d.kind == DeltaKind::lookback;
    std::vector<P> primary_state(lookback ? std::max<size_t>(n, state_n) : state_n);
    for (size_t i = 0; i < state_n; ++i, pos += sizeof(P) * 8) {
      primary_state[i] = static_cast<P>(read_bits_at(buf, pos, sizeof(P) * 8));
    }
    primary_states = read_states(meta.primary.ans_size_log);
    std::vector<L> secondary_state;
    if (meta.secondary) {
      secondary_state.resize(lookback && sec_state_n ? std::max<size_t>(n, state_n) : sec_state_n);
      for (size_t i = 0; i < sec_state_n; ++i, pos += sizeof(L) * 8) {
        secondary_state[i] = static_cast<L>(read_bits_at(buf, pos, sizeof(L) * 8));
      }
      secondary_states = read_states(meta.secondary->ans_size_log);
    }
    OC_TRY(drain_byte(buf, pos, "its header"));

    const size_t n_body = sat_sub(n, state_n);
    OC_EXPECT(n_body == 0 || (primary_.n_bins > 0 && (!lookback_ || lookback_->n_bins > 0) &&
                              (!secondary_ || secondary_->n_bins > 0)),
              corrupt, "pco chunk has a latent variable without bins for a page of {} values", n);

    P prim[kBatchN] = {};
    L sec[kBatchN] = {};
    uint32_t lookbacks[kBatchN] = {};
    L joined[kBatchN];
    size_t done = 0;
    while (done < n) {
      const size_t remaining = n - done;
      const size_t batch_n = std::min(kBatchN, remaining);
      const size_t pre = std::min(kBatchN, sat_sub(remaining, state_n));
      if (lookback_) {
        lookback_->read_batch(buf, pos, lookback_states, lookbacks, pre);
        OC_TRY(check_pos(pos, bit_size));
      }
      primary_.read_batch(buf, pos, primary_states, prim, pre);
      OC_TRY(check_pos(pos, bit_size));
      std::fill(prim + pre, prim + batch_n, P{0});
      OC_TRY(undelta(d, primary_state, done, prim, pre, batch_n, lookbacks));
      if (secondary_) {
        const size_t sec_pre = std::min(kBatchN, sat_sub(remaining, sec_state_n));
        secondary_->read_batch(buf, pos, secondary_states, sec, sec_pre);
        OC_TRY(check_pos(pos, bit_size));
        std::fill(sec + sec_pre, sec + batch_n, L{0});
        if (sec_state_n != 0) {
          OC_TRY(undelta(d, secondary_state, done, sec, sec_pre, batch_n, lookbacks));
        }
      }
      OC_EXPECT(join(prim, sec, joined, batch_n), corrupt,
                "pco dict index past the dict's {} entries", dict_.size());
      std::memcpy(out + done * sizeof(L), joined, batch_n * sizeof(L));
      done += batch_n;
    }
    if (n > 0) OC_TRY(drain_byte(buf, pos, "its last batch"));
    return {};
  }

 private:
  static Result<void> check_pos(size_t pos, size_t bit_size) {
    OC_EXPECT(pos <= bit_size, corrupt, "pco page data ends early ({} of {} bits needed)", pos,
              bit_size);
    return {};
  }

  // pcodec's drain_empty_byte: the rest of the current byte must be zero bits.
  static Result<void> drain_byte(const uint8_t* buf, size_t& pos, const char* after) {
    if ((pos & 7) != 0) {
      OC_EXPECT((buf[pos >> 3] >> (pos & 7)) == 0, corrupt,
                "pco page: nonzero padding bits after {}", after);
      pos = (pos + 7) & ~size_t{7};
    }
    return {};
  }

  // Delta-decodes one batch of a variable in place: @p pre deltas in, @p batch_n latents out.
  template <class T>
  Result<void> undelta(const DeltaMeta& d, std::vector<T>& state, size_t first, T* x, size_t pre,
                       size_t batch_n, const uint32_t* lookbacks) const {
    switch (d.kind) {
      case DeltaKind::none:
        break;
      case DeltaKind::consecutive:
        consecutive_decode(state.data(), d.order, x, batch_n);
        break;
      case DeltaKind::conv1: {
        if constexpr (sizeof(T) <= 4) {
          T scratch[kBatchN + 32];
          conv1_decode(d, state.data(), x, batch_n, scratch);
        } else {
          return OC_ERROR(Errc::corrupt, "pco Conv1 on 64-bit latents");  // rejected earlier
        }
        break;
      }
      case DeltaKind::lookback: {
        const size_t state_n = d.state_n();
        OC_EXPECT(lookback_decode(state, state_n, uint64_t{1} << d.window_n_log, first, x,
                                  lookbacks, pre),
                  corrupt, "pco lookback outside its window of {}", uint64_t{1} << d.window_n_log);
        std::memcpy(x, state.data() + first, batch_n * sizeof(T));
        break;
      }
    }
    return {};
  }

  bool join(const P* prim, const L* sec, L* dst, size_t n) const {
    const L* l0 = nullptr;
    const uint32_t* idx = nullptr;
    if constexpr (std::is_same_v<P, L>) l0 = prim;
    if constexpr (std::is_same_v<P, uint32_t>) idx = prim;
    switch (kind_) {
      case NumKind::unsigned_int:
        return join_latents<L, NumKind::unsigned_int>(mode_, l0, idx, sec, dst, n);
      case NumKind::signed_int:
        return join_latents<L, NumKind::signed_int>(mode_, l0, idx, sec, dst, n);
      case NumKind::floating:
        if constexpr (sizeof(L) >= 2) {
          return join_latents<L, NumKind::floating>(mode_, l0, idx, sec, dst, n);
        }
        return false;
    }
    return false;
  }

  std::optional<LatentDecoder<uint32_t>> lookback_;
  LatentDecoder<P> primary_;
  std::optional<LatentDecoder<L>> secondary_;
  NumKind kind_ = NumKind::unsigned_int;
  ModeParams<L> mode_;
  std::vector<L> dict_;
};

template <class L>
std::unique_ptr<ChunkImpl> make_typed(ChunkMeta m) {
  if (m.mode == ModeKind::dict) return std::make_unique<TypedChunk<L, uint32_t>>(std::move(m));
  return std::make_unique<TypedChunk<L, L>>(std::move(m));
}

}  // namespace
}  // namespace detail

size_t width(Number n) {
  switch (n) {
    case Number::u8:
    case Number::i8:
      return 1;
    case Number::u16:
    case Number::i16:
    case Number::f16:
      return 2;
    case Number::u32:
    case Number::i32:
    case Number::f32:
      return 4;
    case Number::u64:
    case Number::i64:
    case Number::f64:
      return 8;
  }
  return 0;
}

std::string_view number_name(Number n) {
  static constexpr std::string_view kNames[] = {"u8",  "i8",  "u16", "i16", "u32", "i32",
                                                "u64", "i64", "f16", "f32", "f64"};
  const auto i = static_cast<size_t>(n);
  return i < std::size(kNames) ? kNames[i] : "?";
}

Result<FormatVersion> parse_wrapped_header(std::span<const uint8_t> header) {
  OC_EXPECT(!header.empty(), corrupt, "pco header is empty");
  FormatVersion v;
  v.major = header[0];
  if (v.major >= 4) {
    OC_EXPECT(header.size() >= 2, corrupt, "pco header of format {} lacks its minor version",
              v.major);
    v.minor = header[1];
  }
  OC_EXPECT(v.major <= 4, unsupported, "pco format {}.{} is newer than the 4.x this reads", v.major,
            v.minor);
  return v;
}

ChunkDecoder::ChunkDecoder(std::unique_ptr<detail::ChunkImpl> impl) : impl_(std::move(impl)) {}
ChunkDecoder::ChunkDecoder(ChunkDecoder&&) noexcept = default;
ChunkDecoder& ChunkDecoder::operator=(ChunkDecoder&&) noexcept = default;
ChunkDecoder::~ChunkDecoder() = default;

Result<ChunkDecoder> ChunkDecoder::parse(FormatVersion v, Number n,
                                         std::span<const uint8_t> chunk_meta) {
  OC_EXPECT(v.major <= 4, unsupported, "pco format {}.{} is newer than the 4.x this reads", v.major,
            v.minor);
  OC_ASSIGN_OR_RETURN(detail::ChunkMeta meta, detail::parse_chunk_meta(v, n, chunk_meta));
  std::unique_ptr<detail::ChunkImpl> impl;
  switch (detail::latent_bits(n)) {
    case 8:
      impl = detail::make_typed<uint8_t>(std::move(meta));
      break;
    case 16:
      impl = detail::make_typed<uint16_t>(std::move(meta));
      break;
    case 32:
      impl = detail::make_typed<uint32_t>(std::move(meta));
      break;
    default:
      impl = detail::make_typed<uint64_t>(std::move(meta));
      break;
  }
  return ChunkDecoder(std::move(impl));
}

Result<void> ChunkDecoder::decode_page(std::span<const uint8_t> page, uint32_t n_values,
                                       uint8_t* out) const {
  return impl_->decode_page(page, n_values, out);
}

Number ChunkDecoder::number() const { return impl_->meta.number; }
size_t ChunkDecoder::meta_size() const { return impl_->meta.size_bytes; }
std::string ChunkDecoder::describe() const { return impl_->meta.describe(); }

}  // namespace oc::format::pcodec
