"""The page benchmark: the run page and the leaderboard under load, beside /healthz, at several sizes.

    python bench/pages/run.py                              # 10^4 and 10^6 runs
    python bench/pages/run.py --sizes 10000 --duration 10  # a quick look

For each size it uses a PostgreSQL database of its own (kernelindex_pages_bench_<size>;
built once from bench/ingest/generate.py's synthetic SOL-ExecBench records, then
reused while it holds that many runs) and a gunicorn serving the app on it (DEBUG
off, as in production; one port per size, all up at once), and loads it with wrk
over loopback. Three targets are measured on each server:

  floor   GET /healthz: a minimal Django view through the whole middleware stack
  run     GET /runs/<id>: run ids drawn at random from the whole database
  group   GET /groups/<key>: page 1 of every comparison group, and for each group
          of more than one page one further page drawn at random

wrk draws every request's URL at random from the target's list (bench/pages/urls.lua).
First the page cache is emptied and every URL is requested once, one at a time:
that pass times the cold render of each URL (the cache-miss path) and leaves the
cache warm, so wrk measures what a visitor to an already visited page gets. Then
wrk runs in rounds that take turns over every size and target, so a burst of load
from a neighbour on the machine falls on all of them alike; each figure is the
median of its rounds.
"""

from __future__ import annotations

import argparse
import http.client
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import redis
from psycopg import sql

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "bench" / "out" / "pages"
sys.path.insert(0, str(ROOT / "bench" / "ingest"))
from generate import generate  # noqa: E402

SERVER = "postgres://postgres@127.0.0.1:5432"
# A Redis database of the benchmark's own: it is emptied before every cold pass.
REDIS_URL = "redis://127.0.0.1:6379/3"
DATABASE_PREFIX = "kernelindex_pages_bench"
LUA = Path(__file__).resolve().parent / "urls.lua"
PER_PAGE = 50  # the app's RUNS_PER_PAGE default
BROWSER_ACCEPT_ENCODING = "gzip, deflate, br, zstd"  # what Chromium sends


@dataclass
class Load:
    """What wrk measured for one target."""

    requests_per_s: float
    p50_ms: float
    p99_ms: float
    requests: int
    errors: str
    load_average: float  # the machine's 1-minute load average as wrk started


@dataclass
class Result:
    size: int
    target: str
    urls: int
    load: Load  # the median of the rounds
    cold_p50_ms: float
    cold_p99_ms: float


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 1_000_000], help="database sizes, in runs")
    parser.add_argument("--duration", type=int, default=8, help="seconds of each wrk round")
    parser.add_argument("--rounds", type=int, default=5, help="wrk rounds per size and target, taking turns")
    parser.add_argument("--connections", type=int, default=8, help="wrk's open connections")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn sync workers (the machine has 2 cores)")
    parser.add_argument("--run-urls", type=int, default=1000, help="how many run pages to spread the load over")
    parser.add_argument("--seed", type=int, default=1, help="for the data, the URL choice and wrk's draws")
    parser.add_argument("--server", default=SERVER, help="PostgreSQL server URL, without a database name")
    parser.add_argument("--redis", default=REDIS_URL, help="the Redis database the app caches in (it is emptied)")
    parser.add_argument(
        "--port",
        type=int,
        default=None,
        help="the first size's port, the next sizes' the ports after it (default: free ports); a port "
        "something else already listens on is refused, so that nothing but this benchmark's server is measured",
    )
    parser.add_argument(
        "--accept-encoding",
        default=BROWSER_ACCEPT_ENCODING,
        help="the Accept-Encoding every request sends (default: Chromium's, so cached pages come gzipped, as a "
        "browser gets them); '' asks for pages as they are",
    )
    parser.add_argument("--rebuild", action="store_true", help="drop and re-import each size's database")
    parser.add_argument(
        "--proxy",
        action="store_true",
        help="serve through the production stack (deploy/serve.py: nginx in front, gunicorn on a unix socket)",
    )
    parser.add_argument("--database-prefix", default=DATABASE_PREFIX, help="each size's database is <prefix>_<size>")
    parser.add_argument(
        "--no-page-cache", action="store_true", help="render every request (PAGE_CACHE_SECONDS=0): the figures before"
    )
    options = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is not installed (Debian: apt-get install wrk)")

    OUT.mkdir(parents=True, exist_ok=True)
    print(describe_machine(options))
    collect_static()
    targets: dict[int, dict[str, list[str]]] = {}
    for size in options.sizes:
        url = prepare_database(size, options)
        targets[size] = {"floor": ["/healthz"], **choose_paths(url, size, options)}
        for target, chosen in targets[size].items():
            print(f"  {size:,} runs, {target}: {len(chosen):,} URLs")
    ports = choose_ports(options)
    with ExitStack() as servers:
        for size in options.sizes:
            servers.enter_context(serving(ports[size], database_url(size, options), options))
        results = measure(ports, targets, options)
    text = f"{describe_machine(options)}\n\n{report(results)}"
    saved = OUT / f"report-{time.strftime('%Y%m%d-%H%M%S')}.txt"
    saved.write_text(text + "\n")
    print(f"\n{report(results)}\n(saved in {saved.relative_to(ROOT)})")


# -- data ----------------------------------------------------------------------------


def database_url(size: int, options: argparse.Namespace) -> str:
    return str(urlunsplit(urlsplit(options.server)._replace(path=f"/{options.database_prefix}_{size}")))


def prepare_database(size: int, options: argparse.Namespace) -> str:
    """The size's database, imported once and reused (migrated) while it still holds `size` runs."""
    url = database_url(size, options)
    if not options.rebuild and stored_runs(url) == size:
        # A database kept from an earlier version of the code gets its new migrations (indexes, say).
        manage(["migrate", "--noinput", "-v", "0"], app_env(url, options))
        return url
    build_database(url, size, options)
    vacuum_analyze(url)
    return url


def build_database(url: str, size: int, options: argparse.Namespace) -> None:
    """Drop and create the database at `url`, migrate it and import `size` generated runs (no VACUUM)."""
    name = urlsplit(url).path.lstrip("/")
    print(f"  building {name}: generate, migrate, import_runs (once; later runs reuse it)")
    started = time.perf_counter()
    path = OUT / f"sol-{size}-seed{options.seed}.jsonl"
    if not path.exists():
        OUT.mkdir(parents=True, exist_ok=True)
        generate(path, size, options.seed)
    with psycopg.connect(urlunsplit(urlsplit(options.server)._replace(path="/postgres")), autocommit=True) as db:
        db.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        db.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    env = app_env(url, options)
    manage(["migrate", "--noinput", "-v", "0"], env)
    manage(["import_runs", str(path)], env)
    print(f"  built {name} in {time.perf_counter() - started:,.0f} s")


def vacuum_analyze(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("VACUUM ANALYZE")


def stored_runs(url: str) -> int | None:
    try:
        with psycopg.connect(url) as db:
            row = db.execute("SELECT count(*) FROM runs_run").fetchone()
    except psycopg.Error:
        return None
    return int(row[0]) if row else None


def choose_paths(url: str, size: int, options: argparse.Namespace) -> dict[str, list[str]]:
    """Run pages drawn uniformly from every run; every group's first page plus one deeper page."""
    with psycopg.connect(url) as db:
        # md5 of the id with a seed: a uniform, repeatable draw without sorting random() values.
        run_ids = [
            row[0]
            for row in db.execute(
                "SELECT run_id FROM runs_run ORDER BY md5(run_id || %s) LIMIT %s",
                (str(options.seed), options.run_urls),
            )
        ]
    return {"run": [f"/runs/{run_id}" for run_id in run_ids], "group": group_paths(url, options)}


# Leaderboards page by keyset (runs/keyset.py): a deeper page's URL carries the signed cursor of the row
# before it, which only the app can make, so the app's own code writes them (with the servers' secret key).
GROUP_PATHS = """
import random, sys
from urllib.parse import quote
from runs.keyset import Cursor, encode
from runs.models import RANKED, ComparisonGroup, Run
from runs.selectors import latency_position
rng = random.Random(int(sys.argv[-2]))
per_page = int(sys.argv[-1])
for group in ComparisonGroup.objects.order_by("key"):
    print(f"/groups/{group.key}")
    pages = group.ranked_count // per_page  # a page drawn among those of ranked runs
    if pages > 1:
        before = (rng.randint(2, pages) - 1) * per_page - 1
        run = Run.objects.filter(RANKED, group=group).order_by("latency_ns", "run_id")[before]
        cursor = Cursor("ranked", (run.latency_ns, run.run_id), before + 1, (latency_position(run),))
        print(f"/groups/{group.key}?after={quote(encode(cursor))}")
"""


def group_paths(url: str, options: argparse.Namespace) -> list[str]:
    """Every group's first page, and for each group of more than one page of ranked runs a page drawn at random."""
    command = [sys.executable, "-c", GROUP_PATHS_MAIN, GROUP_PATHS, str(options.seed), str(PER_PAGE)]
    output = subprocess.run(command, cwd=ROOT, env=app_env(url, options), capture_output=True, text=True, check=True)
    return output.stdout.split()


GROUP_PATHS_MAIN = "import django, os, sys; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'kernelindex.settings'); "
GROUP_PATHS_MAIN += "sys.path.insert(0, os.getcwd()); django.setup(); exec(sys.argv[1])"


# -- the server ----------------------------------------------------------------------


def choose_ports(options: argparse.Namespace) -> dict[int, int]:
    """A port per size: from --port on, each refused if taken, else free ones the system hands out."""
    if options.port is None:
        return {size: free_port() for size in options.sizes}
    ports = {size: options.port + number for number, size in enumerate(options.sizes)}
    for port in ports.values():
        if port_taken(port):
            sys.exit(f"port {port} is taken: something else listens there, and would be measured instead")
    return ports


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def port_taken(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def app_env(database_url: str, options: argparse.Namespace) -> dict[str, str]:
    return os.environ | {
        "DATABASE_URL": database_url,
        "REDIS_URL": options.redis,
        # As in production: DEBUG off (no query log, compressed static files).
        "DEBUG": "false",
        "SECRET_KEY": "kernelindex-pages-benchmark",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        # wrk speaks plain HTTP on loopback, where production would sit behind TLS.
        "SECURE_SSL_REDIRECT": "false",
        "LOG_LEVEL": "WARNING",
        **({"PAGE_CACHE_SECONDS": "0"} if options.no_page_cache else {}),
    }


def manage(arguments: list[str], env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "manage.py", *arguments], cwd=ROOT, env=env, check=True)


def collect_static() -> None:
    env = os.environ | {"DEBUG": "false", "SECRET_KEY": "collectstatic", "ALLOWED_HOSTS": "localhost"}
    manage(["collectstatic", "--noinput", "-v", "0"], env)


@contextmanager
def serving(port: int, database: str, options: argparse.Namespace) -> Iterator[None]:
    """gunicorn on loopback (or, with --proxy, nginx with gunicorn behind it) for the duration of a `with` block."""
    gunicorn = Path(sys.executable).with_name("gunicorn")
    command = [str(gunicorn), "kernelindex.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", str(options.workers)]
    if options.proxy:
        command = [sys.executable, "deploy/serve.py", "--host", "127.0.0.1", "--port", str(port)]
        command += ["--workers", str(options.workers), "--var", str(OUT / f"serve-{port}")]
    with (OUT / ("serve.log" if options.proxy else "gunicorn.log")).open("a") as log:
        server = subprocess.Popen(command, cwd=ROOT, env=app_env(database, options), stdout=log, stderr=log)
        try:
            wait_until_up(server, port, log.name)
            yield
        finally:
            server.terminate()
            server.wait(timeout=30)


def wait_until_up(server: subprocess.Popen[bytes], port: int, log: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and server.poll() is None:
        try:
            if get(port, "/healthz")[0] == 200:
                return
        except OSError:
            time.sleep(0.2)
    sys.exit(f"gunicorn did not answer /healthz; see {log}")


def get(port: int, path: str, accept_encoding: str = "") -> tuple[int, float]:
    """Status and milliseconds of one GET on a fresh connection, as a new visitor makes it."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    started = time.perf_counter()
    connection.request("GET", path, headers={"Accept-Encoding": accept_encoding} if accept_encoding else {})
    response = connection.getresponse()
    response.read()
    elapsed = (time.perf_counter() - started) * 1000
    connection.close()
    return response.status, elapsed


# -- measuring -----------------------------------------------------------------------


def measure(
    ports: dict[int, int], targets: dict[int, dict[str, list[str]]], options: argparse.Namespace
) -> list[Result]:
    """A cold pass over every URL from an empty cache, then wrk rounds on the warm cache, taking turns."""
    redis.Redis.from_url(options.redis).flushdb()
    cold = {
        (size, target): cold_pass(ports[size], paths, options.accept_encoding)
        for size in ports
        for target, paths in targets[size].items()
    }
    listings = {}
    for size in ports:
        for target, paths in targets[size].items():
            listings[size, target] = OUT / f"paths-{size}-{target}.txt"
            listings[size, target].write_text("".join(path + "\n" for path in paths))
            (OUT / f"wrk-paths-{size}-{target}.txt").unlink(missing_ok=True)
    rounds: dict[tuple[int, str], list[Load]] = {pair: [] for pair in listings}
    for number in range(1, options.rounds + 1):
        for (size, target), listing in listings.items():
            rounds[size, target].append(wrk(ports[size], listing, options))
            print(f"    round {number}, {size:,} runs, {target}: {describe(rounds[size, target][-1])}")
    return [
        Result(size, target, len(targets[size][target]), median_load(rounds[size, target]), *cold[size, target])
        for size, target in listings
    ]


def cold_pass(port: int, paths: list[str], accept_encoding: str) -> tuple[float, float]:
    """p50 and p99 of each URL's first request, one at a time: the render a cache miss costs."""
    elapsed = []
    for path in paths:
        status, milliseconds = get(port, path, accept_encoding)
        if status != 200:
            sys.exit(f"GET {path}: {status}")
        elapsed.append(milliseconds)
    return percentile(elapsed, 50), percentile(elapsed, 99)


def median_load(rounds: list[Load]) -> Load:
    return Load(
        requests_per_s=statistics.median(r.requests_per_s for r in rounds),
        p50_ms=statistics.median(r.p50_ms for r in rounds),
        p99_ms=statistics.median(r.p99_ms for r in rounds),
        requests=sum(r.requests for r in rounds),
        errors="; ".join(r.errors for r in rounds if r.errors),
        load_average=statistics.median(r.load_average for r in rounds),
    )


def wrk(port: int, listing: Path, options: argparse.Namespace) -> Load:
    command = [
        "wrk",
        "-t1",
        f"-c{options.connections}",
        f"-d{options.duration}s",
        "--latency",
        *(["-H", f"Accept-Encoding: {options.accept_encoding}"] if options.accept_encoding else []),
        "-s",
        str(LUA),
        f"http://127.0.0.1:{port}",
        "--",
        str(listing),
        str(options.seed),
    ]
    load_average = os.getloadavg()[0]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    with (OUT / f"wrk-{listing.stem}.txt").open("a") as log:
        log.write(output)
    return parse_wrk(output, load_average)


def parse_wrk(output: str, load_average: float) -> Load:
    def number(pattern: str) -> str:
        found = re.search(pattern, output)
        if not found:
            sys.exit(f"wrk's output has no {pattern!r}:\n{output}")
        return found.group(1)

    errors = [line.strip() for line in output.splitlines() if "Non-2xx" in line or "Socket errors" in line]
    return Load(
        requests_per_s=float(number(r"Requests/sec:\s+([\d.]+)")),
        p50_ms=milliseconds(number(r"\s50%\s+([\d.]+\w+)")),
        p99_ms=milliseconds(number(r"\s99%\s+([\d.]+\w+)")),
        requests=int(number(r"(\d+) requests in")),
        errors="; ".join(errors),
        load_average=load_average,
    )


def milliseconds(text: str) -> float:
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()  # type: ignore[union-attr]
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}[unit]


def percentile(values: list[float], q: int) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


# -- reporting -----------------------------------------------------------------------


def describe(load: Load) -> str:
    text = (
        f"{load.requests_per_s:,.0f} req/s, p50 {load.p50_ms:.2f} ms, p99 {load.p99_ms:.2f} ms "
        f"({load.requests:,} requests; load average {load.load_average:.2f})"
    )
    return text + (f"  !! {load.errors}" if load.errors else "")


def report(results: list[Result]) -> str:
    floors = {r.size: r.load for r in results if r.target == "floor"}
    header = ["size", "page", "URLs", "req/s", "p50 ms", "p99 ms", "floor req/s", "÷ floor", "cold p50", "cold p99"]
    header.append("load")
    rows = [header]
    for r in results:
        if r.target == "floor":
            continue
        floor = floors[r.size]
        rows.append(
            [
                f"{r.size:,}",
                r.target,
                f"{r.urls:,}",
                f"{r.load.requests_per_s:,.0f}",
                f"{r.load.p50_ms:.2f}",
                f"{r.load.p99_ms:.2f}",
                f"{floor.requests_per_s:,.0f}",
                f"{r.load.requests_per_s / floor.requests_per_s:.2f}",
                f"{r.cold_p50_ms:.1f}",
                f"{r.cold_p99_ms:.1f}",
                f"{r.load.load_average:.1f}",
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)) for row in rows]
    lines += [
        "",
        "req/s, p50, p99: the median of the wrk rounds; cold: each URL's first request, one at a time, cache empty;",
        "load: the machine's 1-minute load average as the rounds started (2 cores)",
        "floor (/healthz): "
        + ", ".join(f"{s:,} runs p50 {f.p50_ms:.2f} ms, p99 {f.p99_ms:.2f} ms" for s, f in floors.items()),
    ]
    sizes = sorted(floors)
    if len(sizes) > 1:
        small, large = sizes[0], sizes[-1]
        for target in ("run", "group", "floor"):
            p50 = {r.size: r.load.p50_ms for r in results if r.target == target}
            note = " (the same view at both sizes: what noise alone gives)" if target == "floor" else ""
            lines.append(f"p50({large:,}) / p50({small:,}), {target}: {p50[large] / p50[small]:.2f}{note}")
    return "\n".join(lines)


def describe_machine(options: argparse.Namespace) -> str:
    with psycopg.connect(urlunsplit(urlsplit(options.server)._replace(path="/postgres"))) as db:
        version = db.execute("SHOW server_version").fetchone()
    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []
    cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo if "model name" in line), platform.processor())
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    wrk_version = subprocess.run(["wrk", "-v"], capture_output=True, text=True).stdout.split("\n")[0]
    redis_version = redis.Redis.from_url(options.redis).info()["redis_version"]
    return (
        f"{os.cpu_count()} cores ({cpu}), {memory:.0f} GiB RAM; Python {platform.python_version()}, "
        f"PostgreSQL {version[0] if version else '?'}, Redis {redis_version}, {wrk_version.strip()}\n"
        f"gunicorn: {options.workers} sync workers; wrk: 1 thread, "
        f"{options.connections} connections, {options.rounds} rounds of {options.duration} s per target; "
        f"page cache {'off' if options.no_page_cache else 'on'}; "
        f"Accept-Encoding: {options.accept_encoding or '(none)'}; "
        f"{'through nginx (deploy/serve.py), gunicorn on a unix socket' if options.proxy else 'gunicorn on TCP'}"
    )


if __name__ == "__main__":
    main()
