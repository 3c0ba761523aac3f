"""Serve KernelIndex in production: nginx on HOST:PORT, gunicorn behind it on a unix socket.

`make serve` runs this after `migrate` and `collectstatic`. It fills in
deploy/nginx.conf, starts gunicorn with the Python that runs this script (so
any environment works, not only ./.venv), waits for its socket, then starts
nginx. Ctrl-C or SIGTERM stops both; if either stops by itself, the other is
stopped too and this exits non-zero. Every file either writes (the socket, pid
files, nginx's temporary files) lives in `<var>/serve/`.

The environment reaches gunicorn unchanged, except TRUSTED_PROXY_HOPS, which
counts this nginx: 1 by default, 2 behind one more proxy (a TLS terminator).
"""

from __future__ import annotations

import argparse
import os
import pwd
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

BASE_DIR = Path(__file__).resolve().parent.parent
TEMPLATE = Path(__file__).resolve().parent / "nginx.conf"
NGINX_TEMP_FOLDERS = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
START_TIMEOUT = 60.0
STOP_TIMEOUT = 20.0


def main() -> int:
    options = parse_arguments()
    hops = int(os.environ.get("TRUSTED_PROXY_HOPS") or 1)
    if hops < 1:
        sys.exit("TRUSTED_PROXY_HOPS must be 1 or more here: nginx in front of the app is a proxy itself")
    run_dir = options.var / "serve"
    for folder in NGINX_TEMP_FOLDERS:
        (run_dir / folder).mkdir(parents=True, exist_ok=True)
    socket = run_dir / "gunicorn.sock"
    socket.unlink(missing_ok=True)
    config = run_dir / "nginx.conf"
    config.write_text(nginx_config(options, run_dir, socket, hops))

    stopping: list[int] = []

    def stop(signum: int, frame: FrameType | None) -> None:
        stopping.append(signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    environment = os.environ | {"TRUSTED_PROXY_HOPS": str(hops)}
    bind = ["--bind", f"unix:{socket}", "--workers", str(options.workers), "--pid", str(run_dir / "gunicorn.pid")]
    # No control socket: it would live in $HOME, shared by every site on the machine.
    bind.append("--no-control-socket")
    gunicorn = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "kernelindex.wsgi", *bind],
        cwd=BASE_DIR,
        env=environment,
    )
    children = [gunicorn]
    try:
        if wait_for(socket, gunicorn, stopping):
            children.append(subprocess.Popen([options.nginx, "-p", str(run_dir), "-c", str(config), "-e", "stderr"]))
            print(f"KernelIndex on http://{listen_address(options)}/ (Ctrl-C stops nginx and gunicorn)", flush=True)
            while not stopping and all(child.poll() is None for child in children):
                time.sleep(0.2)
    finally:
        stop_all(children)
    return 0 if stopping else 1


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--workers", type=int, default=int(os.environ.get("WEB_CONCURRENCY") or 2))
    parser.add_argument(
        "--var", type=Path, default=Path(os.environ.get("KERNELINDEX_VAR_DIR") or BASE_DIR / "var"), help="state"
    )
    parser.add_argument(
        "--static-root",
        type=Path,
        default=Path(os.environ.get("STATIC_ROOT") or BASE_DIR / "staticfiles"),
        help="collectstatic's output, served by nginx",
    )
    parser.add_argument("--nginx", default=shutil.which("nginx") or "/usr/sbin/nginx")
    options = parser.parse_args()
    options.var = options.var.resolve()
    options.static_root = options.static_root.resolve()
    return options


def listen_address(options: argparse.Namespace) -> str:
    host: str = options.host
    return f"[{host}]:{options.port}" if ":" in host else f"{host}:{options.port}"


def nginx_config(options: argparse.Namespace, run_dir: Path, socket: Path, hops: int) -> str:
    # A master started as root would hand its workers to `nobody`, who may not read the static files
    # or reach the socket: keep them as the user who started it.
    user = f"user {pwd.getpwuid(os.geteuid()).pw_name};" if os.geteuid() == 0 else ""
    values = {
        "@USER@": user,
        "@RUN_DIR@": str(run_dir),
        "@SOCKET@": str(socket),
        "@STATIC_ROOT@": str(options.static_root),
        "@LISTEN@": listen_address(options),
        "@FORWARDED_PROTO@": "$scheme" if hops == 1 else "$http_x_forwarded_proto",
    }
    text = TEMPLATE.read_text()
    for name, value in values.items():
        text = text.replace(name, value)
    return text


def wait_for(socket: Path, gunicorn: subprocess.Popen[bytes], stopping: list[int]) -> bool:
    """Whether gunicorn is listening; nginx starts only then, so its first requests find a server."""
    deadline = time.monotonic() + START_TIMEOUT
    while not socket.exists():
        if stopping or gunicorn.poll() is not None or time.monotonic() > deadline:
            if not stopping:
                print(f"gunicorn did not start listening on {socket}", file=sys.stderr)
            return False
        time.sleep(0.1)
    return True


def stop_all(children: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM to each (a fast, clean stop for both), then SIGKILL to any still there after STOP_TIMEOUT."""
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT
    for child in children:
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


if __name__ == "__main__":
    sys.exit(main())
