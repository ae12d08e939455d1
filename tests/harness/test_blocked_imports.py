"""``signals.blocked`` around imports: the modules are imported with SIGINT / SIGTERM / SIGHUP
blocked (one sent meanwhile stays pending, unseen by the module's code), and the signal
is raised as ``Interrupted`` once the mask is put back, the module made whole; the
mask is put back when the import fails too."""

from __future__ import annotations

import signal
import sys

import pytest

from ipc_bench.harness import signals


def test_a_signal_during_the_import_waits_for_its_end(installed, tmp_path, monkeypatch):
    (tmp_path / "blocked_module.py").write_text(
        "import signal\nsignal.raise_signal(signal.SIGTERM)\n"
        "PENDING = sorted(signal.sigpending())\nMADE = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = signal.pthread_sigmask(signal.SIG_BLOCK, ())
    try:
        with pytest.raises(signals.Interrupted) as err:
            with signals.blocked():
                import blocked_module  # noqa: F401
        module = sys.modules["blocked_module"]
        assert (module.PENDING, module.MADE) == ([signal.SIGTERM], True)
    finally:
        sys.modules.pop("blocked_module", None)
    assert err.value.code == 143
    assert signal.pthread_sigmask(signal.SIG_BLOCK, ()) == before


def test_the_mask_is_put_back_when_the_import_fails(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    before = signal.pthread_sigmask(signal.SIG_BLOCK, ())
    with pytest.raises(ModuleNotFoundError) as err:
        with signals.blocked():
            import no_such_module_here  # noqa: F401
    assert str(err.value) == "No module named 'no_such_module_here'"
    assert signal.pthread_sigmask(signal.SIG_BLOCK, ()) == before
