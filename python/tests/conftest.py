import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # numerics, ranks

import xccl  # noqa: E402
import pytest  # noqa: E402


def pytest_report_header(config):
    return f"xccl {'.'.join(map(str, xccl.version()))} ({xccl.platform}) from {xccl.library_path}"


host_only = pytest.mark.skipif(xccl.platform != "host",
                               reason="host-platform tests (numpy tensors); this libxccl is "
                                      f"{xccl.platform}")
