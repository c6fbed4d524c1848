#!/usr/bin/env python3
"""The code blocks of README.md, CONTRIBUTING.md and docs/*.md that are not examples in a
programming language (those are run by the language suites, see docs/testing.md): shell
command lines, CMake and Cargo snippets, and output. Each one is either run as written by
one of the test scripts or, when running it would take minutes or recurse into the test run,
checked against what CI runs. RULES below says which; a block or line no rule claims, or a
fence in a language nothing handles, fails `check`.

  doc-blocks.py check           every block is claimed, and the checked lines are what CI runs
  doc-blocks.py script SET      a bash script that runs SET's lines (scripts/lib/readme-blocks.sh
                                runs it: run_doc_blocks SET)
  doc-blocks.py selftest        the checker and the runner fail on broken docs
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
# Examples run by the language suites (docs/testing.md names each reader).
EXAMPLES = {"rust", "python", "js", "c", "cpp"}
SHELL = {"sh"}
OUTPUT = {"text"}
# Whole blocks in these languages are claimed as one unit (their lines are not commands).
SNIPPETS = {"cmake", "toml"}


@dataclass
class Block:
    doc: str
    line: int  # the opening fence's line
    lang: str
    body: List[str]


@dataclass
class Command:
    doc: str
    line: int
    text: str  # continuation lines joined, comment kept


def docs(root: Path) -> List[str]:
    found = [name for name in ("README.md", "CONTRIBUTING.md") if (root / name).exists()]
    return found + sorted(p.relative_to(root).as_posix() for p in (root / "docs").glob("*.md"))


def blocks(root: Path, doc: str) -> List[Block]:
    lines = (root / doc).read_text(encoding="utf-8").split("\n")
    out: List[Block] = []
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
            out.append(Block(doc, i + 1, opened.group(2), body))
            i = j
        i += 1
    return out


def commands(block: Block) -> List[Command]:
    """The command lines of a shell block (a trailing backslash continues a line)."""
    out: List[Command] = []
    pending: Optional[Command] = None
    for offset, raw in enumerate(block.body, start=1):
        if pending is None:
            if not raw.strip() or raw.lstrip().startswith("#"):
                continue
            pending = Command(block.doc, block.line + offset, raw)
        else:
            pending.text = pending.text[:-1] + raw.lstrip()
        if not pending.text.endswith("\\"):
            out.append(pending)
            pending = None
    if pending is not None:
        out.append(pending)
    return out


def code(text: str) -> str:
    """A command without its trailing comment."""
    quote = ""
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1] in " \t"):
            return text[:i].rstrip()
    return text.rstrip()


# --- who handles what: (documents, pattern on the command without comment, how).
# how: a set name (the line runs in that set's script) or "check" (checked against what CI
# runs). First match wins. SNIPPET_RULES claim whole cmake/toml blocks the same way.
RULES: List[Tuple[str, str, str]] = [
    # What CI itself runs, or would take minutes (release builds, a source build of the wheel):
    # checked, not run.
    ("*", r"^bash scripts/test-all\.sh$", "check"),
    ("*", r"^bash scripts/test-(c|python|node)\.sh\b", "check"),
    ("*", r"^bash scripts/setup\.sh$", "check"),
    ("CONTRIBUTING.md", r".", "check"),
    ("docs/node.md", r"^cd node && ", "check"),
    ("docs/server.md", r"^cargo run --release -p statestore-server\b", "check"),
    ("docs/cli.md", r"^cargo install --path cli$", "check"),
    ("docs/python.md", r"^pip install \./python \./python/testing$", "check"),
    # Installing the .deb changes the machine: scripts/test-c.sh installs it (dpkg -i, as root)
    # and removes it; the lines are checked to name the built package.
    ("*", r"^sudo (dpkg -i|apt install) ", "check"),
    # Run as written.
    ("*", r"^pip install ", "python"),
    ("*", r"^npm install ", "node"),
    ("*", r"^(tar -xzf|export|cc|valgrind) ", "c"),
    ("docs/c.md", r"^bash scripts/install-c\.sh ", "c"),
    ("*", r"^(cargo run -p statestore-cli|statestore) ", "cli"),
]
SNIPPET_RULES: List[Tuple[str, str, str]] = [
    ("docs/c.md", "cmake", "c"),
    ("docs/rust.md", "toml", "cli"),
]
SETS = ("cli", "python", "node", "c")


def matches(pattern: str, doc: str) -> bool:
    return pattern == "*" or pattern == doc


def rule_for(command: Command) -> Optional[str]:
    for doc, pattern, how in RULES:
        if matches(doc, command.doc) and re.search(pattern, code(command.text)):
            return how
    return None


def snippet_rule(block: Block) -> Optional[str]:
    for doc, lang, how in SNIPPET_RULES:
        if matches(doc, block.doc) and block.lang == lang:
            return how
    return None


# --- check


def ci_scripts(root: Path) -> Tuple[set, str]:
    """The scripts CI runs (reached from .ci/run through `bash scripts/...` and `bash
    bindings/...`), and their text together."""
    seen: set = set()
    text = ""
    todo = [".ci/run"]
    while todo:
        path = todo.pop()
        if path in seen or not (root / path).is_file():
            continue
        seen.add(path)
        # Code only: a script a comment mentions is not one CI runs.
        body = "\n".join(re.sub(r"(^|\s)#.*", "", line) for line in (root / path).read_text(encoding="utf-8").split("\n"))
        text += body + "\n"
        todo += re.findall(r"\b((?:scripts|bindings)/[\w./-]+\.(?:sh|py))\b", body)
        # `source scripts/lib/x.sh` and `in_groups test "c bench"` (scripts/test-c.sh)
        if "in_groups" in body:
            todo += [f"scripts/test-{name}.sh" for name in re.findall(r'"([a-z ]+)"', body)
                     for name in name.split()]
    return seen, text


def workspace_crates(root: Path) -> set:
    names = set()
    for manifest in root.glob("**/Cargo.toml"):
        if "target" in manifest.parts or "node_modules" in manifest.parts:
            continue
        match = re.search(r'^\[package\][^\[]*?^name\s*=\s*"([^"]+)"', manifest.read_text(), re.M | re.S)
        if match:
            names.add(match.group(1))
    return names


def check_command(root: Path, command: Command, ci: Tuple[set, str], crates: set) -> List[str]:
    """Why `command` is not something CI runs (empty: it is)."""
    scripts, ci_text = ci
    problems = []
    words = shlex.split(code(command.text), comments=True)
    for i, word in enumerate(words):
        if i > 0 and words[i - 1] in ("-p", "--package", "--path") and word not in crates:
            if words[i - 1] != "--path" or not (root / word / "Cargo.toml").exists():
                problems.append(f"{word!r} is not a crate of the workspace")
        artefact = re.match(r"^(\./)?dist/", word) or re.match(r"^\./libstatestore", word)
        built = "target/" in word  # made by an earlier line or a build
        if re.match(r"^(\.\.?/)?[\w.-]+(/[\w.-]+)+$", word) and not artefact and not built:
            path = word[2:] if word.startswith("./") else word
            if not (root / path).exists():
                problems.append(f"{word} does not exist")
        if re.match(r"^(scripts|bindings)/[\w/-]+\.(sh|py)$", word) and word not in scripts:
            problems.append(f"{word} is not run by CI (.ci/run and the scripts it calls)")
        if artefact:
            # A built artefact: the name package-c.sh gives it.
            version = re.search(r'^version = "([^"]+)"', (root / "Cargo.toml").read_text(), re.M)
            generic = Path(word).name.replace(version.group(1) if version else "\0", "$version")
            if generic not in ci_text.replace("${version}", "$version"):
                problems.append(f"{word}: no script CI runs builds or installs it")
    return problems


def check(root: Path) -> int:
    ci = ci_scripts(root)
    crates = workspace_crates(root)
    counts: Dict[str, int] = {}
    problems: List[str] = []

    def count(what: str) -> None:
        counts[what] = counts.get(what, 0) + 1

    for doc in docs(root):
        for block in blocks(root, doc):
            where = f"{doc}:{block.line}"
            if block.lang in EXAMPLES:
                count("examples run by the language suites")
            elif block.lang in OUTPUT:
                count("output blocks")
            elif block.lang in SNIPPETS:
                how = snippet_rule(block)
                if how is None:
                    problems.append(f"{where}: no rule runs this ```{block.lang} block (scripts/lib/doc-blocks.py SNIPPET_RULES)")
                else:
                    count(f"blocks run in set {how}")
            elif block.lang in SHELL:
                for command in commands(block):
                    at = f"{doc}:{command.line}"
                    how = rule_for(command)
                    if how is None:
                        problems.append(f"{at}: no rule runs or checks `{code(command.text)}` (scripts/lib/doc-blocks.py RULES)")
                    elif how == "check":
                        problems += [f"{at}: `{code(command.text)}`: {p}" for p in check_command(root, command, ci, crates)]
                        count("command lines checked")
                    else:
                        count(f"command lines run in set {how}")
            else:
                what = f"```{block.lang}" if block.lang else "a fence without a language"
                problems.append(f"{where}: {what}: no runner knows this language (mark output as ```text; scripts/lib/doc-blocks.py)")
    for problem in problems:
        print(problem, file=sys.stderr)
    summary = ", ".join(f"{n} {what}" for what, n in sorted(counts.items()))
    print(f"doc blocks: {summary}; {len(problems)} problem(s)")
    return 1 if problems else 0


# --- script

PRELUDE = r"""
set -euo pipefail
# doc_shell: each document's lines run in a subshell that begins with this. Job control, so
# that background commands get their own process group and do not ignore SIGINT (a script's
# background commands otherwise do), as in the user's terminal; background commands (`cmd &`,
# and those that run until Ctrl-C) end with the subshell.
doc_shell() {
  set -m
  trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true' EXIT
}
# first_line CMD...: starts CMD in the background and returns once it printed a line (its
# "ready" line), within 60 s; CMD keeps running, its further output passed on.
first_line() {
  local fifo line
  fifo="$(mktemp -u)"
  mkfifo "$fifo"
  "$@" >"$fifo" &
  first_line_pid=$!
  exec {first_line_fd}<"$fifo"
  rm -f "$fifo"
  if ! IFS= read -r -t 60 -u "$first_line_fd" line; then
    echo "\`$*\` printed nothing within 60 s" >&2
    return 1
  fi
  printf '%s\n' "$line"
  cat <&"$first_line_fd" &
}
# until_interrupted CMD...: CMD runs until Ctrl-C: once it printed its first line it gets
# SIGINT and must end with status 0 within 30 s.
until_interrupted() {
  first_line "$@"
  kill -INT "$first_line_pid"
  local status=0 deadline=$((SECONDS + 30))
  while kill -0 "$first_line_pid" 2>/dev/null; do
    if [ $SECONDS -ge $deadline ]; then echo "\`$*\` did not end within 30 s of SIGINT" >&2; return 1; fi
    wait "$first_line_pid" || status=$?
  done
  wait "$first_line_pid" 2>/dev/null || status=$?
  [ "$status" -eq 0 ] || { echo "\`$*\` ended with status $status after SIGINT" >&2; return 1; }
}
# in_checkout CMD...: commands naming the checkout's scripts run from the checkout.
in_checkout() { (cd "$DOC_ROOT" && "$@"); }
"""


def wrap(command: Command) -> str:
    text = code(command.text)
    if re.search(r"until ctrl-c", command.text, re.I):
        return f"until_interrupted {text}"
    if text.endswith("&") and not text.endswith("&&"):
        return f"first_line {text[:-1].rstrip()}"
    if text.startswith(("bash scripts/", "cargo ")):
        return f"in_checkout {text}"
    return text


def script(root: Path, name: str) -> Tuple[str, int]:
    """The bash script of set `name`, and how many command lines and blocks it runs. Each
    document's lines run in one shell, in a folder of their own ($DOC_DIR) holding the
    document's C program as app.c and a link to dist/, after the set's own preparation (its
    function `prepare DOC`, defined by the caller)."""
    parts = [PRELUDE]
    n = 0
    for doc in docs(root):
        body: List[str] = []
        all_blocks = blocks(root, doc)
        for block in all_blocks:
            if block.lang in SHELL:
                for command in commands(block):
                    if rule_for(command) == name:
                        body.append("echo " + shlex.quote(f"   == {doc}:{command.line}: {code(command.text)}") + " >&2")
                        body.append(wrap(command))
                        n += 1
            elif block.lang in SNIPPETS and snippet_rule(block) == name:
                body.append("echo " + shlex.quote(f"   == {doc}:{block.line}: the ```{block.lang} block") + " >&2")
                body.append(f"run_{block.lang} <<'DOC_BLOCK'\n" + "\n".join(block.body) + "\nDOC_BLOCK")
                n += 1
        if not body:
            continue
        program = next((b for b in all_blocks if b.lang == "c"), None)
        slug = re.sub(r"\W", "_", doc)
        parts.append(f"(\n  doc_shell\n  export DOC_DIR=\"$DOC_WORK/{slug}\"\n  mkdir -p \"$DOC_DIR\" && cd \"$DOC_DIR\"\n"
                     f"  ln -sfn \"$DOC_ROOT/dist\" dist\n")
        if program is not None:
            parts.append("  cat >app.c <<'DOC_BLOCK'\n" + "\n".join(program.body) + "\nDOC_BLOCK\n")
        parts.append(f"  prepare {shlex.quote(doc)}\n")
        parts.append("\n".join(body) + "\n)\n")
    parts.append(f"echo '== doc blocks of set {name}: {n} ran as written'\n")
    return "".join(parts), n


# --- selftest: the checker and the runner fail on broken docs


def selftest() -> int:
    failures = []

    def expect(what: str, ok: bool) -> None:
        print(f"{'ok  ' if ok else 'FAIL'} {what}")
        if not ok:
            failures.append(what)

    def tree(files: Dict[str, str]) -> Path:
        root = Path(tempfile.mkdtemp(prefix="doc-blocks-selftest-"))
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        return root

    base = {
        ".ci/run": "bash scripts/test-all.sh\n",
        "scripts/test-all.sh": "bash scripts/test-python.sh\n",
        "scripts/test-python.sh": "true\n",
        "Cargo.toml": '[workspace]\n[package]\nname = "statestore"\nversion = "0.1.0"\n',
        "docs/x.md": "",
    }

    def checked(doc: str) -> Tuple[int, str]:
        root = tree({**base, "README.md": doc})
        done = subprocess.run([sys.executable, __file__, "check", str(root)], capture_output=True, text=True)
        return done.returncode, done.stderr

    status, err = checked("```sh\nbash scripts/test-all.sh\ncargo run -p statestore-cli -- tour\n```\n```text\nout\n```\n")
    expect("a README with claimed blocks passes", status == 0 and not err)
    status, err = checked("```\nunmarked\n```\n")
    expect("a fence without a language fails", status == 1 and "fence without a language" in err)
    status, err = checked("```console\n$ ls\n```\n")
    expect("an unknown language fails", status == 1 and "```console" in err)
    status, err = checked("```sh\nrm -rf build\n```\n")
    expect("a command line no rule claims fails", status == 1 and "no rule runs or checks `rm -rf build`" in err)
    status, err = checked("```sh\nbash scripts/test-python.sh\nbash scripts/test-node.sh\n```\n")
    expect("a script that does not exist fails", status == 1 and "scripts/test-node.sh does not exist" in err)
    root = tree({**base, "CONTRIBUTING.md": "```sh\ncargo nextest run -p statestore-nothing\nbash scripts/orphan.sh\n```\n",
                 "scripts/orphan.sh": "true\n", "README.md": ""})
    done = subprocess.run([sys.executable, __file__, "check", str(root)], capture_output=True, text=True)
    expect("a crate that is not in the workspace fails", "'statestore-nothing' is not a crate" in done.stderr)
    expect("a script CI does not run fails", "scripts/orphan.sh is not run by CI" in done.stderr)

    # A stand-in `statestore` that fails on `get`: the runner must report the failure.
    fake = Path(tempfile.mkdtemp(prefix="doc-blocks-bin-"))
    # `watch` takes SIGINT from before its first line, as the runner interrupts it right after.
    (fake / "statestore").write_text("#!/bin/sh\n[ \"$1\" = get ] && exit 3\n[ \"$1\" = watch ] && trap 'exit 0' INT\n"
                                      "echo ready\n[ \"$1\" = watch ] && while :; do sleep 1; done\nexit 0\n")
    (fake / "statestore").chmod(0o755)

    def ran_with_fake(doc: str) -> Tuple[int, str]:
        root = tree({**base, "README.md": doc})
        text, _ = script(root, "cli")
        work = Path(tempfile.mkdtemp(prefix="doc-blocks-run-"))
        env_setup = f"DOC_ROOT={shlex.quote(str(root))} DOC_WORK={shlex.quote(str(work))}; prepare() {{ :; }}\n"
        done = subprocess.run(["bash", "-c", env_setup + text], capture_output=True, text=True, timeout=120,
                              env={"PATH": f"{fake}:/usr/bin:/bin"})
        return done.returncode, done.stderr

    status, err = ran_with_fake("```sh\nstatestore serve &\nstatestore set k v\nstatestore watch k   # until Ctrl-C\n```\n")
    expect("the runner runs a background server, a command and one until Ctrl-C", status == 0)
    status, err = ran_with_fake("```sh\nstatestore set k v\nstatestore get k\nstatestore set k w\n```\n")
    expect("the runner fails when a line fails, naming it", status != 0 and "README.md:3: statestore get k" in err)
    return 1 if failures else 0


def main(argv: Sequence[str]) -> int:
    if len(argv) >= 2 and argv[1] == "check":
        return check(Path(argv[2]) if len(argv) > 2 else ROOT)
    if len(argv) == 3 and argv[1] == "script" and argv[2] in SETS:
        text, n = script(ROOT, argv[2])
        print(f"doc blocks of set {argv[2]}: {n} to run", file=sys.stderr)
        print(text)
        return 0 if n else 1
    if len(argv) == 2 and argv[1] == "selftest":
        return selftest()
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
