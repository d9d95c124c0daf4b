// SPDX-License-Identifier: Apache-2.0
#include "client/open_uri.hpp"

#include "net/s3_source.hpp"

namespace oc::client {

Result<std::shared_ptr<format::VortexFile>> open_uri(std::string_view uri) {
  OC_ASSIGN_OR_RETURN(auto source, net::open_any_source(uri));
  return format::VortexFile::open(std::move(source));
}

}  // namespace oc::client
