"""Benchmark: a deep page of the task-list API costs what the first does.

Builds a fresh PostgreSQL database holding one project of 10,000 tasks (bulk-created, with
ties on updated_at), starts gunicorn with 2 workers on 127.0.0.1 (DEBUG off), and asks
`GET /api/tasks/?limit=50` as the project's admin (token authentication) for:

    first   the first page
    deep    offset 4,900 (`&offset=4900`): the issue's deep page
    cursor  the same page by cursor (reached once by following `next` links from the first)

Latency: one client, the three pages in turn (interleaved), `--rounds` times; p50 and p90.
Throughput: 8 clients (threads, each its own connection) asking for one page, the pages
taking turns in 1 s windows, `--seconds` in all per page; requests per second. Goal: deep
within 20 % of first (deep/first ≤ 1.20). Prints, among others:

    task list p50 first/deep: X/Y ms
    task list requests/s at 8 clients first/deep/cursor: A/B/C

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/api.py [--tasks 10000] [--rounds 60] [--seconds 5]

Bounded: it makes rounds × 3 + 8 × seconds × (what the server answers) requests, to
loopback only, and drops its database at the end.
"""

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.served import Client, Gunicorn, api_token, build_project, drop_database, percentile, setup_django

PAGE = 50
DEEP = 4900


def _path(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


def _ok(client: Client, path: str) -> tuple[dict, float]:
    status, body, ms = client.get(path)
    if status != 200:
        sys.exit(f"GET {path}: {status}\n{body[:500]!r}")
    return json.loads(body), ms


def _throughput(port: int, headers: dict, pages: dict[str, str], clients: int, seconds: float,
                window: float = 1.0) -> dict[str, tuple[float, float, int]]:
    """Per page: requests per second and p50 (ms) of `clients` threads asking for it, and its
    errors. The pages take turns in windows of `window` seconds (interleaved, as the machine's
    load drifts), `seconds` in all per page."""
    times: dict[str, list[float]] = {key: [] for key in pages}
    spent = dict.fromkeys(pages, 0.0)
    errors = dict.fromkeys(pages, 0)
    lock = threading.Lock()
    connections = [Client(port, headers) for _ in range(clients)]

    def run(client: Client, key: str, stop: float) -> None:
        mine, bad = [], 0
        while time.monotonic() < stop:
            status, _, ms = client.get(pages[key])
            mine.append(ms)
            bad += status != 200
        with lock:
            times[key].extend(mine)
            errors[key] += bad

    for _ in range(max(1, round(seconds / window))):
        for key in pages:
            started = time.monotonic()
            threads = [threading.Thread(target=run, args=(c, key, started + window)) for c in connections]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            spent[key] += time.monotonic() - started
    for client in connections:
        client.close()
    return {key: (len(times[key]) / spent[key], statistics.median(times[key]), errors[key]) for key in pages}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    url, name = setup_django("tw_bench_api")
    server = None
    try:
        started = time.monotonic()
        _, author, _ = build_project(args.tasks)
        print(f"{args.tasks} tasks built in {time.monotonic() - started:.1f} s", flush=True)
        headers = {"Authorization": f"Token {api_token(author)}", "Accept": "application/json"}
        server = Gunicorn(workers=args.workers)
        client = Client(server.port, headers)

        first = f"/api/tasks/?limit={PAGE}"
        deep = f"/api/tasks/?limit={PAGE}&offset={DEEP}"
        walked = page = _ok(client, first)[0]
        for _ in range(DEEP // PAGE - 1):  # to the page of rows DEEP - PAGE … DEEP - 1: its next link starts at DEEP
            page = _ok(client, _path(page["next"]))[0]
        cursor = _path(page["next"])
        by_offset, by_cursor = _ok(client, deep)[0]["results"], _ok(client, cursor)[0]["results"]
        if [r["id"] for r in by_offset] != [r["id"] for r in by_cursor]:
            sys.exit("The cursor page and the offset page differ.")
        print(f"total {walked['count']} tasks; deep page by offset: {deep}; by cursor: {cursor[:60]}…", flush=True)

        pages = {"first": first, "deep": deep, "cursor": cursor}
        for path in pages.values():  # warm both workers
            for _ in range(4):
                _ok(client, path)
        timings: dict[str, list[float]] = {key: [] for key in pages}
        for _ in range(args.rounds):
            for key, path in pages.items():  # interleaved
                timings[key].append(_ok(client, path)[1])
        client.close()
        for key, values in timings.items():
            print(f"{key:>6}: p50 {statistics.median(values):6.1f} ms, p90 {percentile(values, 90):6.1f} ms", flush=True)
        p50 = {key: statistics.median(values) for key, values in timings.items()}
        print(f"task list p50 first/deep: {p50['first']:.1f}/{p50['deep']:.1f} ms")
        print(f"task list p50 first/cursor: {p50['first']:.1f}/{p50['cursor']:.1f} ms")
        ratios = f"{p50['deep'] / p50['first']:.2f} (offset), {p50['cursor'] / p50['first']:.2f} (cursor)"
        print(f"deep/first: {ratios}; goal ≤ 1.20", flush=True)

        rates, errors = {}, 0
        for key, (rate, median, bad) in _throughput(server.port, headers, pages, args.clients, args.seconds).items():
            rates[key], errors = rate, errors + bad
            print(f"{key:>6} at {args.clients} clients: {rate:.0f} requests/s, p50 {median:.0f} ms, {bad} errors", flush=True)
        print(f"task list requests/s at {args.clients} clients first/deep/cursor: "
              f"{rates['first']:.0f}/{rates['deep']:.0f}/{rates['cursor']:.0f} ({errors} errors)")
    finally:
        if server is not None:
            server.stop()
        drop_database(url, name)


if __name__ == "__main__":
    main()
