#!/usr/bin/env python3
"""Checks every relative link of the repository's Markdown files: the file or folder a link
names must exist, and an anchor into a Markdown file (`path.md#anchor`, `#anchor`) must name
one of its headings, slugged as GitHub does. Links with a scheme (https:, mailto:) are not
followed.

Usage: python3 scripts/check-links.py [FILE.md ...]   (default: every Markdown file of the
repository outside target/, node_modules/, third_party/ and .git/)

Prints one line per broken link, `file:line: link: what is wrong`, and exits 1 if there is
any; otherwise prints how many links it checked and exits 0 (2: a FILE given is not a file of
the repository). Python 3 standard library only.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set, Tuple
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parent.parent
# Build output, installed packages and vendored code: not documentation of this repository.
SKIPPED_DIRS = {"target", "node_modules", "third_party", ".git"}

# `[text](destination "title")`: one level of brackets inside the text, balanced parentheses
# inside the destination, an optional title.
INLINE_LINK = re.compile(
    r"\[(?:[^\[\]]|\[[^\[\]]*\])*\]"
    r"\(\s*(<[^>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)"
)
# `[label]: destination` at the start of a line.
REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>\n]*>|\S+)")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
# A line of `=` or `-` under a line of text makes that text a heading.
SETEXT_UNDERLINE = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")
HTML_ANCHOR = re.compile(r"<a\s[^>]*\b(?:name|id)=[\"']([^\"']+)[\"']", re.IGNORECASE)
CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def markdown_files() -> List[Path]:
    """The repository's Markdown files: those git tracks or would track (so build output that
    .gitignore names is left out), or every one on disk where git cannot say."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", "*.md"],
            cwd=ROOT,
            check=True,
            capture_output=True,
        ).stdout.decode()
        candidates = [ROOT / name for name in listed.split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        candidates = []
        for folder, dirs, files in os.walk(ROOT):
            dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
            candidates.extend(Path(folder) / f for f in files if f.endswith(".md"))
    return sorted(
        path
        for path in set(candidates)
        if path.is_file() and not SKIPPED_DIRS.intersection(path.relative_to(ROOT).parts[:-1])
    )


def outside_fences(text: str) -> Iterator[Tuple[int, str]]:
    """(line number, line) of every line outside fenced code blocks."""
    fence: Optional[str] = None
    for number, line in enumerate(text.splitlines(), start=1):
        marker = FENCE.match(line)
        if fence is None:
            if marker:
                fence = marker.group(1)
            else:
                yield number, line
        elif marker and marker.group(1)[0] == fence[0] and len(marker.group(1)) >= len(fence):
            if not line.strip(" `~"):
                fence = None


def prose_lines(text: str) -> Iterator[Tuple[int, str]]:
    """The lines of `outside_fences` with code spans blanked, so that nothing inside them is
    taken for a link."""
    for number, line in outside_fences(text):
        yield number, CODE_SPAN.sub(lambda m: "x" * len(m.group(0)), line)


def links(text: str) -> Iterator[Tuple[int, str]]:
    """(line number, destination) of every inline link, image and reference definition."""
    for number, line in prose_lines(text):
        definition = REFERENCE_DEFINITION.match(line)
        if definition:
            yield number, definition.group(1)
        for match in INLINE_LINK.finditer(line):
            yield number, match.group(1)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text (links and images reduced to their text, HTML
    tags dropped) in lower case, without characters other than letters, marks, digits,
    connector punctuation (`_`), spaces and hyphens; spaces become hyphens."""
    text = re.sub(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    kept = (
        ch
        for ch in text
        if ch in " -" or unicodedata.category(ch)[0] in "LMN" or unicodedata.category(ch) == "Pc"
    )
    return "".join(kept).replace(" ", "-")


def anchors(path: Path, cache: Dict[Path, Set[str]]) -> Set[str]:
    """The anchors of a Markdown file: its headings' slugs (a repeated one also with `-1`,
    `-2`, ... as GitHub numbers them) and its HTML `name`/`id` anchors."""
    if path not in cache:
        found: Set[str] = set()
        seen: Dict[str, int] = {}
        text = path.read_text(encoding="utf-8", errors="replace")
        for _, line in prose_lines(text):
            found.update(HTML_ANCHOR.findall(line))
        previous = ""
        for _, line in outside_fences(text):
            heading = ATX_HEADING.match(line)
            title: Optional[str] = None
            if heading:
                title = heading.group(1) or ""
            elif previous.strip() and SETEXT_UNDERLINE.match(line):
                title = previous.strip()
            if title is not None:
                base = slug(title)
                count = seen.get(base, 0)
                seen[base] = count + 1
                found.add(base if count == 0 else f"{base}-{count}")
            previous = "" if heading else line
        cache[path] = found
    return cache[path]


def problem(source: Path, destination: str, cache: Dict[Path, Set[str]]) -> Optional[str]:
    """What is wrong with one link of `source`, or None if it resolves (or is not relative)."""
    if destination.startswith("<") and destination.endswith(">"):
        destination = destination[1:-1]
    if not destination or SCHEME.match(destination) or destination.startswith("//"):
        return None
    path_part, _, anchor = destination.partition("#")
    path_part = unquote(path_part.split("?", 1)[0])
    if path_part:
        base = ROOT if path_part.startswith("/") else source.parent
        target = (base / path_part.lstrip("/")).resolve()
        if target != ROOT and ROOT not in target.parents:
            return "points outside the repository"
        if not target.exists():
            return f"no such file or folder: {target.relative_to(ROOT)}"
    else:
        target = source
    if anchor and target.suffix == ".md" and target.is_file():
        known = anchors(target, cache)
        wanted = unquote(anchor)
        if wanted not in known:
            where = target.relative_to(ROOT)
            if wanted.lower() in known:
                return f"anchors are lower case: write #{wanted.lower()} (a heading of {where})"
            return f"no heading with the anchor #{anchor} in {where}"
    return None


def main(argv: List[str]) -> int:
    files = [Path(arg).resolve() for arg in argv] or markdown_files()
    for path in files:
        if not path.is_file() or ROOT not in path.parents:
            print(f"check-links.py: {path} is not a file of the repository {ROOT}", file=sys.stderr)
            return 2
    cache: Dict[Path, Set[str]] = {}
    checked = 0
    broken = 0
    for source in files:
        for number, destination in links(source.read_text(encoding="utf-8", errors="replace")):
            checked += 1
            wrong = problem(source, destination, cache)
            if wrong:
                broken += 1
                print(f"{source.relative_to(ROOT)}:{number}: {destination}: {wrong}")
    if broken:
        print(f"{broken} broken of {checked} links in {len(files)} Markdown files", file=sys.stderr)
        return 1
    print(f"{checked} links in {len(files)} Markdown files: every relative one resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
