// SPDX-License-Identifier: Apache-2.0
// The chunk meta reader; the layout is drawn in chunk_meta.hpp. The checks follow pco 1.0.1:
// each names the Rust function it comes from, so a difference can be traced.
#include "format/pcodec/chunk_meta.hpp"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstring>

#include "format/pcodec/bit_reader.hpp"

namespace oc::format::pcodec::detail {
namespace {

// Field widths (pco/src/constants.rs).
constexpr uint32_t kModeBits = 4;
constexpr uint32_t kDeltaVariantBits = 4;
constexpr uint32_t kDeltaOrderBits = 3;
constexpr uint32_t kQuantizeKBits = 8;
constexpr uint32_t kDictLenBits = 25;
constexpr uint32_t kWindowLogBits = 5;
constexpr uint32_t kStateLogBits = 4;
constexpr uint32_t kConvQuantizationBits = 5;
constexpr uint32_t kConvNWeightsBits = 5;
constexpr uint32_t kAnsSizeLogBits = 4;
constexpr uint32_t kNBinsBits = 15;

// Bits of a bin's offset_bits field: enough to write the latent width itself.
uint32_t offset_bits_bits(uint32_t latent_bits) {
  return static_cast<uint32_t>(std::bit_width(latent_bits));
}

// A format newer than the 4.1 this reader knows may legally use a variant we have never seen.
Error unknown_variant(FormatVersion v, const char* what, uint64_t value) {
  const bool newer = v.major > 4 || (v.major == 4 && v.minor > 1);
  return make_error(newer ? Errc::unsupported : Errc::corrupt, __FILE__, __LINE__,
                    "pco chunk meta: unknown {} variant {} (format {}.{})", what, value, v.major,
                    v.minor);
}

// The float a FloatMult base latent stands for: order-preserving latent -> IEEE bits.
uint64_t float_bits_from_latent(uint64_t l, uint32_t bits) {
  const uint64_t sign = uint64_t{1} << (bits - 1);
  const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  return (l & sign) ? (l ^ sign) : (~l & mask);
}

uint32_t mantissa_bits(uint32_t bits) { return bits == 16 ? 10 : bits == 32 ? 23 : 52; }

bool float_finite_nonzero(uint64_t float_bits, uint32_t bits) {
  const uint32_t man = mantissa_bits(bits);
  const uint32_t exp_bits = bits - 1 - man;
  const uint64_t exp = (float_bits >> man) & ((uint64_t{1} << exp_bits) - 1);
  const uint64_t magnitude = float_bits & ((uint64_t{1} << (bits - 1)) - 1);
  return exp != (uint64_t{1} << exp_bits) - 1 && magnitude != 0;
}

// ChunkLatentVarMeta::read_from and Spec::from_weights.
Result<LatentVarMeta> read_latent_var(SafeBitReader& r, uint32_t bits, const char* name) {
  LatentVarMeta var;
  var.bits = bits;
  var.ans_size_log = static_cast<uint32_t>(r.read(kAnsSizeLogBits));
  const auto n_bins = static_cast<uint32_t>(r.read(kNBinsBits));
  OC_EXPECT(!r.overran(), corrupt, "pco chunk meta ends inside the {} latent header", name);
  OC_EXPECT(var.ans_size_log <= kMaxAnsSizeLog, corrupt,
            "pco {} latents: ANS size log {} exceeds {}", name, var.ans_size_log, kMaxAnsSizeLog);
  OC_EXPECT(n_bins <= (uint32_t{1} << var.ans_size_log), corrupt,
            "pco {} latents: {} bins do not fit an ANS table of 2^{}", name, n_bins,
            var.ans_size_log);
  OC_EXPECT(n_bins != 1 || var.ans_size_log == 0, corrupt,
            "pco {} latents: one bin but ANS size log {} (should be 0)", name, var.ans_size_log);

  const uint32_t ob_bits = offset_bits_bits(bits);
  const uint64_t bin_bits = uint64_t{var.ans_size_log} + bits + ob_bits;
  OC_EXPECT(uint64_t{n_bins} * bin_bits <= r.bits_left(), corrupt,
            "pco chunk meta ends inside the {} latents' {} bins", name, n_bins);
  var.bins.resize(n_bins);
  uint64_t total_weight = 0;
  for (Bin& bin : var.bins) {
    // [ans_size_log] weight - 1, [bits] lower, [log2(bits) + 1] offset bits
    bin.weight = static_cast<uint32_t>(r.read(var.ans_size_log)) + 1;
    bin.lower = r.read(bits);
    bin.offset_bits = static_cast<uint32_t>(r.read(ob_bits));
    OC_EXPECT(bin.offset_bits <= bits, corrupt, "pco {} latents: offset bits {} exceed {}", name,
              bin.offset_bits, bits);
    total_weight += bin.weight;
  }
  if (n_bins == 0) total_weight = 1;  // Spec::from_weights treats no bins as one of weight 1
  OC_EXPECT(total_weight == (uint64_t{1} << var.ans_size_log), corrupt,
            "pco {} latents: bin weights sum to {}, not the ANS table size 2^{}", name,
            total_weight, var.ans_size_log);
  return var;
}

// Mode::read_from.
Result<void> read_mode(SafeBitReader& r, ChunkMeta& meta) {
  const uint32_t bits = latent_bits(meta.number);
  const uint64_t variant = r.read(kModeBits);
  switch (variant) {
    case 0:
      meta.mode = ModeKind::classic;
      break;
    case 1:
      // Format 0 (pco 0.0.0, yanked) wrote IntMult with a different GCD scheme.
      OC_EXPECT(meta.version.major != 0, unsupported,
                "pco format 0 IntMult (yanked pco 0.0.0) is not supported");
      meta.mode = ModeKind::int_mult;
      meta.base = r.read(bits);
      break;
    case 2:
      meta.mode = ModeKind::float_mult;
      meta.base = r.read(bits);
      break;
    case 3:
      meta.mode = ModeKind::float_quant;
      meta.quant_k = static_cast<uint32_t>(r.read(kQuantizeKBits));
      break;
    case 4: {
      meta.mode = ModeKind::dict;
      const auto len = static_cast<uint32_t>(r.read(kDictLenBits));
      OC_EXPECT(r.drain_empty_byte(), corrupt,
                "pco chunk meta: nonzero bits between the dict length and its values");
      OC_EXPECT(uint64_t{len} * bits <= r.bits_left(), corrupt,
                "pco chunk meta ends inside its {}-entry dict", len);
      meta.dict.resize(len);
      for (uint64_t& x : meta.dict) x = r.read(bits);
      break;
    }
    default:
      return unknown_variant(meta.version, "mode", variant);
  }
  OC_EXPECT(!r.overran(), corrupt, "pco chunk meta ends inside its mode");
  return {};
}

// DeltaEncoding::read_from (and read_from_pre_v3 for formats 0-2).
Result<void> read_delta(SafeBitReader& r, DeltaMeta& d, FormatVersion v) {
  if (v.major < 3) {
    d.order = static_cast<uint32_t>(r.read(kDeltaOrderBits));
    d.kind = d.order == 0 ? DeltaKind::none : DeltaKind::consecutive;
    return {};
  }
  const uint64_t variant = r.read(kDeltaVariantBits);
  switch (variant) {
    case 0:
      d.kind = DeltaKind::none;
      break;
    case 1:
      d.kind = DeltaKind::consecutive;
      d.order = static_cast<uint32_t>(r.read(kDeltaOrderBits));
      OC_EXPECT(d.order != 0, corrupt, "pco consecutive delta encoding of order 0");
      d.secondary_uses_delta = r.read_bool();
      break;
    case 2:
      d.kind = DeltaKind::lookback;
      d.window_n_log = 1 + static_cast<uint32_t>(r.read(kWindowLogBits));
      d.state_n_log = static_cast<uint32_t>(r.read(kStateLogBits));
      d.secondary_uses_delta = r.read_bool();
      OC_EXPECT(d.state_n_log <= d.window_n_log, corrupt,
                "pco lookback state size log {} exceeds its window size log {}", d.state_n_log,
                d.window_n_log);
      OC_EXPECT(d.window_n_log <= kMaxLookbackWindowLog, corrupt,
                "pco lookback window size log {} exceeds {}", d.window_n_log,
                kMaxLookbackWindowLog);
      break;
    case 3: {
      d.kind = DeltaKind::conv1;
      d.quantization = static_cast<uint32_t>(r.read(kConvQuantizationBits));
      d.bias = static_cast<int64_t>(r.read(64) ^ (uint64_t{1} << 63));  // ordered i64
      d.order = 1 + static_cast<uint32_t>(r.read(kConvNWeightsBits));
      d.weights.resize(d.order);
      for (int64_t& w : d.weights) {
        const auto u = static_cast<uint32_t>(r.read(32)) ^ 0x8000'0000u;  // ordered i32
        w = static_cast<int32_t>(u);
      }
      break;
    }
    default:
      return unknown_variant(v, "delta encoding", variant);
  }
  OC_EXPECT(!r.overran(), corrupt, "pco chunk meta ends inside its delta encoding");
  return {};
}

// ChunkMeta::new (lookback and Conv1 checks) and NumberPriv::mode_is_valid.
Result<void> validate(const ChunkMeta& m) {
  const uint32_t bits = latent_bits(m.number);
  if (m.delta.kind == DeltaKind::lookback) {
    const uint64_t window_n = uint64_t{1} << m.delta.window_n_log;
    for (const Bin& bin : m.lookback->bins) {
      OC_EXPECT(bin.lower >= 1 && bin.lower <= window_n, corrupt,
                "pco lookback bin's lower bound {} is outside the window [1, {}]", bin.lower,
                window_n);
    }
  }
  if (m.delta.kind == DeltaKind::conv1) {
    const uint32_t primary_bits = m.primary.bits;
    OC_EXPECT(primary_bits <= 32, corrupt,
              "pco Conv1 delta encoding on {}-bit latents (at most 32 are allowed)", primary_bits);
    const uint32_t conv_bits = 2 * primary_bits;  // i16, i32 or i64 arithmetic
    const uint32_t max_q = std::min(kMaxConvQuantization, conv_bits - 1);
    OC_EXPECT(m.delta.quantization <= max_q, corrupt, "pco Conv1 quantization {} exceeds {}",
              m.delta.quantization, max_q);
    double abs_weights = 0;
    for (int64_t w : m.delta.weights) abs_weights += std::fabs(static_cast<double>(w));
    const double max_pred = std::fabs(static_cast<double>(m.delta.bias)) +
                            std::ldexp(1.0, static_cast<int>(primary_bits)) * abs_weights;
    OC_EXPECT(max_pred < std::ldexp(1.0, static_cast<int>(conv_bits) - 1), corrupt,
              "pco Conv1 weights and bias may overflow (up to {})", max_pred);
  }
  const bool fl = is_float(m.number);
  switch (m.mode) {
    case ModeKind::classic:
    case ModeKind::dict:
      break;
    case ModeKind::int_mult:
      OC_EXPECT(!fl, corrupt, "pco IntMult mode for {} numbers", number_name(m.number));
      OC_EXPECT(m.base != 0, corrupt, "pco IntMult mode with base 0");
      break;
    case ModeKind::float_mult:
      OC_EXPECT(fl, corrupt, "pco FloatMult mode for {} numbers", number_name(m.number));
      OC_EXPECT(float_finite_nonzero(float_bits_from_latent(m.base, bits), bits), corrupt,
                "pco FloatMult base (latent {:#x}) is not finite and nonzero", m.base);
      break;
    case ModeKind::float_quant: {
      OC_EXPECT(fl, corrupt, "pco FloatQuant mode for {} numbers", number_name(m.number));
      // pco 0.4 (format 3) let k be 0; pco 1.0 requires 0 < k.
      const uint32_t min_k = m.version.major >= 4 ? 1 : 0;
      OC_EXPECT(m.quant_k >= min_k && m.quant_k <= mantissa_bits(bits), corrupt,
                "pco FloatQuant k {} is outside [{}, {}]", m.quant_k, min_k, mantissa_bits(bits));
      break;
    }
  }
  return {};
}

const char* mode_name(ModeKind k) {
  switch (k) {
    case ModeKind::classic:
      return "classic";
    case ModeKind::int_mult:
      return "int_mult";
    case ModeKind::float_mult:
      return "float_mult";
    case ModeKind::float_quant:
      return "float_quant";
    case ModeKind::dict:
      return "dict";
  }
  return "?";
}

}  // namespace

uint32_t latent_bits(Number n) { return static_cast<uint32_t>(width(n) * 8); }

bool is_float(Number n) { return n == Number::f16 || n == Number::f32 || n == Number::f64; }

bool is_signed_int(Number n) {
  return n == Number::i8 || n == Number::i16 || n == Number::i32 || n == Number::i64;
}

uint32_t DeltaMeta::state_n() const {
  switch (kind) {
    case DeltaKind::none:
      return 0;
    case DeltaKind::consecutive:
      return order;
    case DeltaKind::lookback:
      return uint32_t{1} << state_n_log;
    case DeltaKind::conv1:
      return static_cast<uint32_t>(weights.size());
  }
  return 0;
}

bool ChunkMeta::secondary_delta() const {
  return (delta.kind == DeltaKind::consecutive || delta.kind == DeltaKind::lookback) &&
         delta.secondary_uses_delta;
}

std::string ChunkMeta::describe() const {
  std::string s = mode_name(mode);
  switch (mode) {
    case ModeKind::int_mult:
    case ModeKind::float_mult:
      s += fmt::format("(base={:#x})", base);
      break;
    case ModeKind::float_quant:
      s += fmt::format("(k={})", quant_k);
      break;
    case ModeKind::dict:
      s += fmt::format("(n={})", dict.size());
      break;
    case ModeKind::classic:
      break;
  }
  switch (delta.kind) {
    case DeltaKind::none:
      s += " none";
      break;
    case DeltaKind::consecutive:
      s += fmt::format(" consecutive(order={},secondary={:d})", delta.order,
                       delta.secondary_uses_delta);
      break;
    case DeltaKind::lookback:
      s += fmt::format(" lookback(window_log={},state_log={},secondary={:d})", delta.window_n_log,
                       delta.state_n_log, delta.secondary_uses_delta);
      break;
    case DeltaKind::conv1:
      s += fmt::format(" conv1(order={},quantization={})", delta.order, delta.quantization);
      break;
  }
  return s;
}

Result<ChunkMeta> parse_chunk_meta(FormatVersion v, Number n, std::span<const uint8_t> bytes) {
  ChunkMeta m;
  m.version = v;
  m.number = n;
  SafeBitReader r(bytes);
  OC_TRY(read_mode(r, m));
  OC_TRY(read_delta(r, m.delta, v));
  OC_EXPECT(!r.overran(), corrupt, "pco chunk meta ends inside its delta encoding");

  const uint32_t bits = latent_bits(n);
  if (m.delta.kind == DeltaKind::lookback) {
    OC_ASSIGN_OR_RETURN(m.lookback, read_latent_var(r, 32, "lookback"));
  }
  OC_ASSIGN_OR_RETURN(m.primary,
                      read_latent_var(r, m.mode == ModeKind::dict ? 32 : bits, "primary"));
  if (m.mode == ModeKind::int_mult || m.mode == ModeKind::float_mult ||
      m.mode == ModeKind::float_quant) {
    OC_ASSIGN_OR_RETURN(m.secondary, read_latent_var(r, bits, "secondary"));
  }
  OC_EXPECT(r.drain_empty_byte(), corrupt, "pco chunk meta: nonzero bits in its final byte");
  OC_EXPECT(!r.overran(), corrupt, "pco chunk meta is truncated ({} bytes)", bytes.size());
  OC_TRY(validate(m));
  m.size_bytes = r.bit_pos() / 8;
  return m;
}

}  // namespace oc::format::pcodec::detail
