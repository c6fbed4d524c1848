"""Every Python example of the docs (the README, the package READMEs and every guide in docs/)
runs as written, in a fresh interpreter, and ends by itself with status 0: the code blocks are
read from the docs themselves, so they cannot drift from what works."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any, List, Tuple

import pytest

REPO = Path(__file__).resolve().parents[2]
# Each of these must hold Python examples; any other guide in docs/ is read when it has some.
READMES = ["README.md", "python/README.md", "python/testing/README.md", "docs/python.md"]
def _doc_blocks() -> Any:
    """scripts/lib/doc-blocks.py, the one reader of the docs' fenced blocks."""
    spec = importlib.util.spec_from_file_location("doc_blocks", REPO / "scripts" / "lib" / "doc-blocks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["doc_blocks"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


DOC_BLOCKS = _doc_blocks()


def blocks(readme: str, language: str) -> List[Tuple[int, str]]:
    """The fenced blocks of `language` in `readme`: (line, code)."""
    return [
        (block.line, "\n".join(block.body) + "\n")
        for block in DOC_BLOCKS.blocks(REPO, readme)
        if block.lang == language
    ]


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
