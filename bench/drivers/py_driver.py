#!/usr/bin/env python3
"""One measurement of one Python flavour, for `statestore-bench bindings` (bench/README.md).

Flavours: `async` (statestore.AsyncClient, N asyncio tasks), `sync` (statestore.Client, N
threads sharing one client) and `paho` (the state store protocol spoken by hand over
paho-mqtt, MQTT 5, TCP_NODELAY: the baseline a Python user would otherwise write).
Tests: `probe` (can the flavour run here?), `throughput` (warm-up, then a measuring window or
an operation cap), `boundary` (calls that fail validation before any I/O, ns per call),
`memory` (many operations while resident memory is sampled), `batch` (`--ops` keys as a
loop of single calls, then as one `get_many`/`set_many`: `loop_s`, `batch_s`) and `idle` (a
connected client observing a key, idle for `--warmup` to settle, then for `--seconds`: the
process's CPU and context switches over that time).

Prints one line `RESULT <json>`: the figures, `{"unavailable": reason}` when the flavour
cannot run here, or `{"error": ...}` when it failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import socket
import sys
import threading
import time
import uuid
from typing import Any, Awaitable, Callable, Dict, List, Optional, Tuple

INVOKE_TOPIC = "statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke"
WARMUP, MEASURE, STOP = 0, 1, 2
MEMORY_SAMPLES = 100


def emit(result: Dict[str, Any]) -> None:
    print("RESULT " + json.dumps(result), flush=True)


def key(slot: int) -> bytes:
    return b"bench-key-%03d" % slot


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def ctx_switches() -> int:
    """Context switches of every thread of this process so far (voluntary + involuntary)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_nvcsw + usage.ru_nivcsw


def status_mib(field: str) -> Optional[float]:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def service_cpu(pid: Optional[int]) -> Optional[float]:
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/stat") as stat:
            text = stat.read()
        fields = text[text.rindex(")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class Gate:
    """The phases of one run, asked by every worker before each operation."""

    def __init__(self, cap: Optional[int], memory: bool) -> None:
        self.phase = WARMUP
        self.cap = cap
        self.counted = 0
        self.lock = threading.Lock()
        self.capped = threading.Event()
        self.memory = memory
        self.samples: List[Tuple[int, float]] = []
        self.step = max(1, (cap or 1) // MEMORY_SAMPLES)

    def next(self) -> Optional[int]:
        phase = self.phase
        if phase != MEASURE or self.cap is None:
            return phase if phase != STOP else None
        with self.lock:
            n = self.counted
            self.counted = n + 1
        if n >= self.cap:
            self.capped.set()
            return None
        if self.memory and n % self.step == 0 and n > 0:
            rss = status_mib("VmRSS:")
            if rss is not None:
                self.samples.append((n, rss))
        return MEASURE

    def stop(self) -> None:
        self.phase = STOP
        self.capped.set()


class Recorder:
    def __init__(self, keep_latencies: bool) -> None:
        self.latencies: List[int] = []
        self.keep = keep_latencies
        self.ops = 0
        self.errors = 0
        self.first_error: Optional[str] = None
        self.last_completion = 0

    def success(self, phase: int, sent: int) -> None:
        if phase == MEASURE:
            now = time.perf_counter_ns()
            if self.keep:
                self.latencies.append(now - sent)
            self.ops += 1
            self.last_completion = now

    def failure(self, gate: Gate, error: object) -> None:
        self.errors += 1
        if self.first_error is None:
            self.first_error = str(error) or type(error).__name__
        gate.stop()


class Window:
    """Readings at the start of the measuring window."""

    def __init__(self, service_pid: Optional[int]) -> None:
        self.service_pid = service_pid
        self.at = 0
        self.cpu = 0.0
        self.switches = 0
        self.service_cpu: Optional[float] = None

    def open(self, gate: Gate) -> None:
        self.at = time.perf_counter_ns()
        self.cpu = cpu_seconds()
        self.switches = ctx_switches()
        self.service_cpu = service_cpu(self.service_pid)
        if gate.phase == WARMUP:  # a failure during the warm-up has stopped the run already
            gate.phase = MEASURE

    def figures(self, recorder: Recorder) -> Dict[str, Any]:
        end_cpu = cpu_seconds()
        end_switches = ctx_switches()
        end_service = service_cpu(self.service_pid)
        ops = recorder.ops
        last = recorder.last_completion or time.perf_counter_ns()
        elapsed = max(0, last - self.at) / 1e9
        lat = sorted(recorder.latencies)

        def quantile(q: float) -> float:
            if not lat:
                return 0.0
            return lat[min(len(lat) - 1, int(q * len(lat)))] / 1000.0

        service = None
        if self.service_cpu is not None and end_service is not None and ops:
            service = (end_service - self.service_cpu) * 1e6 / ops
        return {
            "ops": ops,
            "errors": recorder.errors,
            "error": recorder.first_error,
            "elapsed_s": elapsed,
            "ops_per_sec": ops / elapsed if elapsed > 0 else 0.0,
            "p50_us": quantile(0.5),
            "p99_us": quantile(0.99),
            "max_us": lat[-1] / 1000.0 if lat else 0.0,
            "cpu_us_per_op": (end_cpu - self.cpu) * 1e6 / ops if ops else 0.0,
            "ctx_switches_per_op": (end_switches - self.switches) / ops if ops else None,
            "service_cpu_us_per_op": service,
        }


def check_set(result: Any) -> None:
    if not getattr(result, "applied", False):
        raise RuntimeError(f"SET not applied: {result!r}")


def check_get(result: Any, size: int) -> None:
    if result is None or len(result.value) != size:
        raise RuntimeError(f"GET returned {result!r}, expected {size} bytes")


def operation(args: argparse.Namespace, i: int) -> str:
    """`set` or `get`; memory runs alternate so that both kinds of result objects churn."""
    if args.op == "mix":
        return "set" if i % 2 == 0 else "get"
    return str(args.op)


def memory_trace(gate: Gate) -> Optional[Dict[str, Any]]:
    samples = gate.samples
    if not samples:
        return None
    last_ops = samples[-1][0]
    middle = next(mb for ops, mb in samples if ops >= last_ops // 2)
    return {
        "samples": samples,
        "start_mb": samples[0][1],
        "end_mb": samples[-1][1],
        "growth_mb": samples[-1][1] - samples[0][1],
        "second_half_growth_mb": samples[-1][1] - middle,
    }


def finish(args: argparse.Namespace, gate: Gate, figures: Dict[str, Any]) -> Dict[str, Any]:
    figures["peak_rss_mb"] = status_mib("VmHWM:")
    if args.test == "memory":
        figures["memory"] = memory_trace(gate)
    return figures


def plan(args: argparse.Namespace) -> Tuple[Gate, Recorder, Window]:
    memory = args.test == "memory"
    gate = Gate(args.ops, memory)
    return gate, Recorder(keep_latencies=not memory), Window(args.service_pid)


# --- batch: a loop of single calls against one batch call ------------------------------------


def check_batch(op: str, size: int, results: List[Any]) -> None:
    for result in results:
        if isinstance(result, Exception):
            raise result
        check_set(result) if op == "set" else check_get(result, size)


async def batch(args: argparse.Namespace, one: Callable[..., Awaitable[Any]],
                many: Callable[..., Awaitable[List[Any]]]) -> Dict[str, Any]:
    """`one(op, key, value)` and `many(op, items)` are the flavour's calls; the sync flavour's
    are coroutines that call the blocking client without ever suspending (a few hundred ns per
    call on top of a round trip)."""
    keys = [b"bench-batch-%05d" % i for i in range(args.ops or 1000)]
    items = [(k, b"v" * args.size) for k in keys]
    check_batch("set", args.size, await many("set", items))
    looped = batched = 0
    # A warm-up pass (not counted) when the profile has a warm-up, then the measured pass.
    for _ in range(2 if args.warmup > 0 else 1):
        started = time.perf_counter_ns()
        for k, v in items:
            check_batch(args.op, args.size, [await one(args.op, k, v)])
        looped = time.perf_counter_ns() - started
        started = time.perf_counter_ns()
        check_batch(args.op, args.size, await many(args.op, items))
        batched = time.perf_counter_ns() - started
    return {"ops": len(keys), "errors": 0, "elapsed_s": (looped + batched) / 1e9,
            "loop_s": looped / 1e9, "batch_s": batched / 1e9, "peak_rss_mb": status_mib("VmHWM")}


def batch_calls(client: Any, awaited: bool) -> Tuple[Callable[..., Awaitable[Any]], Callable[..., Awaitable[List[Any]]]]:
    """The single and batch calls of `client` (AsyncClient when `awaited`) as coroutines."""
    async def one(op: str, key: bytes, value: bytes) -> Any:
        result = client.set(key, value) if op == "set" else client.get(key)
        return await result if awaited else result

    async def many(op: str, items: List[Tuple[bytes, bytes]]) -> List[Any]:
        result = client.set_many(items) if op == "set" else client.get_many([k for k, _ in items])
        return list(await result if awaited else result)

    return one, many


class IdleMeter:
    """The CPU and context switches of this whole process from its creation on (`idle`)."""

    def __init__(self) -> None:
        self.cpu, self.switches, self.started = cpu_seconds(), ctx_switches(), time.perf_counter()

    def cpu_ms(self) -> float:
        return (cpu_seconds() - self.cpu) * 1e3

    def figures(self, settle_cpu_ms: float) -> Dict[str, Any]:
        """The measured window's figures, with the CPU of the settling time before it."""
        return {"elapsed_s": time.perf_counter() - self.started, "idle_cpu_ms": self.cpu_ms(),
                "idle_ctx_switches": ctx_switches() - self.switches, "settle_cpu_ms": settle_cpu_ms}


# --- statestore.AsyncClient ---------------------------------------------------------------


async def run_async(args: argparse.Namespace) -> Dict[str, Any]:
    import statestore

    client = await statestore.AsyncClient.connect(args.host, args.port)
    try:
        value = b"v" * args.size
        if args.test == "boundary":
            return await boundary_async(client, args.ops or 100_000)
        if args.test == "idle":
            # The observation is open and the event loop sleeps, as an idle application's does.
            observation = await client.observe(b"bench-idle")
            settle = IdleMeter()
            await asyncio.sleep(args.warmup)
            settle_cpu_ms = settle.cpu_ms()
            meter = IdleMeter()
            await asyncio.sleep(args.seconds)
            figures = meter.figures(settle_cpu_ms)
            observation.close()
            return figures
        if args.test == "batch":
            return await batch(args, *batch_calls(client, awaited=True))
        for slot in range(args.inflight):
            check_set(await client.set(key(slot), value))
        gate, recorder, window = plan(args)

        async def worker(slot: int) -> None:
            k = key(slot)
            i = 0
            while True:
                phase = gate.next()
                if phase is None:
                    return
                sent = time.perf_counter_ns()
                try:
                    if operation(args, i) == "set":
                        check_set(await client.set(k, value))
                    else:
                        check_get(await client.get(k), args.size)
                except Exception as error:  # noqa: BLE001 - reported, ends the run
                    recorder.failure(gate, error)
                    return
                recorder.success(phase, sent)
                i += 1

        tasks = [asyncio.ensure_future(worker(slot)) for slot in range(args.inflight)]
        await asyncio.sleep(args.warmup)
        window.open(gate)
        deadline = time.monotonic() + args.seconds
        while time.monotonic() < deadline and not gate.capped.is_set():
            await asyncio.sleep(0.005)
        gate.stop()
        await asyncio.gather(*tasks)
        return finish(args, gate, window.figures(recorder))
    finally:
        await client.close()


async def boundary_async(client: Any, calls: int) -> Dict[str, Any]:
    import statestore

    started = time.perf_counter_ns()
    for _ in range(calls):
        try:
            await client.set(b"", b"v")
        except statestore.StateStoreError:
            continue
        raise RuntimeError("SET of an empty key did not fail")
    elapsed = time.perf_counter_ns() - started
    return {"ops": calls, "errors": 0, "ns_per_call": elapsed / calls}


# --- statestore.Client -----------------------------------------------------------------------


def run_sync(args: argparse.Namespace) -> Dict[str, Any]:
    import statestore

    client = statestore.Client.connect(args.host, args.port)
    try:
        value = b"v" * args.size
        if args.test == "batch":
            return asyncio.run(batch(args, *batch_calls(client, awaited=False)))
        if args.test == "idle":
            # A thread blocked waiting for the next change, as a sync application's reader is.
            with client.observe(b"bench-idle") as observation:
                settle = IdleMeter()
                event = observation.next(timeout=args.warmup) if args.warmup > 0 else None
                settle_cpu_ms = settle.cpu_ms()
                meter = IdleMeter()
                event = event or observation.next(timeout=args.seconds)
                figures = meter.figures(settle_cpu_ms)
            if event is not None:
                raise RuntimeError(f"an idle observation gave {event!r}")
            return figures
        if args.test == "boundary":
            calls = args.ops or 100_000
            started = time.perf_counter_ns()
            for _ in range(calls):
                try:
                    client.set(b"", b"v")
                except statestore.StateStoreError:
                    continue
                raise RuntimeError("SET of an empty key did not fail")
            elapsed = time.perf_counter_ns() - started
            return {"ops": calls, "errors": 0, "ns_per_call": elapsed / calls}
        for slot in range(args.inflight):
            check_set(client.set(key(slot), value))
        gate, recorder, window = plan(args)

        def worker(slot: int) -> None:
            k = key(slot)
            i = 0
            while True:
                phase = gate.next()
                if phase is None:
                    return
                sent = time.perf_counter_ns()
                try:
                    if operation(args, i) == "set":
                        check_set(client.set(k, value))
                    else:
                        check_get(client.get(k), args.size)
                except Exception as error:  # noqa: BLE001 - reported, ends the run
                    recorder.failure(gate, error)
                    return
                recorder.success(phase, sent)
                i += 1

        threads = [threading.Thread(target=worker, args=(s,)) for s in range(args.inflight)]
        for thread in threads:
            thread.start()
        time.sleep(args.warmup)
        window.open(gate)
        gate.capped.wait(args.seconds)
        gate.stop()
        for thread in threads:
            thread.join()
        return finish(args, gate, window.figures(recorder))
    finally:
        client.close()


# --- by hand over paho-mqtt --------------------------------------------------------------------


class Hlc:
    """The `__ts` the protocol wants on a SET: `{ms:015}:{counter:05}:{node}`."""

    def __init__(self, node: str) -> None:
        self.node = node
        self.ms = 0
        self.counter = 0
        self.lock = threading.Lock()

    def next(self) -> str:
        with self.lock:
            now = time.time_ns() // 1_000_000
            if now > self.ms:
                self.ms, self.counter = now, 0
            else:
                self.counter += 1
            return f"{self.ms:015d}:{self.counter:05d}:{self.node}"


def resp_array(*parts: bytes) -> bytes:
    out = [b"*%d\r\n" % len(parts)]
    for part in parts:
        out.append(b"$%d\r\n%s\r\n" % (len(part), part))
    return b"".join(out)


def run_paho(args: argparse.Namespace) -> Dict[str, Any]:
    import paho.mqtt.client as mqtt
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties

    if args.test != "throughput":
        return {"unavailable": f"the by-hand baseline has no {args.test} test"}
    client_id = f"bench-paho-{os.getpid()}"
    response_topic = f"clients/{client_id}/services/statestore/_any_/command/invoke/response"
    hlc = Hlc(client_id)
    value = b"v" * args.size
    gate, recorder, window = plan(args)
    pending: Dict[bytes, Tuple[int, str, int, Optional[int]]] = {}
    lock = threading.Lock()
    state = {"outstanding": 0}
    drained = threading.Event()
    ready = threading.Event()
    subscribed = threading.Event()
    get_answer = b"$%d\r\n" % args.size

    client = mqtt.Client(
        mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5
    )

    def send(slot: int, op: str, phase: Optional[int]) -> None:
        correlation = uuid.uuid4().bytes
        props = Properties(PacketTypes.PUBLISH)
        props.ResponseTopic = response_topic
        props.CorrelationData = correlation
        props.MessageExpiryInterval = 10
        props.ContentType = "application/octet-stream"
        props.PayloadFormatIndicator = 0
        props.UserProperty = [("__srcId", client_id), ("__ts", hlc.next()), ("__protVer", "1.0")]
        payload = resp_array(b"SET", key(slot), value) if op == "set" else resp_array(b"GET", key(slot))
        with lock:
            pending[correlation] = (slot, op, time.perf_counter_ns(), phase)
            state["outstanding"] += 1
        client.publish(INVOKE_TOPIC, payload, qos=1, properties=props)

    def on_message(_c: Any, _u: Any, message: Any) -> None:
        props = message.properties
        correlation = getattr(props, "CorrelationData", None)
        with lock:
            entry = pending.pop(correlation, None)
            state["outstanding"] -= 1
        if entry is None:
            recorder.failure(gate, f"a response with unknown correlation data {correlation!r}")
            return
        slot, op, sent, phase = entry
        status = dict(getattr(props, "UserProperty", []) or []).get("__stat")
        payload = message.payload
        if status != "200":
            recorder.failure(gate, f"{op.upper()} answered __stat {status}")
        elif op == "set" and payload != b"+OK\r\n":
            recorder.failure(gate, f"SET answered {payload[:40]!r}")
        elif op == "get" and not (
            payload.startswith(get_answer) and len(payload) == len(get_answer) + args.size + 2
        ):
            recorder.failure(gate, f"GET answered {payload[:40]!r}")
        elif phase is None:
            ready.set()  # priming
            return
        else:
            recorder.success(phase, sent)
            next_phase = gate.next()
            if next_phase is not None:
                send(slot, args.op, next_phase)
                return
        with lock:
            if state["outstanding"] == 0 and gate.phase == STOP:
                drained.set()

    client.on_message = on_message
    client.on_connect = lambda *a: ready.set()
    client.on_subscribe = lambda *a: subscribed.set()
    client.connect(args.host, args.port, keepalive=60, clean_start=True)
    client.socket().setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    client.loop_start()
    try:
        if not ready.wait(10):
            raise RuntimeError("paho: not connected within 10 s")
        client.subscribe(response_topic, qos=1)
        if not subscribed.wait(10):
            raise RuntimeError("paho: not subscribed within 10 s")
        for slot in range(args.inflight):
            ready.clear()
            send(slot, "set", None)
            if not ready.wait(10):
                raise RuntimeError(f"paho: priming failed: {recorder.first_error}")
        for slot in range(args.inflight):
            phase = gate.next()
            if phase is not None:
                send(slot, args.op, phase)
        time.sleep(args.warmup)
        window.open(gate)
        gate.capped.wait(args.seconds)
        with lock:
            gate.stop()
            if state["outstanding"] == 0:
                drained.set()
        if not drained.wait(15):
            raise RuntimeError("paho: requests in flight were not answered within 15 s")
        return finish(args, gate, window.figures(recorder))
    finally:
        client.disconnect()
        client.loop_stop()


# --- main --------------------------------------------------------------------------------------


def probe(flavour: str) -> Dict[str, Any]:
    try:
        if flavour == "paho":
            import paho.mqtt

            return {"ok": True, "version": f"paho-mqtt {paho.mqtt.__version__}"}
        import statestore

        return {"ok": True, "version": f"statestore {getattr(statestore, '__version__', '?')}"}
    except Exception as error:  # noqa: BLE001 - the reason is the report
        return {"unavailable": f"cannot import: {error} ({sys.executable})"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flavour", choices=["async", "sync", "paho"], required=True)
    parser.add_argument("--test", choices=["probe", "throughput", "boundary", "memory", "batch", "idle"], default="throughput")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=1883)
    parser.add_argument("--op", choices=["set", "get", "mix"], default="set")
    parser.add_argument("--size", type=int, default=16)
    parser.add_argument("--inflight", type=int, default=1)
    parser.add_argument("--warmup", type=float, default=0.1)
    parser.add_argument("--seconds", type=float, default=0.3)
    parser.add_argument("--ops", type=int, default=None, help="operation cap (calls for boundary, keys for batch)")
    parser.add_argument("--service-pid", type=int, default=None)
    args = parser.parse_args()
    if args.test == "probe":
        emit(probe(args.flavour))
        return
    found = probe(args.flavour)
    if "unavailable" in found:
        emit(found)
        return
    if args.test == "memory" and args.op != "mix":
        args.op = "mix"
    try:
        if args.flavour == "async":
            result = asyncio.run(run_async(args))
        elif args.flavour == "sync":
            result = run_sync(args)
        else:
            result = run_paho(args)
    except Exception as error:  # noqa: BLE001 - the reason is the report
        result = {"error": f"{type(error).__name__}: {error}"}
    emit(result)


if __name__ == "__main__":
    main()
