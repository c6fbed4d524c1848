"""Every Python example of the docs (the README, the package READMEs and every guide in docs/)
runs as written, in a fresh interpreter, and ends by itself with status 0: the code blocks are
read from the docs themselves, so they cannot drift from what works."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

import pytest

REPO = Path(__file__).resolve().parents[2]
# Each of these must hold Python examples; any other guide in docs/ is read when it has some.
READMES = ["README.md", "python/README.md", "python/testing/README.md", "docs/python.md"]
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")


def blocks(readme: str, language: str) -> List[Tuple[int, str]]:
    """The fenced blocks of `language` in `readme`: (line, code)."""
    lines = (REPO / readme).read_text(encoding="utf-8").split("\n")
    out = []
    i = 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if opened:
            indent = len(opened.group(1))
            body = []
            j = i + 1
            while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
                body.append(lines[j][indent:])
                j += 1
            if opened.group(2) == language:
                out.append((i + 1, "\n".join(body) + "\n"))
            i = j
        i += 1
    return out


GUIDES = sorted(path.relative_to(REPO).as_posix() for path in (REPO / "docs").glob("*.md"))
DOCS = READMES + [guide for guide in GUIDES if guide not in READMES]
EXAMPLES = [(doc, line, code) for doc in DOCS for line, code in blocks(doc, "python")]


def test_the_docs_have_python_examples() -> None:
    for readme in READMES:
        assert blocks(readme, "python"), f"{readme} has no python block"


@pytest.mark.timeout(90)
@pytest.mark.parametrize(("readme", "line", "code"), EXAMPLES, ids=[f"{r}:{n}" for r, n, _ in EXAMPLES])
def test_readme_example_runs_as_written_and_ends(tmp_path: Path, readme: str, line: int, code: str) -> None:
    example = tmp_path / "example.py"
    example.write_text(code, encoding="utf-8")
    try:
        done = subprocess.run(
            [sys.executable, str(example)], cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{readme}:{line} did not end by itself within 60 s")
    assert done.returncode == 0, f"{readme}:{line} exited with {done.returncode}:\n{done.stderr}"
