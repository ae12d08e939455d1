"""wire_bytes checked independently: a loopback TCP relay counts what really crossed."""

from __future__ import annotations

import socket
import threading

import pytest

from ipc_bench.harness.supervisor import run_case
from ipc_bench.harness.spec import SCHED_COLUMNS, CaseSpec
from ipc_bench.engine.config import ModelConfig, SchedulerConfig
from ipc_bench.analysis.summary import summarize_case
from ipc_bench.wire.transport import Endpoints, SchedulerSockets, zmtp_handshake_bytes
from ipc_bench.engine.workloads import SteadyDecodeWorkload


class CountingRelay:
    """Accepts one TCP connection on 127.0.0.1 and forwards it to ``target_port``,
    counting bytes each way (``to_target``: client -> target)."""

    def __init__(self, target_port: int):
        self.target_port = target_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.to_target = 0
        self.from_target = 0
        self.threads: list[threading.Thread] = []
        accept = threading.Thread(target=self._accept, daemon=True)
        accept.start()
        self.threads.append(accept)

    def _accept(self) -> None:
        self.listener.settimeout(30)
        client, _ = self.listener.accept()
        target = socket.create_connection(("127.0.0.1", self.target_port), timeout=30)
        for src, dst, attr in ((client, target, "to_target"), (target, client, "from_target")):
            t = threading.Thread(target=self._pump, args=(src, dst, attr), daemon=True)
            t.start()
            self.threads.append(t)

    def _pump(self, src: socket.socket, dst: socket.socket, attr: str) -> None:
        src.settimeout(30)
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                setattr(self, attr, getattr(self, attr) + len(data))
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def join(self) -> None:
        for t in self.threads:
            t.join(timeout=10)
        self.listener.close()


@pytest.mark.parametrize("policy", ["send", "cached"])
@pytest.mark.parametrize("codec", ["msgpack", "pickle"])
def test_wire_bytes_match_a_counting_relay(monkeypatch, policy, codec):
    relays: dict[str, CountingRelay] = {}

    class RelayedSockets(SchedulerSockets):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            eps = {}
            for name in ("s2r", "r2s"):
                port = int(getattr(self.endpoints, name).rsplit(":", 1)[1])
                relays[name] = CountingRelay(port)
                eps[name] = f"tcp://127.0.0.1:{relays[name].port}"
            self.endpoints = Endpoints(s2r=eps["s2r"], r2s=eps["r2s"], ctl=self.endpoints.ctl)

    b = 2  # msgpack: decode frames under 255 bytes (1-byte ZMTP size), prefill frames over
    spec = CaseSpec(
        scenario="t", labels={"num_running": b}, policy=policy, codec=codec,
        scheduler=SchedulerConfig(max_num_seqs=b, max_model_len=512, num_blocks=4096),
        model=ModelConfig(),
        make_workload=lambda: SteadyDecodeWorkload(b, seed=1, vocab_size=128_256,
                                                   prompt_len_range=(4, 120),
                                                   output_len_range=(5, 30)),
        warmup_steps=5, max_steps=300, count="all", transport="tcp",
        allow_pickle_over_tcp=codec == "pickle")  # loopback, runner started here
    result = run_case(spec, sockets=RelayedSockets)
    # Empty frames: the end of warm-up (EndWarmup), the input oracle's checks after
    # steps 127 and 255 and at the end, the floor's start and the stop; the digests and
    # the runner's WarmupEnded travel on the control socket.
    assert result.s2r_marker_frames == 6
    for relay in relays.values():
        relay.join()
    summary = summarize_case(result)
    push, pull = zmtp_handshake_bytes("PUSH"), zmtp_handshake_bytes("PULL")
    # s2r: scheduler PUSH -> runner PULL. The runner connected to the relay.
    assert relays["s2r"].from_target == summary["s2r_wire_bytes_total"] + push
    assert relays["s2r"].to_target == pull
    # r2s: runner PUSH -> scheduler PULL.
    assert relays["r2s"].to_target == summary["r2s_wire_bytes_total"] + push
    assert relays["r2s"].from_target == pull
    # msgpack exchanged frames both under and over 255 bytes; every pickle frame is over
    # it (vLLM's RPC envelope, class paths and field names: about 380 bytes at 1 request).
    s2r, r2s = (SCHED_COLUMNS.index(c) for c in ("s2r_payload_bytes", "r2s_payload_bytes"))
    sizes = [row[s2r] for row in result.sched_rows] + [row[r2s] for row in result.sched_rows]
    if codec == "msgpack":
        assert min(sizes) <= 255 < max(sizes)
    else:
        assert min(sizes) > 255
