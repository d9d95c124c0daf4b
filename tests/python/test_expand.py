# SPDX-License-Identifier: Apache-2.0
"""onecopy.expand on local directories and globs (S3 prefixes: tests/net/test_s3_servers.py)."""

import pytest

import onecopy


def test_directories_globs_and_plain_names(tmp_path):
    for name in ("b.vortex", "a.vortex", "c.parquet"):
        (tmp_path / name).write_bytes(b"x")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "d.vortex").write_bytes(b"x")
    assert onecopy.expand(tmp_path) == [str(tmp_path / "a.vortex"), str(tmp_path / "b.vortex")]
    assert onecopy.expand(str(tmp_path / "*" / "*.vortex")) == [str(tmp_path / "sub" / "d.vortex")]
    assert onecopy.expand(str(tmp_path / "[ab].vortex")) == [str(tmp_path / "a.vortex"), str(tmp_path / "b.vortex")]
    # A plain local name is itself once it exists; URLs are themselves, unchecked.
    assert onecopy.expand(str(tmp_path / "c.parquet")) == [str(tmp_path / "c.parquet")]
    assert onecopy.expand("https://example.com/x*.vortex") == ["https://example.com/x*.vortex"]


def test_a_missing_local_name_is_not_found(tmp_path):
    missing = str(tmp_path / "missing.vortex")
    with pytest.raises(onecopy.OnecopyError) as e:
        onecopy.expand(missing)
    assert e.value.code == "not_found"
    assert f"{missing}: no such file or directory" in str(e.value)


def test_no_match_is_not_found(tmp_path):
    with pytest.raises(onecopy.OnecopyError) as e:
        onecopy.expand(str(tmp_path / "*.vortex"))
    assert e.value.code == "not_found"
    assert "no Vortex files match" in str(e.value)
    (tmp_path / "empty").mkdir()
    with pytest.raises(onecopy.OnecopyError, match="no Vortex files match"):
        onecopy.expand(tmp_path / "empty")
