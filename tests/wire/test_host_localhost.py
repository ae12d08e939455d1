"""``--host localhost`` (any case) is read as ``127.0.0.1``, as a hand-started runner's
``--connect tcp://localhost:PORT`` is; other names stay refused (no DNS lookup decides
where a benchmark listens)."""
from __future__ import annotations

import pytest

from ipc_bench.cli.options import build_parser
from ipc_bench.wire.transport import check_host


@pytest.mark.parametrize("given", ["localhost", "LocalHost", "LOCALHOST"])
def test_localhost_is_127_0_0_1(given):
    assert check_host(given) == "127.0.0.1"


def test_the_parser_stores_the_address():
    args = build_parser().parse_args(["--scenario", "decode-steady", "--transport", "tcp",
                                      "--host", "localhost"])
    assert args.host == "127.0.0.1"


def test_another_name_is_refused_in_one_line():
    with pytest.raises(ValueError) as info:
        check_host("localhost.localdomain")
    assert str(info.value) == ("--host must be an IP address such as 127.0.0.1 or ::1 "
                               "(or localhost), got 'localhost.localdomain'")
