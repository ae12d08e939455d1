"""``bench.py microbench -x``: a word read as an option that neither microbench nor
pyperf has, where RUN_DIR is missing, is named as an unrecognized option, as ``bench.py
report -x`` names it (``OnceParser``), where the line said that RUN_DIR was required;
pyperf's own options (``--fast``) are not named."""

from __future__ import annotations

from ipc_bench import cli

ERROR = "bench.py microbench: error: "


def _refusal(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(["microbench", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_dash_word_is_named_as_an_unrecognized_option(capsys):
    assert _refusal(capsys, "-x") == (
        2, "", ERROR + 'unrecognized option -x, and no RUN_DIR given (a RUN_DIR that '
                       'begins with "-" is given as ./-x)\n')
    assert _refusal(capsys, "-x", "-y", "--rigorous")[2] == (
        ERROR + 'unrecognized options -x -y, and no RUN_DIR given (a RUN_DIR that begins '
                'with "-" is given as ./-x)\n')


def test_a_typo_of_an_option_is_named_with_the_closest(capsys):
    assert _refusal(capsys, "--rigorus") == (
        2, "", ERROR + "unrecognized option --rigorus (did you mean --rigorous?), and no "
                       "RUN_DIR given\n")


def test_pyperf_options_alone_leave_run_dir_missing(capsys):
    for args in (["--fast"], ["--fast", "--min-time=0.1"], []):
        assert _refusal(capsys, *args) == (
            2, "", ERROR + "the following arguments are required: RUN_DIR\n")
    assert _refusal(capsys, "--fast", "-x")[2] == (
        ERROR + 'unrecognized option -x, and no RUN_DIR given (a RUN_DIR that begins '
                'with "-" is given as ./-x)\n')
