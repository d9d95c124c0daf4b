// SPDX-License-Identifier: Apache-2.0
#include "config/error.hpp"

#include <cstring>

namespace oc {

std::string_view errc_name(Errc code) noexcept {
  switch (code) {
    case Errc::io: return "io";
    case Errc::timeout: return "timeout";
    case Errc::protocol: return "protocol";
    case Errc::corrupt: return "corrupt";
    case Errc::invalid: return "invalid";
    case Errc::unsupported: return "unsupported";
    case Errc::cuda: return "cuda";
    case Errc::not_found: return "not_found";
    case Errc::out_of_memory: return "out_of_memory";
    case Errc::cancelled: return "cancelled";
  }
  return "unknown";
}

std::string Error::to_string() const {
  std::string out = fmt::format("{}: {}", errc_name(code_), message_);
  if (errno_ != 0) out += fmt::format(" ({})", std::strerror(errno_));
  for (const auto& c : context_) out += fmt::format(" [{}]", c);
  if (file_ != nullptr) out += fmt::format(" [at {}:{}]", file_, line_);
  return out;
}

Error errno_error(int negative_errno, std::string what, const char* file, int line) {
  const int e = negative_errno < 0 ? -negative_errno : negative_errno;
  return Error(e == ENOENT ? Errc::not_found : Errc::io, std::move(what), file, line, e);
}

}  // namespace oc
