"""Who may do what on the Redis broker: one Redis user per role, and the transport options that keep the
keys each role touches exact. The ACL file (deploy/README.md), CI (.ci/run), the site's settings, the rerun
worker (harness/parent/worker.py) and the tests all take them from here.

Redis holds the web tier's cache beside the queues, and a GPU host is given a
credential for it. So each role has its own user, scoped to what it must touch:

- The web tier (WEB_USER): every key and channel (cache, queues, Celery's
  remote control), and nothing of the server's administration (`-@admin`:
  no ACL, CONFIG, DEBUG, MODULE, MONITOR, SHUTDOWN).
- A rerun worker of class C (worker_user(C)): only the commands in
  WORKER_COMMANDS, and only these keys (worker_key_rules):
  its own queue `reruns.C` (BRPOP takes a job; LLEN when Celery declares the
  queue; LPUSH puts back, at shutdown, a job it took and did not finish);
  the two binding tables of that queue, write-only (the SADDs of that
  declaration); and the results queue, write-only (`%W~kernelindex.results`:
  LPUSH is allowed, LRANGE and RPOP are refused). No pub/sub channel, no script,
  no key of the cache or of another class.

What kombu's Redis transport touches, as read in kombu.transport.redis and
watched with MONITOR, and the options that narrow it to those keys:

- A queue is four keys by default: the queue and its priority sub-queues
  `<queue>\\x06\\x16{3,6,9}`, all of which a consumer BRPOPs. `priority_steps:
  [0]` (SHARED_TRANSPORT_OPTIONS, on both sides, so they route to the same key)
  makes every priority the queue itself.
- Ack emulation keeps every consumer's unacknowledged messages in hashes all
  consumers share (`unacked`, `unacked_index`), and restores them under a lock
  whose release is a Lua script (EVALSHA). A worker runs without it
  (WORKER_TRANSPORT_OPTIONS): it needs no such restore, because the site's sweep
  sends a job again when the worker that took it goes silent
  (verification.reruns.sweep_reruns), while a restore an hour later would run it twice.
- A worker sends with declare=[] (harness.worker.sender): declaring the results
  queue would SADD to its binding tables and LLEN it; the site declares it.
- Celery's remote control (a pidbox queue per worker, bound with a Lua script,
  and PSUBSCRIBE to a broadcast channel) is off in a rerun worker, as are
  gossip, mingle and heartbeats (their events are pub/sub too).
- redis-py sends HELLO (RESP3) with the credentials on connecting, SELECT where
  the URL names a database other than 0, and MULTI/EXEC around pipelines; it
  tries CLIENT SETINFO and goes on when that is refused. Celery PINGs.

Redis checks a key pattern against a key in any database, so one user covers
every database number its URL may name. A password is stored as its SHA-256
(`#<hex>`), never as given.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from records.hardware import HARDWARE_CLASSES, hardware_class_named, queue_of
from records.worker_protocol import RESULTS_QUEUE

WEB_USER = "kernelindex-web"
WORKER_USER_PREFIX = "kernelindex-worker-"
# Both sides route with these, or a message goes to a key the other never reads.
SHARED_TRANSPORT_OPTIONS: dict[str, object] = {"priority_steps": [0]}
WORKER_TRANSPORT_OPTIONS: dict[str, object] = {**SHARED_TRANSPORT_OPTIONS, "ack_emulation": False}
# Everything a rerun worker sends (see the module's docstring); anything else is refused with NOPERM.
WORKER_COMMANDS = ("hello", "ping", "select", "multi", "exec", "brpop", "llen", "lpush", "sadd")
WEB_RULES = ("~*", "&*", "+@all", "-@admin")
GLOB_SPECIAL = "*?[]\\"
# The binding tables kombu keeps per exchange (kombu.transport.redis.Channel: keyprefix_queue,
# keyprefix_binding_permanent); a queue Celery makes for a name has an exchange of that name.
BINDING_TABLES = ("_kombu.binding.%s", "_kombu.binding_permanent.%s")


def password_hash(password: str) -> str:
    """The password as an ACL rule keeps it: `#` and its SHA-256, so no file holds the password itself."""
    return "#" + hashlib.sha256(password.encode()).hexdigest()


def exact(key: str) -> str:
    """A key pattern that matches this key alone (Redis key patterns are globs)."""
    return "".join(f"\\{char}" if char in GLOB_SPECIAL else char for char in key)


def worker_user(hardware: str) -> str:
    """The Redis user of a class's rerun workers; every worker of the class shares it."""
    return WORKER_USER_PREFIX + hardware_class_named(hardware).name


def worker_key_rules(hardware: str) -> tuple[str, ...]:
    """The keys a rerun worker of this class may touch, and how (`%W~`: write only)."""
    queue = queue_of(hardware_class_named(hardware).name)
    tables = (f"%W~{exact(table % queue)}" for table in BINDING_TABLES)
    return (f"~{exact(queue)}", *tables, f"%W~{exact(RESULTS_QUEUE)}")


def acl_rules(user: str, password: str, rules: Iterable[str]) -> list[str]:
    """A user's whole definition: `reset` first, so the same rules give the same user whether they are loaded
    from a file or applied with ACL SETUSER over an older one."""
    if not password:
        raise ValueError(f"{user}: an empty password")
    return [user, "reset", "on", password_hash(password), "resetchannels", *rules]


def web_acl(password: str) -> list[str]:
    return acl_rules(WEB_USER, password, WEB_RULES)


def worker_acl(hardware: str, password: str) -> list[str]:
    commands = ("-@all", *(f"+{command}" for command in WORKER_COMMANDS))
    return acl_rules(worker_user(hardware), password, (*commands, *worker_key_rules(hardware)))


def acl_users(web_password: str, worker_passwords: Mapping[str, str]) -> list[list[str]]:
    """The web tier's user and one user per class named, each as a user's name and rules."""
    return [web_acl(web_password), *(worker_acl(name, password) for name, password in worker_passwords.items())]


def acl_file(web_password: str, worker_passwords: Mapping[str, str], *, default_user_off: bool = True) -> str:
    """An ACL file (`aclfile` in redis.conf). Redis gives a `default` user no file names every key and command
    with no password, so the file turns it off unless told to leave it alone."""
    lines = [["default", "off"]] if default_user_off else []
    lines += acl_users(web_password, worker_passwords)
    return "".join("user " + " ".join(line) + "\n" for line in lines)


def setuser_commands(web_password: str, worker_passwords: Mapping[str, str]) -> str:
    """The same users as ACL SETUSER commands, one a line, for `redis-cli` on a running server."""
    return "".join("ACL SETUSER " + " ".join(line) + "\n" for line in acl_users(web_password, worker_passwords))


def user_url(user: str, password: str, host: str, port: int, db: int = 0, *, scheme: str = "redis") -> str:
    """A broker or cache URL that carries a user; the password must be URL-safe (secrets.token_hex is)."""
    return f"{scheme}://{user}:{password}@{host}:{port}/{db}"


# -- python -m records.broker ------------------------------------------------------------------------


def read_password(path: Path) -> str:
    password = path.read_text().strip()
    if not password:
        raise SystemExit(f"{path}: empty")
    return password


def worker_password(argument: str) -> tuple[str, str]:
    """`CLASS:PASSWORD_FILE`: a registered class and its workers' password."""
    name, separator, path = argument.partition(":")
    if not separator:
        raise argparse.ArgumentTypeError(f"{argument!r}: CLASS:PASSWORD_FILE")
    try:
        named = hardware_class_named(name).name
    except ValueError as unknown:
        raise argparse.ArgumentTypeError(str(unknown)) from None
    return named, read_password(Path(path))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m records.broker", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    acl = commands.add_parser("acl", help="the Redis users of the web tier and of each class's rerun workers")
    acl.add_argument("--web-password-file", type=Path, required=True)
    acl.add_argument(
        "--worker",
        type=worker_password,
        action="append",
        default=[],
        metavar="CLASS:PASSWORD_FILE",
        help=f"a class's workers (one of {', '.join(c.name for c in HARDWARE_CLASSES)}); repeat for each class",
    )
    acl.add_argument("--setuser", action="store_true", help="ACL SETUSER commands for redis-cli, not an ACL file")
    acl.add_argument("--keep-default-user", action="store_true", help="leave the `default` user as it is")
    acl.add_argument("--output", "-o", type=Path, help="write here (mode 0600) instead of to the standard output")
    options = parser.parse_args(argv)
    web, workers = read_password(options.web_password_file), dict(options.worker)
    if options.setuser:
        text = setuser_commands(web, workers)
    else:
        text = acl_file(web, workers, default_user_off=not options.keep_default_user)
    if options.output is None:
        sys.stdout.write(text)
        return
    options.output.touch(mode=0o600)
    options.output.chmod(0o600)  # before the passwords' hashes are in it
    options.output.write_text(text)


if __name__ == "__main__":
    main()
