// SPDX-License-Identifier: Apache-2.0
#include "client/row_format.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "config/json.hpp"
#include "format/expr.hpp"
#include "format/string_views.hpp"

namespace oc::client {
namespace {

using format::Column;
using format::DType;
using format::PType;
using format::TypeKind;

void put_escaped(std::string& out, std::string_view s, RowFormat f) {
  if (f == RowFormat::csv) {
    const bool quote = s.find_first_of(",\"\n\r") != std::string_view::npos;
    if (!quote) {
      out += s;
      return;
    }
    out += '"';
    for (char c : s) {
      if (c == '"') out += '"';
      out += c;
    }
    out += '"';
    return;
  }
  append_json_string(out, s);
}

std::string time_of_day(int64_t value, int64_t per_second, int digits) {
  const int64_t secs = value / per_second, frac = value % per_second;
  std::string s = fmt::format("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
  if (digits > 0) s += fmt::format(".{:0{}}", frac, digits);
  return s;
}

int64_t load_int(const Column& c, uint64_t i) {
  switch (c.dtype->storage().ptype) {
    case PType::i32:
      return c.values<int32_t>()[i];
    case PType::i64:
      return c.values<int64_t>()[i];
    default:
      return 0;
  }
}

std::string decimal_text(const uint8_t* p, size_t width, int scale) {
  // Sign-magnitude long division by 10 over the little-endian words.
  std::vector<uint32_t> words(width / 4);
  std::memcpy(words.data(), p, width);
  const bool neg = words.back() & 0x80000000u;
  if (neg) {
    uint64_t carry = 1;
    for (auto& w : words) {
      const uint64_t v = uint64_t{static_cast<uint32_t>(~w)} + carry;
      w = static_cast<uint32_t>(v);
      carry = v >> 32;
    }
  }
  std::string digits;
  auto is_zero = [&] {
    for (auto w : words)
      if (w) return false;
    return true;
  };
  do {
    uint64_t rem = 0;
    for (size_t k = words.size(); k-- > 0;) {
      const uint64_t cur = (rem << 32) | words[k];
      words[k] = static_cast<uint32_t>(cur / 10);
      rem = cur % 10;
    }
    digits.insert(digits.begin(), static_cast<char>('0' + rem));
  } while (!is_zero());
  if (scale > 0) {
    while (digits.size() <= static_cast<size_t>(scale)) digits.insert(digits.begin(), '0');
    digits.insert(digits.end() - scale, '.');
  } else if (scale < 0) {
    digits.append(static_cast<size_t>(-scale), '0');
  }
  return neg ? "-" + digits : digits;
}

void put_value(std::string& out, const Column& c, uint64_t i, RowFormat f, bool nested);

void put_list(std::string& out, const Column& elems, uint64_t begin, uint64_t end, RowFormat f) {
  std::string inner = "[";
  for (uint64_t k = begin; k < end; ++k) {
    if (k > begin) inner += ',';
    put_value(inner, elems, k, RowFormat::jsonl, true);
  }
  inner += ']';
  if (f == RowFormat::csv)
    put_escaped(out, inner, f);
  else
    out += inner;
}

void put_value(std::string& out, const Column& c, uint64_t i, RowFormat f, bool nested) {
  const bool json = f == RowFormat::jsonl || nested;
  if (!c.is_valid(i) || c.dtype->kind == TypeKind::null) {
    if (json) out += "null";
    return;
  }
  const DType& t = *c.dtype;
  const DType& s = t.storage();
  if (t.kind == TypeKind::extension) {
    auto temporal = format::temporal_of(t);
    if (temporal.ok()) {
      const int64_t v = load_int(c, i);
      constexpr int64_t kPerSecond[] = {1'000'000'000, 1'000'000, 1'000, 1};
      constexpr int kDigits[] = {9, 6, 3, 0};
      const int u = static_cast<int>(temporal->unit);
      std::string text;
      switch (temporal->kind) {
        case format::Temporal::Kind::date:
          text = format::date_to_string(
              temporal->unit == format::TimeUnit::days ? v : v / 86'400'000 - (v % 86'400'000 < 0));
          break;
        case format::Temporal::Kind::time:
          text = time_of_day(v, kPerSecond[u], kDigits[u]);
          break;
        case format::Temporal::Kind::timestamp: {
          const int64_t per_day = 86'400 * kPerSecond[u];
          int64_t day = v / per_day, rem = v % per_day;
          if (rem < 0) {
            rem += per_day;
            --day;
          }
          text = format::date_to_string(day) + "T" + time_of_day(rem, kPerSecond[u], kDigits[u]);
          if (!temporal->tz.empty()) text += temporal->tz == "UTC" ? "Z" : " " + temporal->tz;
          break;
        }
      }
      if (json)
        put_escaped(out, text, RowFormat::jsonl);
      else
        out += text;
      return;
    }
  }
  switch (s.kind) {
    case TypeKind::boolean:
      out += format::bitmap_get(c.buffers[0].data(), c.offset + i) ? "true" : "false";
      break;
    case TypeKind::primitive:
      switch (s.ptype) {
        case PType::u8:
          out += fmt::format("{}", c.values<uint8_t>()[i]);
          break;
        case PType::u16:
          out += fmt::format("{}", c.values<uint16_t>()[i]);
          break;
        case PType::u32:
          out += fmt::format("{}", c.values<uint32_t>()[i]);
          break;
        case PType::u64:
          out += fmt::format("{}", c.values<uint64_t>()[i]);
          break;
        case PType::i8:
          out += fmt::format("{}", c.values<int8_t>()[i]);
          break;
        case PType::i16:
          out += fmt::format("{}", c.values<int16_t>()[i]);
          break;
        case PType::i32:
          out += fmt::format("{}", c.values<int32_t>()[i]);
          break;
        case PType::i64:
          out += fmt::format("{}", c.values<int64_t>()[i]);
          break;
        case PType::f16:
          out += fmt::format("f16:{:#06x}", c.values<uint16_t>()[i]);
          break;
        case PType::f32:
        case PType::f64: {
          const double d = s.ptype == PType::f32 ? c.values<float>()[i] : c.values<double>()[i];
          if (std::isfinite(d))
            out += fmt::format("{}", d);
          else if (json)
            out += fmt::format("\"{}\"", d);
          else
            out += fmt::format("{}", d);
          break;
        }
      }
      break;
    case TypeKind::decimal: {
      const size_t w = format::fixed_width_of(s);
      out += decimal_text(c.buffers[0].data() + (c.offset + i) * w, w, s.scale);
      break;
    }
    case TypeKind::utf8:
    case TypeKind::binary: {
      const std::string_view v = format::string_at(c, i);
      if (s.kind == TypeKind::binary) {
        std::string hex;
        for (unsigned char ch : v) hex += fmt::format("{:02x}", ch);
        if (json)
          put_escaped(out, hex, RowFormat::jsonl);
        else
          out += hex;
      } else if (json) {
        put_escaped(out, v, RowFormat::jsonl);
      } else {
        put_escaped(out, v, f);
      }
      break;
    }
    case TypeKind::list: {
      const int32_t* o = c.offsets();
      put_list(out, *c.children[0], static_cast<uint64_t>(o[i]), static_cast<uint64_t>(o[i + 1]),
               json ? RowFormat::jsonl : f);
      break;
    }
    case TypeKind::fixed_size_list: {
      const uint64_t b = (c.offset + i) * s.list_size;
      put_list(out, *c.children[0], b, b + s.list_size, json ? RowFormat::jsonl : f);
      break;
    }
    case TypeKind::struct_: {
      std::string inner = "{";
      for (size_t k = 0; k < s.children.size(); ++k) {
        if (k) inner += ',';
        put_escaped(inner, s.names[k], RowFormat::jsonl);
        inner += ':';
        put_value(inner, *c.children[k], c.offset + i, RowFormat::jsonl, true);
      }
      inner += '}';
      if (json)
        out += inner;
      else
        put_escaped(out, inner, f);
      break;
    }
    default:
      out += "?";
  }
}

}  // namespace

void write_rows(std::ostream& out, const Column& batch, RowFormat f, bool header) {
  const DType& t = *batch.dtype;
  std::string line;
  if (header && f == RowFormat::csv) {
    for (size_t k = 0; k < t.names.size(); ++k) {
      if (k) line += ',';
      put_escaped(line, t.names[k], f);
    }
    out << line << '\n';
  }
  for (uint64_t i = 0; i < batch.length; ++i) {
    line.clear();
    if (f == RowFormat::jsonl) line += '{';
    for (size_t k = 0; k < t.names.size(); ++k) {
      if (k) line += ',';
      if (f == RowFormat::jsonl) {
        put_escaped(line, t.names[k], f);
        line += ':';
      }
      put_value(line, *batch.children[k], batch.offset + i, f, false);
    }
    if (f == RowFormat::jsonl) line += '}';
    out << line << '\n';
  }
}

}  // namespace oc::client
