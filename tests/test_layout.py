"""The package's layers (docs/layout.md), checked on the source.

Layers, lowest first: ``engine`` (the system under test) < ``wire`` (codecs,
transports, channel, control messages) < ``harness`` (running a case) < ``analysis``
< ``report`` < ``cli``. A module may import its own layer and those below it, never
above; ``ipc_bench.errors`` and ``ipc_bench.v1rpc`` (vLLM's RPC dataclasses, data only,
in modules whose names must be exactly as long as vLLM's, hence outside the layer
folders) sit below them all and import no layer. No two modules import each other,
directly or through others.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ipc_bench"
LAYERS = ("engine", "wire", "harness", "analysis", "report", "cli")
#: Functions allowed past ~80 lines: the per-step hot bodies, kept in one piece so the
#: measured loop pays no extra calls (each says why in its docstring or comments).
HOT_FUNCTIONS = {
    "engine/scheduler.py:schedule", "engine/model_runner.py:update_states",
    "engine/models.py:forward_logits", "harness/scheduler_loop.py:run_scheduler_loop",
    "harness/async_loop.py:run_async_scheduler_loop",
}
MAX_FUNCTION_LINES = 80


def _modules() -> dict[str, Path]:
    return {".".join(("ipc_bench",) + p.relative_to(PACKAGE).with_suffix("").parts)
            .removesuffix(".__init__"): p for p in PACKAGE.rglob("*.py")}


def _imports(path: Path) -> set[str]:
    """Every ``ipc_bench`` module ``path`` imports, at any depth of the file."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m.startswith("ipc_bench")}


def _layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else -1


def test_every_module_belongs_to_a_layer():
    loose = [m for m in _modules() if _layer(m) < 0
             and m not in ("ipc_bench", "ipc_bench.errors", "ipc_bench.scenarios")
             and m.split(".")[:2] != ["ipc_bench", "v1rpc"]]
    assert loose == []


def test_imports_point_down_only():
    modules = _modules()
    upward = []
    for module, path in modules.items():
        for target in _imports(path):
            if target in modules and _layer(target) > _layer(module):
                upward.append(f"{module} -> {target}")
    assert upward == []


def test_no_import_cycles():
    modules = _modules()
    graph = {m: {t for t in _imports(p) if t in modules and t != m} for m, p in modules.items()}
    cycles = []
    state: dict[str, int] = {}

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                cycles.append(" -> ".join(stack[stack.index(t):] + [t]))
            elif t not in state:
                visit(t, stack + [t])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert cycles == []


@pytest.mark.parametrize("layer", LAYERS)
def test_functions_fit_on_a_screen(layer):
    long = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{path.relative_to(PACKAGE)}:{node.name}"
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES and name not in HOT_FUNCTIONS:
                    long.append(f"{name} ({length} lines)")
    assert long == []
