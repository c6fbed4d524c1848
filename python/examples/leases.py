"""Leases with automatic renewal, and waiting for a loss in a thread."""

from __future__ import annotations

import threading

import statestore
from statestore.testing import LocalStateStore


def main(host: str, port: int) -> None:
    with statestore.Client.connect(host, port) as client:
        lease = client.lease("lease/cache", "worker-1", auto_renew=True)
        token = lease.acquire(5.0, timeout=10.0)
        client.set("cache", "warm", fencing_token=token)

        losses: list[statestore.Loss | None] = []
        watcher = threading.Thread(target=lambda: losses.append(lease.lost(timeout=30.0)))
        watcher.start()
        other = client.lease("lease/cache", "worker-2")
        print("other try:", other.try_acquire(5.0))
        print("released:", lease.release())
        watcher.join()
        print("loss after release:", losses[0])  # None: released, not lost


if __name__ == "__main__":
    with LocalStateStore() as server:
        main(server.host, server.port)
