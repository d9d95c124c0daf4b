// SPDX-License-Identifier: Apache-2.0
#include "config/error.hpp"

#include <cstdlib>
#include <cstring>

namespace oc {

std::string_view errc_name(Errc code) noexcept {
  switch (code) {
    case Errc::io:
      return "io";
    case Errc::timeout:
      return "timeout";
    case Errc::protocol:
      return "protocol";
    case Errc::corrupt:
      return "corrupt";
    case Errc::invalid:
      return "invalid";
    case Errc::unsupported:
      return "unsupported";
    case Errc::cuda:
      return "cuda";
    case Errc::not_found:
      return "not_found";
    case Errc::out_of_memory:
      return "out_of_memory";
    case Errc::cancelled:
      return "cancelled";
    case Errc::denied:
      return "denied";
  }
  return "unknown";
}

std::optional<Errc> errc_from_name(std::string_view name) noexcept {
  for (int c = 0; c <= static_cast<int>(kLastErrc); ++c) {
    if (errc_name(static_cast<Errc>(c)) == name) return static_cast<Errc>(c);
  }
  return std::nullopt;
}

std::string Error::describe() const {
  std::string out = fmt::format("{}: {}", errc_name(code_), message_);
  if (errno_ != 0) out += fmt::format(" ({})", std::strerror(errno_));
  for (const auto& c : context_) out += fmt::format(" [{}]", c);
  return out;
}

std::string Error::located() const {
  std::string out = describe();
  if (file_ != nullptr) out += fmt::format(" [at {}:{}]", file_, line_);
  return out;
}

std::string Error::to_string() const { return debug_positions() ? located() : describe(); }

bool debug_positions() noexcept {
  // Read once: errors are rendered on hot failure paths and from many threads.
  static const bool on = [] {
    const char* v = std::getenv("ONECOPY_DEBUG");
    return v != nullptr && std::string_view(v) == "1";
  }();
  return on;
}

Error current_exception_error(std::string_view where) {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return Error(Errc::out_of_memory, fmt::format("{}: out of memory", where));
  } catch (const std::exception& e) {
    return Error(Errc::invalid, fmt::format("{}: {}", where, e.what()));
  } catch (...) {
    return Error(Errc::invalid, fmt::format("{}: an unknown exception", where));
  }
}

Error errno_error(int negative_errno, std::string what, const char* file, int line) {
  const int e = negative_errno < 0 ? -negative_errno : negative_errno;
  return Error(e == ENOENT ? Errc::not_found : Errc::io, std::move(what), file, line, e);
}

}  // namespace oc
