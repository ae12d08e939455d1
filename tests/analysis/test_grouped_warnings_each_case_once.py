"""``results.grouped_warnings`` names each case of a grouped line once: the kept first
line names its case, and the count and list after it are of the other cases."""

from __future__ import annotations

from ipc_bench.analysis.results import grouped_warnings


def _line(case: str) -> str:
    return f"R/summary.json: case '{case}' has no_floor 1, not true or false"


def test_two_cases_name_the_other_one():
    assert grouped_warnings([_line("a"), _line("b")]) == [
        "R/summary.json: case 'a' has no_floor 1, not true or false; the same in 1 other "
        "case ('b')"]


def test_three_cases_name_the_two_others():
    assert grouped_warnings([_line("a"), _line("b"), _line("c")]) == [
        "R/summary.json: case 'a' has no_floor 1, not true or false; the same in 2 other "
        "cases ('b', 'c')"]


def test_many_cases_name_two_others_and_count_the_rest():
    lines = [_line(c) for c in "abcdef"]
    assert grouped_warnings(lines) == [
        "R/summary.json: case 'a' has no_floor 1, not true or false; the same in 5 other "
        "cases ('b', 'c' and 3 more)"]


def test_entries_name_the_others_too():
    lines = [f"R/summary.json: key cases[{i}].policy is given 2 times (the last one read)"
             for i in range(4)]
    assert grouped_warnings(lines) == [
        "R/summary.json: key cases[0].policy is given 2 times (the last one read); the "
        "same in 3 other cases (cases[1], cases[2] and 1 more)"]


def test_the_first_case_again_is_not_counted_among_the_others():
    lines = [_line("a"), _line("a"), _line("b")]
    assert grouped_warnings(lines) == [
        "R/summary.json: case 'a' has no_floor 1, not true or false; the same in 1 other "
        "case ('b')"]
