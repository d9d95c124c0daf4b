// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Small one-off HTTP requests (credentials endpoints) over onecopy's own HTTP stack.
#pragma once

#include <memory>

#include "net/connection.hpp"
#include "net/credentials.hpp"

namespace oc::net {

/// A fetch that opens a fresh connection per request (credentials are fetched rarely), with the
/// request's timeout covering connect, send and the whole response. Bodies are collected as text.
/// @param tls used for https URLs; may be null when only http endpoints are expected.
[[nodiscard]] HttpFetch make_http_fetch(std::shared_ptr<TlsContext> tls);

}  // namespace oc::net
