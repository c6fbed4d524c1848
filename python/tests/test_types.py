"""The published types refuse mistakes: ``mypy --strict`` on ``typecheck/mistakes.py`` reports
errors on exactly the lines marked ``# mistake`` (so a mistake the types silently accept fails
here), and accepts every line of ``typecheck/correct.py``. mypy checks the installed package,
as a user's type checker sees it."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest

import statestore

CASES = Path(__file__).parent / "typecheck"
ERROR = re.compile(r"^(?P<file>[^:]+\.py):(?P<line>\d+): error: (?P<message>.*)$")


def mypy_errors(tmp_path: Path, *files: Path) -> Dict[str, Dict[int, List[str]]]:
    """``{file name: {line: [messages]}}`` of ``mypy --strict`` on ``files``, run outside the
    source tree so that the installed ``statestore`` is the one checked."""
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--cache-dir", str(tmp_path / "cache")]
        + [str(f) for f in files],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=200,
    )
    errors: Dict[str, Dict[int, List[str]]] = {}
    for line in result.stdout.splitlines():
        match = ERROR.match(line)
        if match:
            name = Path(match["file"]).name
            errors.setdefault(name, {}).setdefault(int(match["line"]), []).append(match["message"])
    # mypy exits 1 with errors, 2 when it could not run at all (no statestore, a crash).
    assert result.returncode in (0, 1), result.stdout + result.stderr
    return errors


@pytest.mark.timeout(240)
def test_mypy_reports_every_mistake_and_accepts_the_correct_uses(tmp_path: Path) -> None:
    mistakes = CASES / "mistakes.py"
    marked = {
        number for number, text in enumerate(mistakes.read_text().splitlines(), start=1) if "  # mistake: " in text
    }
    assert len(marked) >= 15, "the mistakes file lost its marked lines"
    errors = mypy_errors(tmp_path, CASES / "correct.py", mistakes)
    assert errors.get("correct.py", {}) == {}, errors.get("correct.py")
    reported = errors.get("mistakes.py", {})
    accepted = sorted(marked - set(reported))
    unexpected = {line: messages for line, messages in reported.items() if line not in marked}
    assert not accepted, f"mistakes the types accept, on lines {accepted} of {mistakes}"
    assert not unexpected, f"errors on lines that are no mistake: {unexpected}"
    assert len(reported) == len(marked)


def test_connect_options_type_names_every_connection_setting() -> None:
    # The TypedDicts behind connect(**options) / from_env(**options) and core's option table
    # (CONNECT_OPTIONS) list the same names: a setting added to core must be added to the type.
    settings = {name for name, *_ in statestore.CONNECT_OPTIONS}
    assert set(statestore.ConnectOptions.__annotations__) == settings - {"host", "port"}
    assert set(statestore.EnvOptions.__annotations__) == settings


@pytest.mark.timeout(240)
def test_each_operation_keeps_its_exact_type_in_both_flavours(tmp_path: Path) -> None:
    # An operation is written once (``@operation`` in ``_common``); what each flavour's method
    # shows a type checker must stay that body's parameters with the flavour's return type.
    reveal = CASES / "reveal.py"
    lines = reveal.read_text().splitlines()
    expected = {
        number: lines[number].strip().removeprefix("# ")
        for number, text in enumerate(lines, start=1)
        if text.strip().startswith("reveal_type(")
    }
    assert len(expected) >= 25, "the reveal file lost its cases"
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--cache-dir", str(tmp_path / "cache"), str(reveal)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=200,
    )
    revealed = {}
    for line in result.stdout.splitlines():
        match = re.match(r'^[^:]+\.py:(\d+): note: Revealed type is "(.*)"$', line)
        if match:
            revealed[int(match[1])] = match[2]
    assert revealed == expected, result.stdout + result.stderr


@pytest.mark.parametrize("flavour", [statestore.Client, statestore.AsyncClient], ids=lambda c: c.__name__)
def test_each_operation_has_the_docstring_of_its_one_body(flavour: type) -> None:
    from statestore import _common

    for name in ("set", "get", "delete", "vdel", "unobserve", "close"):
        body = inspect.getattr_static(_common.ClientBase, name)
        method = getattr(flavour, name)
        assert method.__doc__ and method.__doc__ == body.__doc__, name
        assert method.__qualname__ == f"{flavour.__name__}.{name}"


def test_the_package_exports_exactly_the_result_types_the_native_module_exports() -> None:
    from statestore import _native

    assert sorted(_native.__all__) == ["AcquireResult", "ConnectionEvent", "DeleteResult", "Event", "Loss", "SetResult", "Value", "Version"]
    for name in _native.__all__:
        assert getattr(statestore, name) is getattr(_native, name)
        assert name in statestore.__all__
