"""The example of docs/python.md: set, get, a conditional set, delete, a lock with its
fencing token, and listing keys. Runs against STATESTORE_HOST/STATESTORE_PORT, or an
in-process local state store when they are not set."""

from __future__ import annotations

import os

import statestore
from statestore.testing import LocalStateStore


def main(host: str, port: int) -> None:
    with statestore.Client.connect(host, port) as client:
        r = client.set("color", "blue", expiry=60.0)
        print("set:", r.applied, r.version)
        v = client.get("color")
        assert v is not None and v.value == b"blue"
        print("get:", v.decode(), v.version)
        first = client.set("lock", "me", condition=statestore.Condition.NX)
        print("NX applied:", first.applied)
        with client.lock("locks/report", ttl=10.0) as guard:
            client.set("report", "done", fencing_token=guard.fencing_token)
        print("keys:", sorted(client.keys("*")))
        client.delete("color")
        client.vdel("lock", "me")


if __name__ == "__main__":
    if "STATESTORE_PORT" in os.environ:
        main(os.environ.get("STATESTORE_HOST", "localhost"), int(os.environ["STATESTORE_PORT"]))
    else:
        with LocalStateStore() as server:
            main(server.host, server.port)
