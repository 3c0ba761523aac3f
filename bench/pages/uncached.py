"""Uncached page times, in process: each page rendered by Django's own handler, no cache, no network.

    DATABASE_URL=postgres://.../kernelindex_pages_bench_1000000 python bench/pages/uncached.py
    python bench/pages/uncached.py --database kernelindex_pages_bench_1000000 --explain

For the pages issue #16 names: search for a definition name, an implementation
name, a full run id, an id prefix, a word not present and a single letter; the
home page; a deep page of the largest leaderboard; the largest definition's
page; cold run pages (drawn at random), then the same pages rendered again
(their document fragments cached, as after a write retired the pages: set
REDIS_URL to measure with the production cache rather than the file cache). Each URL is requested `--repeat` times
(the page cache off: PAGE_CACHE_SECONDS=0) and the median is reported, with the
machine's load average beside it; then as many times again with Django's query
log on, for the median of the time its queries took (what grows with the data,
where the rest is rendering). `--explain` prints PostgreSQL's plan of every
query of the search pages (EXPLAIN ANALYZE), to show which indexes they use.

    python bench/pages/uncached.py --database kernelindex_search_bench_1000000 --fresh 1000000

`--fresh N` first drops the database and imports N generated runs into it (bench/pages/run.py's build), then
measures right after the import (the importer's own ANALYZE, nothing else), runs VACUUM ANALYZE and measures
again. Each report starts with a reference figure for the machine's speed (a fixed loop of pure Python, best
of 5), so that figures taken on different machines can be set side by side.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[2]
SERVER = "postgres://postgres@127.0.0.1:5432"
REDIS_URL = "redis://127.0.0.1:6379/3"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database", default="kernelindex_pages_bench_1000000", help="the database to read")
    parser.add_argument("--server", default=SERVER, help="PostgreSQL server URL, without a database name")
    parser.add_argument("--repeat", type=int, default=21, help="requests per URL (the median is reported)")
    parser.add_argument("--runs", type=int, default=200, help="cold run pages, each requested once")
    parser.add_argument("--explain", action="store_true", help="print the plans of the search pages' queries")
    parser.add_argument("--only", default="", help="measure only the URLs whose name contains this")
    parser.add_argument(
        "--fresh", type=int, metavar="N", help="import N runs into a new database first; measure, VACUUM, measure"
    )
    options = parser.parse_args()
    url = urlunsplit(urlsplit(options.server)._replace(path=f"/{options.database}"))
    if options.fresh:
        build_fresh(url, options)
    os.environ["DATABASE_URL"] = url
    os.environ.update(
        {"PAGE_CACHE_SECONDS": "0", "DEBUG": "false", "SECRET_KEY": "bench", "ALLOWED_HOSTS": "testserver"}
    )
    os.environ.setdefault("SECURE_SSL_REDIRECT", "false")
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kernelindex.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    call_command("collectstatic", interactive=False, verbosity=0)  # DEBUG off: pages name hashed static files

    print(f"CPU reference: {cpu_reference():.1f} ms (a million squares summed in Python, best of 5)")
    if options.fresh:
        print("\nRight after the import (nothing run after it but what import_runs does itself):")
        measure(Client(), options, draw="cold-fresh")
        run_page_module().vacuum_analyze(url)
        print("\nAfter VACUUM ANALYZE:")
    measure(Client(), options, draw="cold")


def measure(client: object, options: argparse.Namespace, draw: str) -> None:
    """Each page's median; then cold run pages, drawn afresh by `draw` (their fragments not yet cached)."""
    targets = [(name, url) for name, url in named_urls() if options.only in name]
    print(f"{options.database}: {runs_stored():,} runs; load average at start {load()}")
    for name, url in targets:
        times = [timed(client, url) for _ in range(options.repeat)]
        sql = [sql_time(client, url) for _ in range(options.repeat)]
        print(
            f"  {name:<34} p50 {statistics.median(times):6.1f} ms (min {min(times):5.1f}), "
            f"its queries {statistics.median(sql):5.1f} ms  load {load()}  {url[:60]}"
        )
    cold_urls = random_run_urls(options.runs, draw)
    cold = [timed(client, url) for url in cold_urls[: len(cold_urls) // 2]]
    cold_sql = [sql_time(client, url) for url in cold_urls[len(cold_urls) // 2 :]]
    print(
        f"  {'run page, cold (each once)':<34} p50 {statistics.median(cold):6.1f} ms, "
        f"its queries {statistics.median(cold_sql):5.1f} ms  load {load()}"
    )
    # The same pages rendered again, as after a write retired them: their document fragments are cached.
    again = [timed(client, url) for url in cold_urls[: len(cold_urls) // 2]]
    print(f"  {'run page, rendered again':<34} p50 {statistics.median(again):6.1f} ms  load {load()}")
    if options.explain:
        for name, url in targets:
            if url.startswith("/?q="):
                explain(client, name, url)


def run_page_module() -> Any:
    """bench/pages/run.py, whose build of a database this benchmark shares."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import run

    return run


def build_fresh(url: str, options: argparse.Namespace) -> None:
    built = argparse.Namespace(
        server=options.server, seed=1, redis=os.environ.get("REDIS_URL", REDIS_URL), no_page_cache=True
    )
    run_page_module().build_database(url, options.fresh, built)


def cpu_reference() -> float:
    """Milliseconds for a fixed piece of pure Python, the best of 5: how fast this machine runs the rest."""
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        sum(i * i for i in range(1_000_000))
        best = min(best, (time.perf_counter() - started) * 1000)
    return best


def named_urls() -> list[tuple[str, str]]:
    from runs.models import ComparisonGroup, Definition, Run
    from runs.selectors import leaderboard

    largest = ComparisonGroup.objects.order_by("-run_count").select_related("definition").first()
    assert largest is not None
    assert largest.definition is not None
    run = Run.objects.filter(group=largest).order_by("run_id").first()
    assert run is not None
    # A deep page: follow the cursors 40 pages in (2,000 runs down).
    after = None
    for _ in range(40):
        after = leaderboard(largest, False, after, 50).next_cursor
    definition = Definition.objects.get(pk=largest.definition_id)
    return [
        ("search: definition name", f"/?q={definition.name}"),
        ("search: implementation name", f"/?q={run.implementation_name.replace(' ', '+')}"),
        ("search: full run id", f"/?q={run.run_id}"),
        ("search: id prefix", f"/?q={run.run_id[:5]}"),
        ("search: a word not present", "/?q=zebrafish"),
        ("search: a single letter", "/?q=a"),
        ("home, page 1", "/"),
        (f"leaderboard page 41 ({largest.run_count:,} runs)", f"{largest.get_absolute_url()}?after={after}"),
        ("leaderboard page 1", largest.get_absolute_url()),
        ("largest definition's page", definition.get_absolute_url()),
    ]


def random_run_urls(count: int, draw: str) -> list[str]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT run_id FROM runs_run ORDER BY md5(run_id || %s) LIMIT %s", [draw, count])
        return [f"/runs/{row[0]}" for row in cursor.fetchall()]


def runs_stored() -> int:
    from django.db.models import Sum

    from runs.models import ComparisonGroup

    return ComparisonGroup.objects.aggregate(total=Sum("run_count"))["total"] or 0


def timed(client: object, url: str) -> float:
    started = time.perf_counter()
    response = client.get(url)  # type: ignore[attr-defined]
    elapsed = (time.perf_counter() - started) * 1000
    if response.status_code not in (200, 410):
        sys.exit(f"GET {url}: {response.status_code}")
    return elapsed


def sql_time(client: object, url: str) -> float:
    """Milliseconds the page's queries took, as Django's query log times them (the page is rendered too)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        client.get(url)  # type: ignore[attr-defined]
    return sum(float(query["time"]) for query in captured.captured_queries) * 1000


def explain(client: object, name: str, url: str) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        client.get(url)  # type: ignore[attr-defined]
    print(f"\n== {name}: {url}")
    with connection.cursor() as cursor:
        for query in captured.captured_queries:
            sql = query["sql"]
            if "runs_run" not in sql or sql.lstrip().startswith(("SAVEPOINT", "RELEASE")):
                continue
            cursor.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) " + sql)
            plan = [row[0] for row in cursor.fetchall()]
            print("  " + sql[:160] + ("…" if len(sql) > 160 else ""))
            for line in plan:
                if "Scan" in line or "Execution Time" in line or "Index Cond" in line:
                    print("      " + line.strip())


def load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


if __name__ == "__main__":
    main()
