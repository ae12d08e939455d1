"""Options given once, and by their whole names: the parser that every ``bench.py``
command builds on.

argparse keeps the last of an option given twice (``--num-running 1 --num-running 4``
runs 4 alone). ``OnceParser`` refuses the second one instead, through its ``error``
(one line, exit 2 in every command): ``--num-running given twice (1, then 4): give it
once``, each value as typed; a flag reads ``--quiet given twice: give it once``. No
``bench.py`` option is meant to be repeated (a list is one comma-separated value).

argparse also takes a prefix of an option for the option (``--codec`` for
``--codecs``), so a script's typo, or an option a later version adds, can silently
mean another one; ``OnceParser`` takes whole names only, and an unknown option's line
names the closest one: ``unrecognized arguments: --num-runing 4 (did you mean
--num-running?)``.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import re
import sys
from typing import Any, Optional, Sequence

#: The command words after ``bench.py`` (``ipc_bench.cli.COMMANDS``' keys): the run
#: command's parser names the closest to an unknown first argument (``reprot``).
COMMAND_WORDS = ("microbench", "report", "runner")

#: First arguments a user tries for comparing runs, which ``report`` does (``report A
#: B``): the run command's parser points at it after them.
COMPARE_WORDS = ("diff", "compare")

#: The namespace attribute that holds, during one parse, each option's first value as
#: typed (``dest`` -> text, ``None`` for a flag); removed before the namespace returns.
_GIVEN = "_options_given_once"

#: What ``OnceParser`` reads as a value where argparse would read an option: a word
#: that begins with "-" and a digit, or "-." and a digit (``-1,0``, ``-1e3``, ``-.5``),
#: or "-" and a word that is a number not finite (``-inf``, ``-Infinity``, ``-nan``,
#: alone or first in a list: ``-inf,1``), which its option then refuses as not finite.
NEGATIVE_VALUE = re.compile(r"-\.?[0-9]|-(inf|infinity|nan)(,|\Z)", re.IGNORECASE)

#: The argparse actions that store one value (those ``bench.py``'s options use).
_STORING_ACTIONS = (None, "store", "store_const", "store_true", "store_false")


def repeat_message(option: str, first: Optional[str], second: Optional[str]) -> str:
    """The line for ``option`` given a second time; ``first``/``second``: the values
    as typed (``None`` for a flag, which takes none)."""
    if first is None and second is None:
        return f"{option} given twice: give it once"
    return f"{option} given twice ({first or '(none)'}, then {second or '(none)'}): give it once"


def _once(action_class: type) -> type:
    """A subclass of argparse's ``action_class`` that refuses a second occurrence of
    its option in one parse (``argparse.ArgumentError``, which the parser's ``error``
    turns into its one line)."""

    class Once(action_class):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.typed: Optional[str] = None  # the text the last value was parsed from
            convert = self.type
            if callable(convert):
                @functools.wraps(convert)
                def keep_text(text: str) -> Any:
                    self.typed = text
                    return convert(text)
                self.type = keep_text

        def __call__(self, parser, namespace, values, option_string=None) -> None:
            text = self.typed if callable(self.type) else values
            self.typed = None
            text = text if isinstance(text, str) else None
            given = getattr(namespace, _GIVEN, None)
            if given is not None and self.option_strings:  # not a positional
                if self.dest in given:
                    name = max(self.option_strings, key=len)
                    raise argparse.ArgumentError(
                        None, repeat_message(name, given[self.dest], text))
                given[self.dest] = text
            super().__call__(parser, namespace, values, option_string)

    Once.__name__ = Once.__qualname__ = f"Once{action_class.__name__}"
    return Once


class OnceParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose storing options (values and flags) may be given
    once per command line; a second one is ``error``'s one line (``repeat_message``).
    Positional arguments and ``--help`` are argparse's own; a word that begins with "-"
    and a digit, or is ``-inf`` / ``-nan`` (``NEGATIVE_VALUE``), is a value, never an
    option."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        for name in _STORING_ACTIONS:
            self.register("action", name, _once(self._registry_get("action", name)))
        # argparse's own pattern takes only a number (-1, -.5) for a value and any other
        # word that begins "-" and a digit for an option ("--cpu-affinity -1,0": "expected
        # one argument"); no bench.py option so begins, so each is a value, named by the
        # option's own check
        self._negative_number_matcher = NEGATIVE_VALUE

    def _parse_optional(self, arg_string):
        """argparse's, but a word ``NEGATIVE_VALUE`` takes for a value is one (``None``)
        before argparse reads it as a short option and its value run together: ``-nan``
        is not ``-n an`` in a parser that has ``-n`` (``bench.py microbench``)."""
        if (arg_string not in self._option_string_actions
                and NEGATIVE_VALUE.match(arg_string)):
            return None
        return super()._parse_optional(arg_string)

    #: Whether the positionals are paths (``bench.py report``'s RUN_DIR): a word read
    #: as an unknown option where one is missing is said to be given as ``./-x``.
    path_positionals: bool = False

    #: Command words (``bench.py report``) that an unknown first argument may be a
    #: typo of: its line names the closest (``unknown_message``).
    commands: tuple[str, ...] = ()

    def parse_args(self, args=None, namespace=None):
        """argparse's, with the closest option named after an unknown one, or the
        closest of ``commands`` after an unknown first argument (``unknown_message``);
        a missing positional's line as ``parse_known_args`` gives it."""
        args = sys.argv[1:] if args is None else list(args)
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            first = extras[0] == args[0] and not args[0].startswith("-")
            self.error(unknown_message(extras, [o for a in self._actions
                                                for o in a.option_strings],
                                       self.commands if first else ()))
        return parsed

    def options_elsewhere(self) -> Sequence[str]:
        """Option strings that another parser takes from the words this one leaves
        (``parse_known_args``' extras: pyperf's, after ``bench.py microbench``'s), which
        a missing positional's line never names as unknown; none here."""
        return ()

    def _unknown_options(self, args: Sequence[str]) -> list[str]:
        """The words of ``args`` before a ``--`` that argparse reads as options none of
        this parser's (nor of ``options_elsewhere``): ``-x`` of ``report -x``, a folder
        named ``-x``."""
        known = set(self._option_string_actions).union(self.options_elsewhere())
        unknown = []
        for word in args:
            if word == "--":
                break
            if (word.startswith("-") and word != "-"
                    and word.split("=", 1)[0] not in known
                    and self._parse_optional(word) is not None
                    and not (len(word) > 2 and word[:2] in known)):
                unknown.append(word)
        return unknown

    def _naming_unknown(self, args: Sequence[str]):
        """The parser's ``error`` (the class's: one line, or exit 2), but where a
        positional is missing and ``args`` holds words read as unknown options
        (``_unknown_options``), its line names them (``unknown_required_message``):
        argparse would name the positional missing, not them."""
        error = self.error

        def named(message: str):
            missing = message[len(_REQUIRED):]
            unknown = (self._unknown_options(args) if message.startswith(_REQUIRED)
                       and not missing.startswith("-") else [])
            if unknown:
                message = unknown_required_message(
                    unknown, missing, [o for a in self._actions for o in a.option_strings],
                    self.path_positionals)
            return error(message)
        return named

    def parse_known_args(self, args=None, namespace=None):
        """argparse's, with each option's first value kept in ``namespace`` while the
        command line is parsed (the key is gone from the namespace returned), and a
        missing positional's line naming the unknown options given instead
        (``_naming_unknown``): ``report -x`` and ``microbench -x`` name ``-x``."""
        args = sys.argv[1:] if args is None else list(args)
        namespace = argparse.Namespace() if namespace is None else namespace
        setattr(namespace, _GIVEN, {})
        self.error = self._naming_unknown(args)  # type: ignore[method-assign]
        try:
            return super().parse_known_args(args, namespace)
        finally:
            self.__dict__.pop("error", None)
            if hasattr(namespace, _GIVEN):
                delattr(namespace, _GIVEN)


#: How argparse's line for missing positionals begins (``RUN_DIR``'s).
_REQUIRED = "the following arguments are required: "


def unknown_required_message(unknown: Sequence[str], required: str,
                             options: Sequence[str], paths: bool = False) -> str:
    """The line for a command line whose positionals ``required`` (``RUN_DIR``) are
    missing and that holds words read as options it does not have (``unknown``), a
    folder named ``-x`` as often as a typo: ``unrecognized option -x, and no RUN_DIR
    given``, with `` (a RUN_DIR that begins with "-" is given as ./-x)`` where they are
    paths (``paths``); a typo of an option is named as ``unknown_message`` names it
    (``--no-figure (did you mean --no-figures?)``), with no hint."""
    line = unknown_message(list(unknown), list(options))
    named = line[len("unrecognized arguments: "):]
    word = "options" if len(unknown) > 1 else "option"
    text = f"unrecognized {word} {named}, and no {required} given"
    if not paths or "(did you mean" in named:
        return text
    return f'{text} (a {required.split(", ")[0]} that begins with "-" is given as ./{unknown[0]})'


def did_you_mean(word: str, names: Sequence[str]) -> str:
    """`` (did you mean NAME?)`` for the one of ``names`` closest to ``word``, case
    aside (``difflib``, a ratio of 0.75 or more), else ``''``: ``decode-stedy`` ->
    `` (did you mean decode-steady?)``."""
    lower = {name.lower(): name for name in names}
    close = difflib.get_close_matches(word.lower(), list(lower), n=1, cutoff=0.75)
    return f" (did you mean {lower[close[0]]}?)" if close else ""


def unknown_message(extras: list[str], options: list[str],
                    commands: Sequence[str] = ()) -> str:
    """argparse's line for the arguments ``extras`` it did not take, with the option of
    ``options`` closest to the first unknown ``--name`` (``difflib``, a ratio of 0.75 or
    more; ``--name=value`` by its name): ``unrecognized arguments: --num-runing 4 (did
    you mean --num-running?)``; or, given ``commands`` (the first argument of the
    command line is ``extras[0]``), the command closest to it (``did_you_mean``):
    ``unrecognized arguments: reprot RUN (did you mean report?)``; after a word of
    ``COMPARE_WORDS``, ``report``'s form: ``unrecognized arguments: diff A B (to
    compare runs: python bench.py report RUN_DIR RUN_DIR ...)``."""
    line = f"unrecognized arguments: {' '.join(extras)}"
    if commands and extras[0].lower() in COMPARE_WORDS:
        return f"{line} (to compare runs: python bench.py report RUN_DIR RUN_DIR ...)"
    if commands and not extras[0].startswith("-"):
        hint = did_you_mean(extras[0], commands)
        if hint:
            return line + hint
    for word in extras:
        if word.startswith("--"):
            close = difflib.get_close_matches(word.split("=", 1)[0], options, n=1,
                                              cutoff=0.75)
            if close:
                return f"{line} (did you mean {close[0]}?)"
    return line
