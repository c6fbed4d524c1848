"""AsyncClient: observe a key while another task writes it, then a lock and an election."""

from __future__ import annotations

import asyncio

import statestore
from statestore.testing import LocalStateStore


async def main(host: str, port: int) -> None:
    async with statestore.AsyncClient.connect(host, port) as client:
        changes = await client.observe("color")  # registered before the writes below

        async def writer() -> None:
            for color in ("red", "green"):
                await client.set("color", color)
            await client.delete("color")

        task = asyncio.create_task(writer())
        async for event in changes:
            print(event.kind, event.value)
            if event.kind == "delete":
                break
        await task

        async with client.lock("locks/report", ttl=10.0) as guard:
            await client.set("report", "done", fencing_token=guard.fencing_token)
        written = await client.lock("locks/counter").update("counter", lambda old: b"%d" % (int(old or 0) + 1))
        print("counter:", written)

        election = client.election("leader/jobs", "worker-1", ttl=10.0)
        token = await election.campaign(timeout=10.0)
        print("leader:", await election.leader(), token)
        await election.resign()


if __name__ == "__main__":
    with LocalStateStore() as server:
        asyncio.run(main(server.host, server.port))
