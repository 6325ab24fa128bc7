"""procrastinate (PyPI) draining N no-op jobs with 1 or 4 worker processes, 4 in flight each,
for BENCHMARKS.md §14, beside drain.js's peers.

    .venv/bin/python drain.py URL N WORKERS

Makes a database of its own on the server at URL, enqueues N jobs in batches of 10,000, then
times worker processes that each stop when the queue is empty (procrastinate's `wait=False`).
Prints one JSON line.
"""

import asyncio
import json
import multiprocessing
import os
import sys
import time
from urllib.parse import urlsplit, urlunsplit

import procrastinate
import psycopg


def app_for(url):
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))

    @app.task(name="noop")
    async def noop(i):
        return None

    return app


def work(url, ready):
    app = app_for(url)

    async def run():
        async with app.open_async():
            ready.wait()
            await app.run_worker_async(concurrency=4, wait=False, install_signal_handlers=False)

    asyncio.run(run())


def main():
    url, n, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    name = f"peer_procrastinate_{os.getpid()}_{int(time.time())}"
    with psycopg.connect(url, autocommit=True) as c:
        c.execute(f"CREATE DATABASE {name}")
    parts = urlsplit(url)
    db = urlunsplit(parts._replace(path="/" + name))
    app = app_for(db)

    async def setup():
        async with app.open_async():
            await app.schema_manager.apply_schema_async()
            started = time.monotonic()
            task = app.tasks["noop"]
            for i in range(0, n, 10_000):
                await task.batch_defer_async(*({"i": j} for j in range(i, min(n, i + 10_000))))
            return time.monotonic() - started

    secs = asyncio.run(setup())
    print(json.dumps({"peer": "procrastinate", "op": "enqueue_batch", "workers": 1, "n": n,
                      "secs": round(secs, 3), "jobs_per_sec": round(n / secs)}), flush=True)
    ready = multiprocessing.Event()
    procs = [multiprocessing.Process(target=work, args=(db, ready)) for _ in range(workers)]
    for p in procs:
        p.start()
    time.sleep(2)  # connected and imported, as drain.js waits for its workers to be ready
    started = time.monotonic()
    ready.set()
    for p in procs:
        p.join()
    secs = time.monotonic() - started
    with psycopg.connect(db) as c:
        left = c.execute("SELECT count(*) FROM procrastinate_jobs WHERE status <> 'succeeded'").fetchone()[0]
    assert left == 0, f"{left} jobs not done"
    print(json.dumps({"peer": "procrastinate", "op": "drain", "workers": workers, "n": n,
                      "secs": round(secs, 3), "jobs_per_sec": round(n / secs), "inflight": 4}), flush=True)
    with psycopg.connect(url, autocommit=True) as c:
        c.execute(f"DROP DATABASE {name} WITH (FORCE)")


if __name__ == "__main__":
    main()
