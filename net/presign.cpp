// SPDX-License-Identifier: Apache-2.0
#include "net/presign.hpp"

#include <algorithm>

namespace oc::net {
namespace {

constexpr std::chrono::seconds kMaxExpiry{7 * 24 * 3600};  // SigV4 refuses longer presignings

}  // namespace

Result<std::string> presign_url(const RequestTarget& target, const PresignInput& in,
                                const Credentials& creds) {
  OC_EXPECT(in.expires.count() >= 1 && in.expires <= kMaxExpiry, invalid,
            "a presigned URL must expire within 1 s to 7 days, not {} s", in.expires.count());
  OC_EXPECT(!creds.access_key.empty() && !creds.secret_key.empty(), invalid,
            "presigning needs credentials; anonymous access has none");
  OC_EXPECT(in.amz_date.size() >= 8, invalid,
            "x-amz-date must look like 20130524T000000Z, got '{}'", in.amz_date);
  SigningInput s;
  s.method = in.method;
  s.path = target.path;
  s.query = in.query;
  s.query.emplace_back("X-Amz-Algorithm", "AWS4-HMAC-SHA256");
  s.query.emplace_back("X-Amz-Credential", fmt::format("{}/{}/{}/s3/aws4_request", creds.access_key,
                                                       in.amz_date.substr(0, 8), in.region));
  s.query.emplace_back("X-Amz-Date", std::string(in.amz_date));
  s.query.emplace_back("X-Amz-Expires", std::to_string(in.expires.count()));
  s.query.emplace_back("X-Amz-SignedHeaders", "host");
  // The token is part of the signed query, unlike header signing where it is a header.
  if (!creds.session_token.empty())
    s.query.emplace_back("X-Amz-Security-Token", creds.session_token);
  s.headers = {{"host", target.host_header}};
  s.payload_hash = "UNSIGNED-PAYLOAD";
  s.amz_date = in.amz_date;
  s.region = in.region;
  OC_ASSIGN_OR_RETURN(const Signature sig, sign_v4(s, creds));
  return fmt::format("{}://{}{}?{}&X-Amz-Signature={}", target.scheme, target.host_header,
                     target.wire_path(), canonical_query(s.query), sig.signature);
}

bool is_presigned(const Url& url) noexcept {
  return std::any_of(url.query.begin(), url.query.end(),
                     [](const auto& q) { return q.first == "X-Amz-Signature"; });
}

}  // namespace oc::net
