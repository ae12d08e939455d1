"""A runner whose data sockets cannot connect after the ``Handshake`` came, because the
scheduler ended as it connected (killed or interrupted: its data ports closed with it),
says the scheduler went away and exits 5 (``EXIT_SCHEDULER_GONE``), where it said
``refusing the handshake: cannot connect to tcp://127.0.0.1:33291: connection refused
or address unreachable`` and exited 3, as if the handshake were its own failure and the
port a wrong one (seen 5 of 5 with the scheduler signalled as a runner started by hand
printed its connected line). A data port refused while the scheduler is there is still
refused as before (``harness.runner_loop._gone_meanwhile``: it looks for the scheduler's
end for ``GONE_CHECK_S`` first)."""

from __future__ import annotations

from ipc_bench.engine.config import ModelConfig, SchedulerConfig
from ipc_bench.harness import runner_loop
from ipc_bench.harness.runner_loop import EXIT_SCHEDULER_GONE, accept_handshake
from ipc_bench.wire.control import PROTOCOL_VERSION, Handshake
from ipc_bench.wire.handshake import RunnerConfig, encode_config
from ipc_bench.wire.transport import EndpointError

S2R = "tcp://127.0.0.1:33291"
REFUSED = f"cannot connect to {S2R}: connection refused or address unreachable"
GONE = "the scheduler at tcp://127.0.0.1:33290 closed the connection"


class _Socks:
    """A runner's sockets whose data connect finds the scheduler's port closed."""

    ctl = None  # never written to: nobody is left to tell

    def connect_data(self, s2r: str, r2s: str) -> None:
        raise EndpointError(REFUSED)


def _handshake() -> Handshake:
    config = RunnerConfig(
        scheduler=SchedulerConfig(max_num_seqs=4, max_model_len=64, block_size=16,
                                  num_blocks=32),
        model=ModelConfig(), policy="send", codec="msgpack", warmup_steps=0,
        peer_timeout_s=10.0, s2r_endpoint=S2R, r2s_endpoint="tcp://127.0.0.1:33292")
    return Handshake(PROTOCOL_VERSION, encode_config(config))


def test_a_data_port_closed_with_its_scheduler_is_a_scheduler_gone(capsys):
    checks = []

    def problem():  # the control connection's end, seen on the third look
        checks.append(1)
        return GONE if len(checks) >= 3 else None

    assert accept_handshake(_Socks(), _handshake(), problem) == EXIT_SCHEDULER_GONE == 5
    assert capsys.readouterr().err.splitlines() == [
        f"runner: {GONE}, noticed while connecting to its data ports"]  # in process
    assert runner_loop.GONE_CHECK_S == 1.0
