# SPDX-License-Identifier: Apache-2.0
"""pyarrow's S3 filesystem as onecopy's Python tools (convert, index) write with it: configured
from the same AWS environment the C library reads (AWS_REGION, AWS_ENDPOINT_URL[_S3], the
credentials chain)."""
from __future__ import annotations

import os
from urllib.parse import urlsplit

import pyarrow.fs as pafs


def s3_filesystem() -> pafs.S3FileSystem:
    """pyarrow's S3 filesystem, configured from the environment."""
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if not endpoint:
        return pafs.S3FileSystem(region=region)
    # pyarrow takes the scheme apart from the "host:port" it calls the endpoint.
    url = urlsplit(endpoint)
    return pafs.S3FileSystem(region=region, scheme=url.scheme or "https", endpoint_override=url.netloc or url.path)
