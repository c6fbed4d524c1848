"""Fixtures of the Python hostile-input tests: one local state store (in this process) for
the whole session, and the malicious service (`statestore-chaos hostile`) as a child
process."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Iterator

import pytest

from statestore.testing import LocalStateStore


@pytest.fixture(scope="session")
def server() -> Iterator[LocalStateStore]:
    with LocalStateStore() as store:
        yield store


@pytest.fixture(scope="session")
def hostile_port() -> Iterator[int]:
    binary = os.environ.get("CHAOS_BIN")
    if not binary:
        pytest.fail("CHAOS_BIN (the statestore-chaos binary) is not set: run scripts/test-chaos.sh")
    process = subprocess.Popen([binary, "hostile", "--for", "600s"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("hostile ready on "):
        process.kill()
        pytest.fail(f"statestore-chaos hostile did not start: {line!r}")
    try:
        yield int(line.strip().rsplit(":", 1)[1])
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture(scope="session")
def secure() -> Iterator[dict]:
    """The security fixtures of `statestore-chaos secure` (see tests/chaos/secure.json)."""
    binary = os.environ.get("CHAOS_BIN")
    if not binary:
        pytest.fail("CHAOS_BIN (the statestore-chaos binary) is not set: run scripts/test-chaos.sh")
    process = subprocess.Popen([binary, "secure"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    try:
        yield json.loads(line)
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
