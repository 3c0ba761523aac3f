"""The ingest benchmark: `manage.py import_runs` on synthetic files of several sizes, into PostgreSQL.

    python bench/ingest/run.py --runs 100000 1000000

For each size it creates a database of its own (dropped first if it exists),
migrates it, writes the synthetic file (bench/ingest/generate.py), runs
`manage.py import_runs FILE` as a child process and reports, side by side:
the file size, wall-clock runs/s of the import, and the importer's peak
resident memory: the importer and its reader process together, sampled from
/proc every 20 ms. With --reimport it
imports the same file a second time, which must change nothing.

In the same run it measures the import's floor, what no importer of the file
can avoid: parsing every record and taking the sha256 of its canonical form
(one process), and COPY of exactly the rows the import stored into the same
tables, with the same indexes, in an empty database migrated alike
(`<database>_floor`, dropped afterwards); and prints import ÷ floor.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import FORMATS, generate

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "bench" / "out"
SERVER = "postgres://postgres@127.0.0.1:5432"
DATABASE = "kernelindex_bench"


@dataclass
class Measurement:
    runs: int
    file_bytes: int = 0
    generate_s: float = 0.0
    import_s: float = 0.0
    import_cpu_s: float = 0.0
    import_rss_kib: int = 0
    load_after: float = 0.0
    stored_runs: int = 0
    stored_documents: int = 0
    database_bytes: int = 0
    reimport_s: float | None = None
    reimport_cpu_s: float | None = None
    reimport_rss_kib: int | None = None
    # The floor (measure_floor): parsing and hashing each record, and COPY of the rows the import stored.
    floor_parse_s: float = 0.0
    floor_copy_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def floor_s(self) -> float:
        return self.floor_parse_s + self.floor_copy_s

    @property
    def runs_per_s(self) -> float:
        return self.runs / self.import_s

    @property
    def reimport_runs_per_s(self) -> float | None:
        return self.runs / self.reimport_s if self.reimport_s else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, nargs="+", default=[100_000, 1_000_000], help="file sizes, in runs")
    parser.add_argument("--format", choices=FORMATS, default="sol-execbench")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--server", default=SERVER, help="PostgreSQL server URL, without a database name")
    parser.add_argument("--database", default=DATABASE, help="created afresh for each size, then dropped")
    parser.add_argument("--reuse-files", action="store_true", help="keep an already generated file of that size")
    parser.add_argument("--keep-database", action="store_true", help="leave the last database in place")
    parser.add_argument("--reimport", action="store_true", help="import each file a second time (changes nothing)")
    options = parser.parse_args()
    if "bench" not in options.database:
        parser.error("the benchmark drops its database: give it a name with 'bench' in it")

    print(describe_machine(options.server))
    results = []
    for runs in options.runs:
        results.append(measure(runs, options))
        done = results[-1]
        print(
            f"  {runs:,} runs: {done.runs_per_s:,.0f} runs/s, peak RSS {mib(done.import_rss_kib)}; "
            f"floor {done.floor_s:,.1f} s, import ÷ floor {done.import_s / done.floor_s:.2f}"
        )
    if not options.keep_database:
        recreate_database(options.server, options.database, create=False)
    print()
    print(report(results, options.format))


def measure(runs: int, options: argparse.Namespace) -> Measurement:
    result = Measurement(runs)
    path = OUT / f"{options.format}-{runs}-seed{options.seed}.jsonl"
    started = time.perf_counter()
    if not (options.reuse_files and path.exists()):
        generate(path, runs, options.seed, options.format)
    result.generate_s = time.perf_counter() - started
    result.file_bytes = path.stat().st_size

    url = recreate_database(options.server, options.database)
    env = os.environ | {
        "DATABASE_URL": url,
        # As in production: DEBUG off, so Django does not keep a log of every query.
        "DEBUG": "false",
        "SECRET_KEY": "kernelindex-ingest-benchmark",
        "ALLOWED_HOSTS": "localhost",
    }
    run_child([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], env, OUT / "migrate.log")
    result.import_s, result.import_cpu_s, result.import_rss_kib = run_child(
        [sys.executable, "manage.py", "import_runs", str(path)], env, OUT / f"import-{runs}.log"
    )
    result.load_after = os.getloadavg()[0]
    if options.reimport:
        result.reimport_s, result.reimport_cpu_s, result.reimport_rss_kib = run_child(
            [sys.executable, "manage.py", "import_runs", str(path)], env, OUT / f"reimport-{runs}.log"
        )
    with psycopg.connect(url) as connection:
        result.stored_runs = scalar(connection, "SELECT count(*) FROM runs_run")
        result.stored_documents = scalar(connection, "SELECT count(*) FROM runs_document")
        result.database_bytes = scalar(connection, "SELECT pg_database_size(current_database())")
    result.floor_parse_s = parse_and_hash(path)
    result.floor_copy_s = copy_stored_rows(url, options, env)
    return result


# -- the floor -------------------------------------------------------------------------
# What no importer of this file can avoid: reading and parsing every record, hashing its canonical form,
# and writing the rows it stores into the same tables, with their indexes, by COPY.

# Copied untimed first (the rows the timed ones point to), then timed, in this order.
REFERENCED_TABLES = ("runs_definition", "runs_comparisongroup", "runs_importlog")
STORED_TABLES = ("runs_document", "runs_run", "runs_runversion")


def parse_and_hash(path: Path) -> float:
    """Seconds to parse every line of the file and take the sha256 of its canonical form, in one process."""
    sys.path.insert(0, str(ROOT))
    from records.canonical import digest, parse_json

    started = time.perf_counter()
    with path.open("rb") as lines:
        for line in lines:
            if line.strip():
                digest(parse_json(line))
    return time.perf_counter() - started


def copy_stored_rows(url: str, options: argparse.Namespace, env: dict[str, str]) -> float:
    """Seconds to COPY the rows the import stored into an empty, migrated database of the same schema,
    committed (with its foreign keys checked). The rows travel through files, read before the clock starts."""
    floor_name = f"{options.database}_floor"
    floor_url = recreate_database(options.server, floor_name)
    run_child(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        env | {"DATABASE_URL": floor_url},
        OUT / "migrate-floor.log",
    )
    files = {table: OUT / f"floor-{table}.copy" for table in (*REFERENCED_TABLES, *STORED_TABLES)}
    with psycopg.connect(url) as source:
        for table, file in files.items():
            with file.open("wb") as out, source.cursor().copy(f"COPY {table} TO STDOUT (FORMAT binary)") as copy:
                for chunk in copy:
                    out.write(chunk)
    data = {table: file.read_bytes() for table, file in files.items()}
    with psycopg.connect(floor_url) as target:
        for table in REFERENCED_TABLES:
            copy_into(target, table, data[table])
        # One transaction, as the import's: a group names its fastest run (its foreign key checked at commit).
        started = time.perf_counter()
        for table in STORED_TABLES:
            copy_into(target, table, data[table])
        target.commit()
        elapsed = time.perf_counter() - started
    for file in files.values():
        file.unlink()
    recreate_database(options.server, floor_name, create=False)
    return elapsed


def copy_into(connection: psycopg.Connection, table: str, data: bytes) -> None:
    with connection.cursor().copy(f"COPY {table} FROM STDIN (FORMAT binary)") as copy:
        for start in range(0, len(data), 1 << 20):
            copy.write(data[start : start + (1 << 20)])


def run_child(command: list[str], env: dict[str, str], log: Path) -> tuple[float, float, int]:
    """Wall-clock seconds, CPU seconds and peak RSS (KiB) of one child process tree; its output goes to `log`.

    The CPU time from wait4 covers the child and the processes it waited for
    (its reader); its ru_maxrss would be only the larger of the two, so the
    memory of the whole tree is sampled instead.
    """
    started = time.perf_counter()
    with log.open("w") as output:
        child = subprocess.Popen(command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT)
        sampler = TreeMemorySampler(child.pid)
        sampler.start()
        _, status, usage = os.wait4(child.pid, 0)
        sampler.stop()
    elapsed = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        sys.exit(f"{' '.join(command[1:])} failed ({child.returncode}); see {log}:\n{log.read_text()[-2000:]}")
    # ru_maxrss (KiB on Linux) is a floor the sampler may have missed between two samples.
    return elapsed, usage.ru_utime + usage.ru_stime, max(sampler.peak_kib, usage.ru_maxrss)


class TreeMemorySampler(threading.Thread):
    """The largest summed resident memory (KiB) of a process and its descendants, read from /proc."""

    INTERVAL_S = 0.02

    def __init__(self, pid: int) -> None:
        super().__init__(name="rss-sampler", daemon=True)
        self.pid = pid
        self.peak_kib = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.wait(self.INTERVAL_S):
            self.peak_kib = max(self.peak_kib, sum(map(resident_kib, self.tree())))

    def stop(self) -> None:
        self.stopping.set()
        self.join()

    def tree(self) -> list[int]:
        pids, index = [self.pid], 0
        while index < len(pids):
            pids += children_of(pids[index])
            index += 1
        return pids


def children_of(pid: int) -> list[int]:
    try:
        tasks = Path(f"/proc/{pid}/task").iterdir()
        return [int(child) for task in tasks for child in (task / "children").read_text().split()]
    except (FileNotFoundError, ProcessLookupError):
        return []  # it has just exited


def resident_kib(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return 0
    line = next((line for line in status.splitlines() if line.startswith("VmRSS:")), "VmRSS: 0 kB")
    return int(line.split()[1])


def recreate_database(server: str, name: str, *, create: bool = True) -> str:
    """Drop the benchmark database and (by default) create it empty; returns its URL."""
    parts = urlsplit(server)
    with psycopg.connect(urlunsplit(parts._replace(path="/postgres")), autocommit=True) as connection:
        connection.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        if create:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return urlunsplit(parts._replace(path=f"/{name}"))


def scalar(connection: psycopg.Connection, query: str) -> int:
    row = connection.execute(query).fetchone()  # type: ignore[arg-type]
    assert row is not None
    return int(row[0])


def describe_machine(server: str) -> str:
    parts = urlsplit(server)
    with psycopg.connect(urlunsplit(parts._replace(path="/postgres"))) as connection:
        version = connection.execute("SHOW server_version").fetchone()
    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []
    cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo if "model name" in line), platform.processor())
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{os.cpu_count()} cores ({cpu}), {memory:.0f} GiB RAM; Python {platform.python_version()}, "
        f"PostgreSQL {version[0] if version else '?'}"
    )


def report(results: list[Measurement], kind: str) -> str:
    rows: list[tuple[str, list[str]]] = [
        ("runs", [f"{r.runs:,}" for r in results]),
        (f"file ({kind})", [f"{r.file_bytes / 1e6:,.1f} MB" for r in results]),
        ("import wall time", [f"{r.import_s:,.1f} s" for r in results]),
        ("runs/s", [f"{r.runs_per_s:,.0f}" for r in results]),
        ("floor: parse and canonical sha256", [f"{r.floor_parse_s:,.1f} s" for r in results]),
        ("floor: COPY of the stored rows", [f"{r.floor_copy_s:,.1f} s" for r in results]),
        ("import ÷ floor", [f"{r.import_s / r.floor_s:,.2f}" for r in results]),
        ("importer CPU per run", [f"{r.import_cpu_s / r.runs * 1e6:,.0f} µs" for r in results]),
        ("importer peak RSS, all processes", [mib(r.import_rss_kib) for r in results]),
        ("load average (1 min) at the end", [f"{r.load_after:.1f}" for r in results]),
        ("runs stored", [f"{r.stored_runs:,}" for r in results]),
        ("documents stored", [f"{r.stored_documents:,}" for r in results]),
        ("database size", [f"{r.database_bytes / 2**20:,.0f} MiB" for r in results]),
    ]
    if any(r.reimport_s for r in results):
        rows += [
            ("re-import wall time", [f"{r.reimport_s or 0:,.1f} s" for r in results]),
            ("re-import runs/s", [f"{r.reimport_runs_per_s or 0:,.0f}" for r in results]),
            ("re-import CPU per run", [f"{(r.reimport_cpu_s or 0) / r.runs * 1e6:,.0f} µs" for r in results]),
            ("re-import peak RSS", [mib(r.reimport_rss_kib or 0) for r in results]),
        ]
    label_width = max(len(label) for label, _ in rows)
    widths = [max(len(values[i]) for _, values in rows) for i in range(len(results))]
    lines = []
    for label, values in rows:
        cells = (value.rjust(width) for value, width in zip(values, widths, strict=True))
        lines.append(label.ljust(label_width) + "".join("  " + cell for cell in cells))
    return "\n".join(lines)


def mib(kib: int) -> str:
    return f"{kib / 1024:,.0f} MiB"


if __name__ == "__main__":
    main()
