# SPDX-License-Identifier: Apache-2.0
"""Where onecopy reads when nobody says: through the onecopyd that serves this machine, or in this
process. The rule lives in the C library (daemon/client.hpp serving_daemon_socket), so that
Python, the C API and the CLI agree:

- an explicit socket (onecopy.open(..., daemon=PATH), onecopy.dataset(..., daemon=PATH),
  onecopy.torch.Dataset(socket=PATH)) must answer;
- else $ONECOPY_SOCKET: empty means this process, a path means that daemon, which must answer;
- else the default socket (/run/onecopy/onecopyd.sock, the daemon_socket knob) when its file
  exists, which must answer; without the file, this process.

A daemon that should answer and does not is an OnecopyError naming the socket: a misconfigured
node never reads in-process with the trainer's own credentials instead."""

from __future__ import annotations

import ctypes
import os
from typing import Optional, Union

from onecopy._dataset import Dataset, is_pattern
from onecopy._lib import _ERRLEN, OnecopyError, _check, _lib
from onecopy._native import VortexFile
from onecopy._remote_file import RemoteFile

_lib.onecopy_daemon_socket.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                                       ctypes.c_size_t]
_PATH_MAX = 4096


def daemon_socket(socket: Union[str, os.PathLike, None] = None) -> Optional[str]:
    """The socket of the onecopyd that serves reads here (the rule above), or None to read in this
    process. OnecopyError when the chosen socket does not answer."""
    out = ctypes.create_string_buffer(_PATH_MAX)
    err = ctypes.create_string_buffer(_ERRLEN)
    explicit = os.fsencode(socket) if socket else None
    _check(_lib.onecopy_daemon_socket(explicit, out, _PATH_MAX, err, _ERRLEN), err)
    return os.fsdecode(out.value) or None


def serving(daemon: Union[bool, str, os.PathLike, None]) -> Optional[str]:
    """The socket that reads for `daemon` (open's argument), or None to read in this process."""
    if daemon is False:
        return None
    if daemon is True:
        sock = daemon_socket()
        if sock is None:
            raise OnecopyError("not_found", "daemon=True, but no onecopyd serves this machine: "
                                            "$ONECOPY_SOCKET is empty or unset and the "
                                            "default socket (the daemon_socket knob) does not exist")
        return sock
    return daemon_socket(daemon)


def open(path, daemon: Union[bool, str, os.PathLike, None] = None):  # noqa: A001 - mirrors vortex.open
    """Opens a Vortex file: a local path, or an s3://, rados:// or http(s) URL; or, for a
    directory, an s3:// prefix (ending in '/'), a glob or a rados:// pool or prefix, its files as
    one onecopy.Dataset (onecopy.dataset).

    daemon=None (the default): through the onecopyd serving this machine when there is one (the
    rule above: the daemon reads S3 with its credentials, as its operator grants this user), else
    in this process. daemon=False: in this process, with this process's credentials (a
    VortexFile). daemon=True: through the serving daemon, an error when there is none; a path:
    through the daemon at that socket (a RemoteFile)."""
    sock = serving(daemon)
    if is_pattern(os.fspath(path)):
        return Dataset(path, sock)
    return RemoteFile(path, sock) if sock else VortexFile(path)


def dataset(uri_or_uris, daemon: Union[bool, str, os.PathLike, None] = None) -> Dataset:
    """The files of a directory, an s3:// prefix (ending in '/'), a local or s3:// glob, a
    rados:// pattern, or a list of any of those or of files, as one onecopy.Dataset, read where
    `daemon` says (as open's). OnecopyError "not_found" when a pattern matches no file."""
    return Dataset(uri_or_uris, serving(daemon))

