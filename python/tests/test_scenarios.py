"""The shared scenarios (tests/scenarios, format in its README) with statestore.Client and with
statestore.AsyncClient: one interpreter, since both classes have the same methods (each call's
result is awaited when it is awaitable). An unknown op or argument fails the scenario."""

from __future__ import annotations

import base64
import inspect
import json
import secrets
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

import statestore
from statestore import AsyncClient, Client, Version
from statestore.testing import LocalStateStore

SCENARIOS = Path(__file__).resolve().parents[2] / "tests" / "scenarios"
OPS: Dict[str, Dict[str, List[str]]] = json.loads((SCENARIOS / "ops.json").read_text())["ops"]
FILES = sorted(p for p in SCENARIOS.rglob("*.json") if p.name != "ops.json")
RUN = secrets.token_hex(4)
# Scenarios that show a known bug of this binding (none today); one listed here that passes
# fails the run, so that the list does not rot.
KNOWN_FAILURES: Dict[str, str] = {}
TEXT_FIELDS = {"kind", "outcome", "version", "token", "state", "reason"}
KEY_ARGS = {
    "key": {"set", "get", "delete", "vdel", "observe", "unobserve", "update", "lease", "election"},
    "name": {"lock", "try_lock", "lock_holder", "update"},
    "pattern": {"keys"},
    "keys": {"get_many", "delete_many"},
    "items": {"set_many"},
}


def list_items(v: Any) -> List[Any]:
    """A list form: ``[...]``, ``{"numbered": P, "count": N}`` or ``{"each": E, "count": N}``."""
    if isinstance(v, list):
        return v
    if isinstance(v, dict) and "numbered" in v:
        return [f"{v['numbered']}{i}" for i in range(v["count"])]
    if isinstance(v, dict) and "each" in v:
        return [v["each"]] * v["count"]
    raise StepFailed(f"not a list form: {v!r}")


def is_list_form(v: Any) -> bool:
    return isinstance(v, list) or (isinstance(v, dict) and ("numbered" in v or "each" in v))


class StepFailed(Exception):
    pass


async def r(x: Any) -> Any:
    """The result of a call of either client: awaited if awaitable."""
    return await x if inspect.isawaitable(x) else x


def secs(ms: Any) -> float:
    return float(ms) / 1000.0


class Runner:
    def __init__(self, server: LocalStateStore, flavour: str, scenario: Dict[str, Any]) -> None:
        self.server = server
        self.flavour = flavour
        self.scenario = scenario
        # One RUN per runner (flavour), so that the two flavours never share keys.
        self.prefix = f"scn-{RUN}{flavour}/{scenario['name']}/".encode()
        self.vars: Dict[str, Any] = {}
        self.handles: Dict[str, Dict[str, Any]] = {
            k: {} for k in ("client", "stream", "guard", "lease", "election")
        }
        self.clients: List[Any] = []

    # -- values

    def data(self, v: Any) -> Any:
        if isinstance(v, str):
            return v.encode()
        if isinstance(v, dict):
            if "hex" in v:
                return bytes.fromhex(v["hex"])
            if "base64" in v:
                return base64.b64decode(v["base64"])
            if "repeat" in v:
                return (v["repeat"] * v["times"]).encode()
            if "var" in v:
                if v["var"] not in self.vars:
                    raise StepFailed(f"variable {v['var']!r} is not set")
                return self.vars[v["var"]]
        raise StepFailed(f"not a byte string form: {v!r}")

    def prefixed(self, raw: bytes) -> bytes:
        return self.prefix + raw if raw != b"" else raw

    def keyed(self, op: str, arg: str, v: Any) -> bytes:
        raw = self.data(v)
        if arg in KEY_ARGS and op in KEY_ARGS[arg] and raw != b"":
            return self.prefix + raw
        return raw  # type: ignore[no-any-return]

    def unkey(self, k: Any) -> bytes:
        if not isinstance(k, bytes) or not k.startswith(self.prefix):
            raise StepFailed(f"result key {k!r} lacks the scenario prefix")
        return k[len(self.prefix) :]

    def token(self, v: Any) -> Optional[Version]:
        raw = self.data(v)
        return None if raw is None else Version(raw.decode() if isinstance(raw, bytes) else str(raw))

    # -- handles

    def new(self, kind: str, name: str, obj: Any) -> None:
        if name in self.handles[kind]:
            raise StepFailed(f"{kind} {name!r} exists already")
        self.handles[kind][name] = obj

    def get(self, kind: str, name: str) -> Any:
        if name not in self.handles[kind]:
            raise StepFailed(f"no {kind} named {name!r}")
        return self.handles[kind][name]

    @staticmethod
    def options(options: Optional[Dict[str, Any]]) -> Dict[str, Any]:
        opts: Dict[str, Any] = {}
        for k, v in (options or {}).items():
            if k.endswith("_ms"):
                opts[k[:-3]] = secs(v)
            else:
                opts[k] = v
        return opts

    async def connect_url(self, a: Dict[str, Any]) -> None:
        url = a["url"].replace("{server}", f"{self.server.host}:{self.server.port}")
        cls = Client if self.flavour == "sync" else AsyncClient
        try:
            client = await r(cls.from_url(url, **self.options(a.get("options"))))
        except statestore.StateStoreError as e:
            for text in a.get("message_has", []):
                if text not in str(e):
                    raise StepFailed(f"the error message lacks {text!r}: {e}") from e
            for text in a.get("message_lacks", []):
                if text in str(e):
                    raise StepFailed(f"the error message shows {text!r}: {e}") from e
            raise
        self.clients.append(client)
        self.new("client", a["client"], client)

    async def connect(self, name: str, options: Optional[Dict[str, Any]] = None) -> None:
        opts = self.options(options)
        host = opts.pop("host", self.server.host)
        port = opts.pop("port", self.server.port)
        cls = Client if self.flavour == "sync" else AsyncClient
        client = await r(cls.connect(host, port, **opts))
        self.clients.append(client)
        self.new("client", name, client)

    # -- one step

    async def run_op(self, op: str, a: Dict[str, Any]) -> Dict[str, Any]:
        def k(arg: str) -> bytes:
            return self.keyed(op, arg, a[arg])

        def opt_secs(arg: str) -> Optional[float]:
            return secs(a[arg]) if arg in a else None

        def ver(v: Any) -> Optional[str]:
            return None if v is None else str(v)

        c = self.get("client", a["client"]) if "client" in a and op not in ("connect", "connect_url") else None
        if op == "connect":
            await self.connect(a["client"], a.get("options"))
            return {}
        if op == "connect_url":
            await self.connect_url(a)
            return {}
        if op == "close":
            await r(c.close())
            return {}
        if op == "set":
            token = self.token(a["fencing_token"]) if "fencing_token" in a else None
            res = await r(
                c.set(
                    k("key"),
                    self.data(a["value"]),
                    condition=a.get("condition", "always"),
                    expiry=opt_secs("expiry_ms"),
                    fencing_token=token,
                    persist=a.get("persist", False),
                    timeout=opt_secs("timeout_ms"),
                )
            )
            return {"applied": res.applied, "version": ver(res.version)}
        if op == "get":
            v = await r(c.get(k("key"), timeout=opt_secs("timeout_ms")))
            return {"value": None if v is None else v.value, "version": None if v is None else ver(v.version)}
        if op in ("delete", "vdel"):
            token = self.token(a["fencing_token"]) if "fencing_token" in a else None
            if op == "delete":
                res = await r(c.delete(k("key"), fencing_token=token, timeout=opt_secs("timeout_ms")))
            else:
                res = await r(c.vdel(k("key"), self.data(a["value"]), fencing_token=token, timeout=opt_secs("timeout_ms")))
            return {"outcome": res.outcome, "version": ver(res.version)}
        if op in ("get_many", "set_many", "delete_many"):
            return await self.batch(op, c, a)
        if op == "keys":
            it = c.keys(k("pattern"))
            found = [x async for x in it] if self.flavour == "async" else list(it)
            return {"keys": sorted(self.unkey(x) for x in found)}
        if op == "observe":
            self.new("stream", a["stream"], await r(c.observe(k("key"))))
            return {}
        if op == "unobserve":
            await r(c.unobserve(k("key")))
            return {}
        if op == "next_event":
            stream = self.get("stream", a["stream"])
            try:
                e = await r(stream.next(timeout=secs(a["timeout_ms"])))
            except statestore.ClosedError:
                return {"kind": "end", "key": None, "value": None, "version": None, "holder": None}
            if e is None:
                return {"kind": "none", "key": None, "value": None, "version": None, "holder": None}
            return {"kind": e.kind, "key": self.unkey(e.key), "value": e.value, "version": ver(e.version), "holder": e.holder}
        if op == "close_stream":
            self.get("stream", a["stream"]).close()
            del self.handles["stream"][a["stream"]]
            return {}
        if op == "lock":
            lock = c.lock(k("name"), secs(a["ttl_ms"]), timeout=opt_secs("timeout_ms"), auto_renew=a.get("auto_renew", True))
            guard = await r(lock.acquire())
            self.new("guard", a["guard"], guard)
            return {"token": ver(guard.fencing_token)}
        if op == "try_lock":
            lock = c.lock(k("name"), secs(a["ttl_ms"]), auto_renew=a.get("auto_renew", True))
            guard = await r(lock.try_acquire())
            if guard is not None:
                self.new("guard", a["guard"], guard)
            return {"acquired": guard is not None, "token": None if guard is None else ver(guard.fencing_token)}
        if op == "unlock":
            await r(self.get("guard", a["guard"]).release())
            del self.handles["guard"][a["guard"]]
            return {}
        if op == "lock_holder":
            return {"holder": await r(c.lock(k("name"), 1.0).holder())}
        if op == "update":
            fn_name = a["fn"]
            const = self.data(a["value"]) if "value" in a else None

            def fn(old: Optional[bytes]) -> Optional[bytes]:
                if fn_name == "increment":
                    try:
                        n = int(old or b"0")
                    except ValueError:
                        n = 0
                    return str(n + 1).encode()
                if fn_name == "set_const":
                    return const
                if fn_name == "delete":
                    return None
                raise StepFailed(f"unknown update fn {fn_name!r}")

            lock = c.lock(k("name"), secs(a["ttl_ms"]), timeout=opt_secs("timeout_ms"))
            return {"written": await r(lock.update(k("key"), fn))}
        if op == "lease":
            self.new("lease", a["lease"], c.lease(k("key"), self.data(a["holder"]), auto_renew=a.get("auto_renew", False)))
            return {}
        if op in ("lease_try_acquire", "try_campaign"):
            if op == "try_campaign":
                res = await r(self.get("election", a["election"]).try_campaign())
            else:
                res = await r(self.get("lease", a["lease"]).try_acquire(secs(a["ttl_ms"])))
            return {"acquired": res.acquired, "token": ver(res.fencing_token), "holder": res.holder}
        if op == "lease_acquire":
            t = await r(self.get("lease", a["lease"]).acquire(secs(a["ttl_ms"]), timeout=opt_secs("timeout_ms")))
            return {"token": ver(t)}
        if op == "lease_renew":
            await r(self.get("lease", a["lease"]).renew())
            return {}
        if op == "lease_release":
            return {"released": await r(self.get("lease", a["lease"]).release())}
        if op == "lease_holder":
            return {"holder": await r(self.get("lease", a["lease"]).holder())}
        if op == "lease_state":
            lease = self.get("lease", a["lease"])
            loss = lease.loss
            return {"state": lease.state, "token": ver(lease.fencing_token), "reason": None if loss is None else loss.reason}
        if op == "lease_lost":
            loss = await r(self.get("lease", a["lease"]).lost(timeout=secs(a["timeout_ms"])))
            return {"reason": None if loss is None else loss.reason}
        if op == "election":
            self.new("election", a["election"], c.election(k("key"), self.data(a["candidate"]), secs(a["ttl_ms"])))
            return {}
        if op == "campaign":
            t = await r(self.get("election", a["election"]).campaign(timeout=opt_secs("timeout_ms")))
            return {"token": ver(t)}
        if op == "resign":
            await r(self.get("election", a["election"]).resign())
            return {}
        if op == "leader":
            return {"leader": await r(self.get("election", a["election"]).leader())}
        if op == "observe_leader":
            self.new("stream", a["stream"], await r(self.get("election", a["election"]).observe()))
            return {}
        raise StepFailed(f"unknown op {op!r}")

    async def batch(self, op: str, c: Any, a: Dict[str, Any]) -> Dict[str, Any]:
        token = self.token(a["fencing_token"]) if "fencing_token" in a else None
        timeout = secs(a["timeout_ms"]) if "timeout_ms" in a else None
        if op == "set_many":
            items = [
                (self.prefixed(self.data(i)), self.data(i)) if isinstance(i, str) else (self.prefixed(self.data(i[0])), self.data(i[1]))
                for i in list_items(a["items"])
            ]
            results = await r(
                c.set_many(
                    items,
                    condition=a.get("condition", "always"),
                    expiry=secs(a["expiry_ms"]) if "expiry_ms" in a else None,
                    fencing_token=token,
                    persist=a.get("persist", False),
                    timeout=timeout,
                )
            )
            name, value = "applied", lambda x: x.applied
        else:
            keys = [self.prefixed(self.data(key)) for key in list_items(a["keys"])]
            if op == "get_many":
                results = await r(c.get_many(keys, timeout=timeout))
                name, value = "values", lambda x: None if x is None else x.value
            else:
                results = await r(c.delete_many(keys, fencing_token=token, timeout=timeout))
                name, value = "outcomes", lambda x: x.outcome
        failed = [isinstance(x, statestore.StateStoreError) for x in results]
        return {
            name: [None if f else value(x) for f, x in zip(failed, results)],
            "errors": [x.name if f else None for f, x in zip(failed, results)],
        }

    # -- expectations

    def matches(self, field: str, expected: Any, actual: Any) -> bool:
        if expected is None:
            return actual is None
        if isinstance(expected, bool):
            return actual is expected
        if is_list_form(expected):
            want = list_items(expected)
            return isinstance(actual, list) and len(actual) == len(want) and all(
                self.matches(field, e, x) for e, x in zip(want, actual)
            )
        if isinstance(expected, dict) and "present" in expected:
            return (actual is not None) == bool(expected["present"])
        if isinstance(expected, dict) and "newer_than" in expected:
            base = self.vars.get(expected["newer_than"])
            return actual is not None and base is not None and Version(str(actual)) > Version(_text(base))
        want = _bytes(self.data(expected))
        return want == _bytes(actual) if actual is not None else want is None

    async def step(self, i: int, step: Dict[str, Any]) -> None:
        op = step.get("op")
        if op not in OPS:
            raise StepFailed(f"unknown op {op!r}")
        spec = OPS[op]
        args = {k: v for k, v in step.items() if k not in ("op", "expect", "save", "comment")}
        unknown = set(args) - set(spec["required"]) - set(spec["optional"])
        missing = set(spec["required"]) - set(args)
        if unknown or missing:
            raise StepFailed(f"unknown arguments {sorted(unknown)} / missing {sorted(missing)}")
        expect = step.get("expect", {})
        try:
            result = await self.run_op(op, args)
        except StepFailed:
            raise
        except statestore.StateStoreError as e:
            if expect.get("error") != e.name:
                raise StepFailed(f"failed with {e.name} ({e}), expected {expect}") from e
            return
        if "error" in expect:
            raise StepFailed(f"succeeded with {result}, expected the error {expect['error']}")
        for field, want in expect.items():
            if field not in spec["result"]:
                raise StepFailed(f"op {op} has no result field {field!r}")
            if not self.matches(field, want, result.get(field)):
                raise StepFailed(f"{field}: expected {want!r}, got {result.get(field)!r}")
        for var, field in step.get("save", {}).items():
            if field not in result:
                raise StepFailed(f"cannot save {field!r}: not a result of {op}")
            self.vars[var] = result[field]

    async def run(self) -> None:
        try:
            for name in self.scenario.get("clients", []):
                await self.connect(name)
            for i, step in enumerate(self.scenario["steps"]):
                try:
                    await self.step(i, step)
                except StepFailed as e:
                    raise StepFailed(
                        f"{self.scenario['name']} ({self.flavour}): step {i} ({step.get('op')}"
                        f"{', ' + step['comment'] if 'comment' in step else ''}): {e}"
                    ) from e
        finally:
            for stream in self.handles["stream"].values():
                stream.close()
            for client in self.clients:
                try:
                    await r(client.close())
                except statestore.StateStoreError:
                    pass


def _bytes(x: Any) -> Any:
    if isinstance(x, str):
        return x.encode()
    return x


def _text(x: Any) -> str:
    return x.decode() if isinstance(x, bytes) else str(x)


def load(path: Path) -> Dict[str, Any]:
    scenario: Dict[str, Any] = json.loads(path.read_text())
    expected_name = path.relative_to(SCENARIOS).with_suffix("").as_posix()
    if scenario.get("name") != expected_name:
        raise StepFailed(f"{path}: name {scenario.get('name')!r} is not {expected_name!r}")
    return scenario


def ids() -> List[str]:
    return [p.relative_to(SCENARIOS).with_suffix("").as_posix() for p in FILES]


@pytest.fixture(scope="module")
def scenario_server() -> Any:
    with LocalStateStore() as s:
        yield s


def test_enough_scenarios() -> None:
    assert len(FILES) >= 40, f"only {len(FILES)} scenarios in {SCENARIOS}"


@pytest.mark.parametrize("flavour", ["sync", "async"])
@pytest.mark.parametrize("path", FILES, ids=ids())
async def test_scenario(scenario_server: LocalStateStore, path: Path, flavour: str) -> None:
    scenario = load(path)
    known = KNOWN_FAILURES.get(scenario["name"])
    try:
        await Runner(scenario_server, flavour, scenario).run()
    except StepFailed as e:
        if known:
            pytest.xfail(f"known failure ({known}): {e}")
        pytest.fail(str(e), pytrace=False)
    if known:
        pytest.fail(f"{scenario['name']} is listed as a known failure ({known}) but passed", pytrace=False)




# The runner's own check: every kind of mismatch must fail, naming the step; a correct
# scenario must pass (so that a runner that accepts anything cannot go unnoticed).
MUST_FAIL = [
    ("wrong value", [{"op": "set", "client": "a", "key": "k", "value": "v"},
                     {"op": "get", "client": "a", "key": "k", "expect": {"value": "w"}}], "value: expected 'w'"),
    ("wrong outcome", [{"op": "delete", "client": "a", "key": "absent", "expect": {"outcome": "deleted"}}],
     "outcome: expected 'deleted'"),
    ("error expected, success got", [{"op": "get", "client": "a", "key": "k", "expect": {"error": "TIMEOUT"}}],
     "expected the error TIMEOUT"),
    ("wrong error", [{"op": "set", "client": "a", "key": "", "value": "v", "expect": {"error": "TIMEOUT"}}],
     "failed with INVALID_ARGUMENT"),
    ("unknown op", [{"op": "frobnicate", "client": "a"}], "unknown op 'frobnicate'"),
    ("unknown argument", [{"op": "get", "client": "a", "key": "k", "colour": "red"}], "unknown arguments ['colour']"),
    ("unknown result field", [{"op": "get", "client": "a", "key": "k", "expect": {"valeu": None}}],
     "no result field 'valeu'"),
]


@pytest.mark.parametrize("flavour", ["sync", "async"])
@pytest.mark.parametrize("what, steps, failure", MUST_FAIL, ids=[m[0] for m in MUST_FAIL])
async def test_the_runner_fails_on_every_mismatch(
    scenario_server: LocalStateStore, flavour: str, what: str, steps: List[Dict[str, Any]], failure: str
) -> None:
    scenario = {"name": f"selftest/{what}", "clients": ["a"], "steps": steps}
    with pytest.raises(StepFailed, match=rf"selftest/{what} \({flavour}\): step {len(steps) - 1} ") as info:
        await Runner(scenario_server, flavour, scenario).run()
    assert failure in str(info.value), str(info.value)
    passing = {"name": "selftest/passes", "clients": ["a"], "steps": steps[:-1] + [
        {"op": "set", "client": "a", "key": "k", "value": "v", "expect": {"applied": True}}]}
    await Runner(scenario_server, flavour, passing).run()
