"""Every duration parameter, with the numbers that could escape as panics: one rule (core's
``bindings::duration``): negative and NaN are ``InvalidArgumentError`` naming the argument;
``inf`` and numbers too large for any clock mean no limit for a wait, and are refused as too
long where the time is sent to the service (expiry, TTL)."""

from __future__ import annotations

import math
from typing import Any, Callable, List, Tuple

import pytest

import statestore
from statestore import Client
from statestore.testing import LocalStateStore

BAD = [-1, -0.5, -math.inf, math.nan]
HUGE = [math.inf, 2**63, 1e308, 1.8e22]

# A use of the client that passes a duration (the third argument) somewhere.
TimedCall = Callable[[Client, str, Any], object]

# Waits: a huge value is no limit, so each of these must simply complete.
WAITS: List[Tuple[str, TimedCall]] = [
    ("set timeout", lambda c, k, t: c.set(k, "v", timeout=t)),
    ("get timeout", lambda c, k, t: c.get(k, timeout=t)),
    ("delete timeout", lambda c, k, t: c.delete(k, timeout=t)),
    ("vdel timeout", lambda c, k, t: c.vdel(k, "v", timeout=t)),
    ("observation next", lambda c, k, t: _next_after_set(c, k, t)),
    ("lock timeout", lambda c, k, t: c.lock(k, timeout=t).acquire().release()),
    ("lease acquire timeout", lambda c, k, t: c.lease(k, "me").acquire(5, timeout=t)),
    ("lease lost timeout", lambda c, k, t: c.lease(k, "me").lost(timeout=t)),
    ("campaign timeout", lambda c, k, t: c.election(k, "me").campaign(timeout=t)),
]

# Times sent to the service: a huge value is refused before anything is sent.
SENT: List[Tuple[str, TimedCall]] = [
    ("expiry", lambda c, k, t: c.set(k, "v", expiry=t)),
    ("lock ttl", lambda c, k, t: c.lock(k, ttl=t).acquire()),
    ("lease try_acquire ttl", lambda c, k, t: c.lease(k, "me").try_acquire(t)),
    ("lease acquire ttl", lambda c, k, t: c.lease(k, "me").acquire(t)),
    ("election ttl", lambda c, k, t: c.election(k, "me", ttl=t).campaign()),
]


def _next_after_set(client: Client, key: str, timeout: Any) -> object:
    with client.observe(key) as observation:
        client.set(key, "v")
        event = observation.next(timeout)
        assert event is not None and event.key == key.encode()
        return event


@pytest.mark.parametrize("value", BAD, ids=repr)
@pytest.mark.parametrize("name, call", WAITS + SENT, ids=[n for n, _ in WAITS + SENT])
def test_a_negative_or_nan_duration_is_an_invalid_argument(
    client: Client, key: str, name: str, call: TimedCall, value: float
) -> None:
    with pytest.raises(statestore.InvalidArgumentError, match=r"(timeout|ttl|expiry).*>= 0"):
        call(client, key, value)


@pytest.mark.parametrize("value", HUGE, ids=repr)
@pytest.mark.parametrize("name, call", WAITS, ids=[n for n, _ in WAITS])
def test_a_huge_wait_is_no_limit(client: Client, key: str, name: str, call: TimedCall, value: float) -> None:
    call(client, key, value)


@pytest.mark.parametrize("value", HUGE, ids=repr)
@pytest.mark.parametrize("name, call", SENT, ids=[n for n, _ in SENT])
def test_a_huge_time_for_the_service_is_refused_as_too_long(
    client: Client, key: str, name: str, call: TimedCall, value: float
) -> None:
    with pytest.raises(statestore.InvalidArgumentError, match="too long"):
        call(client, key, value)
    assert client.get(key) is None


def test_zero_polls_a_wait_and_is_refused_as_a_call_timeout(client: Client, key: str) -> None:
    with client.observe(key) as observation:
        assert observation.next(0) is None
    with pytest.raises(statestore.InvalidArgumentError, match="timeout must be positive"):
        client.get(key, timeout=0)
    with pytest.raises(statestore.InvalidArgumentError, match="expiry must be at least 1 ms"):
        client.set(key, "v", expiry=0)


@pytest.mark.parametrize("value", HUGE + BAD, ids=repr)
async def test_async_client_reads_durations_by_the_same_rule(
    server: LocalStateStore, key: str, value: float
) -> None:
    async with await server.async_client() as client:
        if value >= 0:
            assert await client.get(key, timeout=value) is None
            with pytest.raises(statestore.InvalidArgumentError, match="too long"):
                await client.set(key, "v", expiry=value)
        else:
            with pytest.raises(statestore.InvalidArgumentError, match="timeout.*>= 0"):
                await client.get(key, timeout=value)


@pytest.mark.parametrize(
    "option, value, outcome",
    [
        ("default_timeout", math.inf, None),
        ("default_timeout", 1.8e22, None),
        ("default_timeout", -1, "default_timeout.*>= 0"),
        ("default_timeout", math.nan, "default_timeout.*>= 0"),
        ("keep_alive", 2**63, "keep_alive must be between"),
        ("reconnect_max_delay", -math.inf, "reconnect_max_delay.*>= 0"),
    ],
)
def test_connect_options_read_durations_by_the_same_rule(
    server: LocalStateStore, option: str, value: float, outcome: "str | None"
) -> None:
    options: Any = {option: value}
    if outcome is None:
        with Client.connect(server.host, server.port, **options) as client:
            assert client.get("py-durations-probe") is None
    else:
        with pytest.raises(statestore.InvalidArgumentError, match=outcome):
            Client.connect(server.host, server.port, **options)
