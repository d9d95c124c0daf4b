// SPDX-License-Identifier: Apache-2.0
// The AWS shared files: INI dialect, profile selection, path overrides and hostile input.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "net/aws_config.hpp"
#include "tests/net/fake_env.hpp"

using namespace oc;

namespace {

// A private directory for one test's files, removed afterwards.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char tmpl[] = "/tmp/oc-aws-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
};

}  // namespace

TEST_CASE("config file sections, comments and nesting", "[net][aws_config]") {
  const char* text =
      "# a comment\n"
      "; another\n"
      "[default]\n"
      "region = us-west-2   # trailing comment\n"
      "Output=json\n"
      "s3 =\n"
      "  addressing_style = path\n"
      "\tmax_concurrent_requests=20\n"
      "endpoint_url = http://minio:9000/#not-a-comment\n"
      "\n"
      "[profile dev]  ; comment after header\n"
      "region=eu-central-1\r\n"
      "[sso-session corp]\n"
      "sso_region = us-east-1\n"
      "[stray]\n"
      "region = ignored\n";
  auto m = net::parse_aws_ini(text, net::AwsFileKind::config, "cfg");
  REQUIRE(m.ok());
  CHECK(m->size() == 2);
  const auto& d = m->at("default");
  CHECK(d.at("region") == "us-west-2");
  CHECK(d.at("output") == "json");
  CHECK(d.at("s3") == "");
  CHECK(d.at("s3.addressing_style") == "path");
  CHECK(d.at("s3.max_concurrent_requests") == "20");
  CHECK(d.at("endpoint_url") == "http://minio:9000/#not-a-comment");
  CHECK(m->at("dev").at("region") == "eu-central-1");
}

TEST_CASE("credentials file names profiles without a prefix", "[net][aws_config]") {
  auto m = net::parse_aws_ini(
      "[default]\naws_access_key_id=AKIA1\n[ci]\naws_access_key_id = AKIA2\n"
      "aws_session_token = abc\n  def\n",
      net::AwsFileKind::credentials, "creds");
  REQUIRE(m.ok());
  CHECK(m->at("default").at("aws_access_key_id") == "AKIA1");
  CHECK(m->at("ci").at("aws_access_key_id") == "AKIA2");
  CHECK(m->at("ci").at("aws_session_token") == "abc\ndef");  // a continuation line
}

TEST_CASE("malformed files name the file and line, never the text", "[net][aws_config]") {
  for (const char* bad :
       {"key = before any section\n", "[default\nx=1\n", "[default]\njust-a-secret-value\n", "[]\n",
        "[default] junk\n", "[default]\n = value\n", "[default]\n  indented=1\n"}) {
    auto m = net::parse_aws_ini(bad, net::AwsFileKind::config, "/home/u/.aws/config");
    INFO(bad);
    REQUIRE_FALSE(m.ok());
    CHECK(m.error().code() == Errc::invalid);
    CHECK(m.error().message().find("/home/u/.aws/config:") == 0);
  }
  auto m = net::parse_aws_ini("[default]\nwJalrXUtnFEMI\n", net::AwsFileKind::credentials, "f");
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().to_string().find("wJalr") == std::string::npos);
}

TEST_CASE("hostile INI input does not crash", "[net][aws_config]") {
  std::string junk;
  for (int i = 0; i < 4096; ++i) junk += static_cast<char>((i * 131 + 7) % 256);
  for (const std::string& text :
       {junk, std::string(10000, '['), std::string("[default]\n") + std::string(5000, '='),
        std::string("[a]\nk=\n") + std::string(3000, ' ') + "x=y\n", std::string("\0\0\0", 3),
        std::string("[profile ]\nx=1\n")}) {
    (void)net::parse_aws_ini(text, net::AwsFileKind::config, "f");
    (void)net::parse_aws_ini(text, net::AwsFileKind::credentials, "f");
  }
}

TEST_CASE("shared config: paths, profile selection and merging", "[net][aws_config]") {
  TempDir dir;
  std::filesystem::create_directories(dir.path / ".aws");
  dir.write(
      ".aws/config",
      "[default]\nregion=us-west-1\n[profile dev]\nregion=eu-west-1\naws_access_key_id=CFG\n");
  dir.write(".aws/credentials", "[dev]\naws_access_key_id=CRED\n");
  const std::string home = dir.path.string();

  auto c = net::load_shared_config(test::env_of({{"HOME", home}}));
  REQUIRE(c.ok());
  CHECK(c->profile == "default");
  CHECK(c->profile_found);
  CHECK(c->config_path == home + "/.aws/config");
  CHECK(*c->get("region") == "us-west-1");
  CHECK(c->get("aws_access_key_id") == nullptr);

  c = net::load_shared_config(test::env_of({{"HOME", home}, {"AWS_PROFILE", "dev"}}));
  REQUIRE(c.ok());
  CHECK(*c->get("region") == "eu-west-1");
  CHECK(*c->get("aws_access_key_id") == "CRED");  // the credentials file wins

  c = net::load_shared_config(test::env_of({{"HOME", home}, {"AWS_PROFILE", "dev"}}), "nope");
  REQUIRE(c.ok());
  CHECK(c->profile == "nope");
  CHECK_FALSE(c->profile_found);

  const std::string other = dir.write("other", "[profile x]\nregion=ap-south-1\n");
  c = net::load_shared_config(test::env_of({{"HOME", home},
                                            {"AWS_CONFIG_FILE", "~/other"},
                                            {"AWS_SHARED_CREDENTIALS_FILE", home + "/missing"}}),
                              "x");
  REQUIRE(c.ok());
  CHECK(c->config_path == other);
  CHECK(*c->get("region") == "ap-south-1");

  c = net::load_shared_config(test::env_of({}));  // no HOME: no files, no error
  REQUIRE(c.ok());
  CHECK(c->config_path.empty());
  CHECK_FALSE(c->profile_found);

  c = net::load_shared_config(test::env_of({{"HOME", home}, {"AWS_CONFIG_FILE", home}}));
  REQUIRE_FALSE(c.ok());  // a directory is not a readable file
  CHECK(c.error().code() == Errc::io);

  dir.write("bad", "oops\n");
  c = net::load_shared_config(test::env_of({{"HOME", home}, {"AWS_CONFIG_FILE", home + "/bad"}}));
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().code() == Errc::invalid);
}
