"""scripts/variant_table.py --figure of a run timed at one running count: the µs
panel shares the bytes panel's x axis (limits and scale), where it autoscaled to its
own few points (10 to 100 against the bytes panel's 1 to 1,024)."""

from __future__ import annotations

import pytest
from script_module import load_script


def test_the_panels_share_one_x_axis(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    vt = load_script("variant_table")
    names = [vt.bench_name(vt.bench_key(w, 16, p, "msgpack", "uniform"))
             for p in vt.POLICIES for w in vt.WHATS]
    figures = []
    close = plt.close
    monkeypatch.setattr(plt, "close", lambda fig: (figures.append(fig), close(fig))[1])
    png = tmp_path / "vt.png"
    assert vt.plot([1, 16, 64, 256, 1024], dict.fromkeys(names, 1e-6), str(png)) == []
    ax_bytes, ax_us = figures[0].axes
    assert (ax_us.get_xscale(), ax_bytes.get_xscale()) == ("log", "log")
    # 1 to 1,024 running, log axis, matplotlib's 5 % margins: 2^-0.5 to 2^10.5
    assert ax_us.get_xlim() == ax_bytes.get_xlim() == pytest.approx((2 ** -0.5, 2 ** 10.5))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
