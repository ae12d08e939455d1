"""``--num-spec-tokens``' help says what a run checks (not more)."""

from __future__ import annotations


def _help(option: str) -> str:
    from ipc_bench.cli.options import build_parser

    parser = build_parser()
    (action,) = [a for a in parser._actions if option in a.option_strings]
    return " ".join(action.help.split())


def test_the_spec_help_says_streams_are_compared_within_each_k_only():
    text = _help("--num-spec-tokens")
    assert "token streams equal those without drafts" not in text
    assert ("a run compares the token streams of the policies and codecs within each K "
            "(equal schedules), never across K, whose schedules differ: the input oracle "
            "checks every K.") in text
