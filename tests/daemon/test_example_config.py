# SPDX-License-Identifier: Apache-2.0
"""config/onecopyd.example.toml is what `onecopyd --print-example-config` prints, so the annotated
example never falls behind the knob table, and onecopyd accepts it as a config file."""

import subprocess

from test_daemon import ONECOPYD, ROOT


def test_the_checked_in_example_is_current_and_loads(tmp_path):
    printed = subprocess.run([str(ONECOPYD), "--print-example-config"], capture_output=True, text=True,
                             timeout=30, check=True).stdout
    assert printed == (ROOT / "config" / "onecopyd.example.toml").read_text(), \
        "regenerate with: build/onecopyd --print-example-config > config/onecopyd.example.toml"
    assert "shard_unit_rows" in printed and "daemon_slab_bytes" in printed
    # Every knob commented out: loading it gives the defaults, and a bad edit is refused.
    bad = tmp_path / "bad.toml"
    bad.write_text(printed + "\ndaemon_slab_bytes = \"3MiB\"\n")
    r = subprocess.run([str(ONECOPYD), "--config", str(bad), "--socket", str(tmp_path / "s")],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "daemon_slab_bytes" in r.stderr
