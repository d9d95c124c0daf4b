// SPDX-License-Identifier: Apache-2.0
// vortex.datetimeparts: timestamps split into days, seconds within the day and subseconds,
// each stored as its own (compressible) integer array. The default compressor emits it for
// timestamp columns.
//
// - buffers:  none.
// - metadata: `DateTimePartsMetadata { PType days_ptype = 1; PType seconds_ptype = 2;
//              PType subseconds_ptype = 3 }`, all integer types.
// - children: [days (days_ptype, the timestamp's nullability: it carries the validity),
//              seconds (non-nullable seconds_ptype), subseconds (non-nullable
//              subseconds_ptype)], each len rows.
// The dtype is a `vortex.timestamp` extension with unit s, ms, us or ns over i64 storage. With
// `per_second` ticks of the unit in a second (1, 10^3, 10^6, 10^9), each value is
//     days x 86400 x per_second + seconds x per_second + subseconds
// computed in 64-bit two's-complement arithmetic (wrapping, as the upstream decoder's
// release build does), with every part first converted to i64.
#include "format/decode.hpp"
#include "format/encodings/integer_access.hpp"
#include "format/encodings/integers.hpp"
#include "format/encodings/registry.hpp"
#include "format/proto/datetime_parts.pb.h"

namespace oc::format::encodings {
namespace {

constexpr uint64_t kSecondsPerDay = 86'400;

Result<uint64_t> ticks_per_second(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::ns:
      return uint64_t{1'000'000'000};
    case TimeUnit::us:
      return uint64_t{1'000'000};
    case TimeUnit::ms:
      return uint64_t{1'000};
    case TimeUnit::s:
      return uint64_t{1};
    case TimeUnit::days:
      break;
  }
  return OC_ERROR(Errc::corrupt, "vortex.datetimeparts cannot hold a timestamp in days");
}

/// Adds `part[i] x scale` to `acc[i]` for every row, the part sign-extended to 64 bits.
Result<void> accumulate(const Column& part, uint64_t scale, uint64_t* acc) {
  return visit_integers(part, [&](const auto* v) {
    for (uint64_t i = 0; i < part.length; ++i) {
      acc[i] += static_cast<uint64_t>(static_cast<int64_t>(v[i])) * scale;
    }
  });
}

Result<ColumnPtr> decode_datetime_parts(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                        DecodeContext& ctx) {
  OC_TRY(expect_shape(node, 0, 3, 3));
  OC_ASSIGN_OR_RETURN(Temporal temporal, temporal_of(*t));
  OC_EXPECT(temporal.kind == Temporal::Kind::timestamp, corrupt, "vortex.datetimeparts for {}",
            t->to_string());
  OC_EXPECT(t->storage().kind == TypeKind::primitive && t->storage().ptype == PType::i64, corrupt,
            "vortex.datetimeparts for timestamps stored as {}", t->storage().to_string());
  OC_ASSIGN_OR_RETURN(uint64_t per_second, ticks_per_second(temporal.unit));
  OC_ASSIGN_OR_RETURN(
      auto meta, parse_metadata<pb::DateTimePartsMetadata>(node.metadata, "vortex.datetimeparts"));
  OC_ASSIGN_OR_RETURN(PType days_ptype,
                      integer_ptype(static_cast<uint64_t>(meta.days_ptype()), "days"));
  OC_ASSIGN_OR_RETURN(PType seconds_ptype,
                      integer_ptype(static_cast<uint64_t>(meta.seconds_ptype()), "seconds"));
  OC_ASSIGN_OR_RETURN(PType subseconds_ptype,
                      integer_ptype(static_cast<uint64_t>(meta.subseconds_ptype()), "subseconds"));
  OC_TRY(ctx.check_alloc(len, 8, "timestamps"));

  OC_ASSIGN_OR_RETURN(
      auto days, ctx.decode(node.children[0], DType::make_primitive(days_ptype, t->nullable), len));
  OC_ASSIGN_OR_RETURN(
      auto seconds, ctx.decode(node.children[1], DType::make_primitive(seconds_ptype, false), len));
  OC_ASSIGN_OR_RETURN(
      auto subseconds,
      ctx.decode(node.children[2], DType::make_primitive(subseconds_ptype, false), len));
  Buffer ticks = Buffer::allocate_array(len, 8);
  OC_TRY(accumulate(*days, kSecondsPerDay * per_second, ticks.mutable_as<uint64_t>()));
  OC_TRY(accumulate(*seconds, per_second, ticks.mutable_as<uint64_t>()));
  OC_TRY(accumulate(*subseconds, 1, ticks.mutable_as<uint64_t>()));

  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = len;
  c->buffers.push_back(std::move(ticks));
  c->validity = validity_from_bit0(*days);
  c->null_count = c->validity.empty() ? 0 : days->null_count;
  return ColumnPtr(std::move(c));
}

}  // namespace

void register_datetime_parts() { register_encoding("vortex.datetimeparts", decode_datetime_parts); }

}  // namespace oc::format::encodings
