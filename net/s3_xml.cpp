// SPDX-License-Identifier: Apache-2.0
#include "net/s3_xml.hpp"

#include <charconv>
#include <pugixml.hpp>

#include "net/url.hpp"

namespace oc::net {
namespace {

constexpr uint32_t kMaxPartNumber = 10000;  // S3's limit on parts per upload
constexpr const char* kS3Namespace = "http://s3.amazonaws.com/doc/2006-03-01/";

std::string_view local_name(const pugi::xml_node& n) {
  const std::string_view name = n.name();
  const size_t colon = name.find(':');
  return colon == std::string_view::npos ? name : name.substr(colon + 1);
}

pugi::xml_node child(const pugi::xml_node& parent, std::string_view name) {
  for (pugi::xml_node c : parent.children()) {
    if (c.type() == pugi::node_element && local_name(c) == name) return c;
  }
  return {};
}

std::string text_of(const pugi::xml_node& parent, std::string_view name) {
  return child(parent, name).child_value();
}

// Parses @p xml and returns its root element, which must be <expected>. An <Error> root in its
// place is reported with its code, since that is what a caller most needs to see.
Result<pugi::xml_node> root_element(pugi::xml_document& doc, std::string_view xml,
                                    std::string_view expected) {
  // pugixml expands only the predefined and numeric entities and ignores DTDs, so hostile
  // documents cannot make it fetch anything or blow up memory.
  const pugi::xml_parse_result parsed =
      doc.load_buffer(xml.data(), xml.size(), pugi::parse_default, pugi::encoding_utf8);
  OC_EXPECT(parsed, protocol, "expected an XML <{}> document, but it is malformed ({} at byte {})",
            expected, parsed.description(), parsed.offset);
  const pugi::xml_node root = doc.document_element();
  const std::string_view got = local_name(root);
  if (got == expected) return root;
  if (got == "Error") {
    return OC_ERROR(Errc::protocol, "expected <{}>, got an S3 <Error>: {}: {}", expected,
                    text_of(root, "Code"), text_of(root, "Message"));
  }
  return OC_ERROR(Errc::protocol, "expected an XML <{}> document, got <{}>", expected, got);
}

Result<uint64_t> number_of(const pugi::xml_node& parent, std::string_view name) {
  const std::string_view text = child(parent, name).child_value();
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  OC_EXPECT(ec == std::errc() && p == text.data() + text.size() && !text.empty(), protocol,
            "expected a number in <{}>, got '{}'", name, text);
  return v;
}

Result<std::string> maybe_decode(std::string text, bool url_encoded) {
  if (!url_encoded) return text;
  // S3's encoding-type=url is form encoding: a space arrives as '+', a plus as %2B.
  auto decoded = percent_decode(text, true);
  if (!decoded.ok())
    return OC_ERROR(Errc::protocol, "a listing key is not URL-encoded as announced");
  return decoded;
}

struct StringWriter : pugi::xml_writer {
  std::string out;
  void write(const void* data, size_t size) override {
    out.append(static_cast<const char*>(data), size);
  }
};

}  // namespace

Result<ListObjectsPage> parse_list_objects_v2(std::string_view xml) {
  pugi::xml_document doc;
  OC_ASSIGN_OR_RETURN(const pugi::xml_node root, root_element(doc, xml, "ListBucketResult"));
  const bool url_encoded = text_of(root, "EncodingType") == "url";
  ListObjectsPage page;
  for (pugi::xml_node c : root.children()) {
    const std::string_view name = local_name(c);
    if (name == "Contents") {
      ListedObject o;
      OC_EXPECT(child(c, "Key"), protocol, "expected <Key> in a listing's <Contents>");
      OC_ASSIGN_OR_RETURN(o.key, maybe_decode(text_of(c, "Key"), url_encoded));
      OC_ASSIGN_OR_RETURN(o.size, number_of(c, "Size"));
      o.etag = text_of(c, "ETag");
      o.last_modified = text_of(c, "LastModified");
      page.contents.push_back(std::move(o));
    } else if (name == "CommonPrefixes") {
      OC_ASSIGN_OR_RETURN(std::string prefix, maybe_decode(text_of(c, "Prefix"), url_encoded));
      page.common_prefixes.push_back(std::move(prefix));
    }
  }
  const std::string truncated = text_of(root, "IsTruncated");
  OC_EXPECT(truncated.empty() || truncated == "true" || truncated == "false", protocol,
            "expected true or false in <IsTruncated>, got '{}'", truncated);
  page.is_truncated = truncated == "true";
  page.next_continuation_token = text_of(root, "NextContinuationToken");
  // Without a token a truncated listing cannot be continued; looping on it would never end.
  OC_EXPECT(!page.is_truncated || !page.next_continuation_token.empty(), protocol,
            "expected <NextContinuationToken> in a truncated listing");
  if (child(root, "KeyCount")) {
    OC_ASSIGN_OR_RETURN(page.key_count, number_of(root, "KeyCount"));
  }
  return page;
}

Result<S3ErrorBody> parse_s3_error(std::string_view xml) {
  pugi::xml_document doc;
  const pugi::xml_parse_result parsed =
      doc.load_buffer(xml.data(), xml.size(), pugi::parse_default, pugi::encoding_utf8);
  OC_EXPECT(parsed, protocol,
            "expected an XML <Error> document, but it is malformed ({} at byte {})",
            parsed.description(), parsed.offset);
  const pugi::xml_node root = doc.document_element();
  OC_EXPECT(local_name(root) == "Error", protocol, "expected an XML <Error> document, got <{}>",
            local_name(root));
  return S3ErrorBody{text_of(root, "Code"), text_of(root, "Message"), text_of(root, "RequestId"),
                     text_of(root, "Resource")};
}

Result<std::string> parse_initiate_multipart(std::string_view xml) {
  pugi::xml_document doc;
  OC_ASSIGN_OR_RETURN(const pugi::xml_node root,
                      root_element(doc, xml, "InitiateMultipartUploadResult"));
  std::string id = text_of(root, "UploadId");
  OC_EXPECT(!id.empty(), protocol, "expected <UploadId> in <InitiateMultipartUploadResult>");
  return id;
}

Result<CompletedUpload> parse_complete_multipart(std::string_view xml) {
  pugi::xml_document doc;
  auto root = root_element(doc, xml, "CompleteMultipartUploadResult");
  if (!root.ok()) {
    // A 200 carrying <Error> means the upload failed after S3 accepted the request.
    if (auto err = parse_s3_error(xml); err.ok()) {
      return OC_ERROR(Errc::io, "CompleteMultipartUpload failed: {}: {}", err->code, err->message);
    }
    return std::move(root).error();
  }
  // Ceph Pacific answers with an empty <ETag/>; the upload is complete all the same.
  return CompletedUpload{text_of(*root, "ETag"), text_of(*root, "Location")};
}

Result<std::string> complete_multipart_body(std::span<const CompletedPart> parts) {
  OC_EXPECT(!parts.empty(), invalid, "a multipart upload needs at least one part");
  pugi::xml_document doc;
  pugi::xml_node root = doc.append_child("CompleteMultipartUpload");
  root.append_attribute("xmlns").set_value(kS3Namespace);
  uint32_t previous = 0;
  for (const CompletedPart& p : parts) {
    OC_EXPECT(p.number > previous && p.number <= kMaxPartNumber, invalid,
              "part number {} must be in 1..{} and above the previous part's {}", p.number,
              kMaxPartNumber, previous);
    previous = p.number;
    pugi::xml_node part = root.append_child("Part");
    part.append_child("PartNumber").text().set(p.number);
    part.append_child("ETag").text().set(p.etag.c_str());
  }
  StringWriter w;
  doc.save(w, "", pugi::format_raw | pugi::format_no_declaration);
  return std::move(w.out);
}

void fuzz_parse_s3_xml(std::span<const uint8_t> bytes) {
  const std::string_view xml(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  (void)parse_list_objects_v2(xml);
  (void)parse_s3_error(xml);
  (void)parse_initiate_multipart(xml);
  (void)parse_complete_multipart(xml);
}

}  // namespace oc::net
