"""Reading an import unit in a process of its own, for the importer in another.

Reading a large file (parsing, validating, canonicalising, hashing) costs about
as much CPU as writing it, and a reader thread shares the writer's interpreter
lock, so the two halves add up. A reader process runs beside the writer on a
core of its own instead. It sends only what the writer needs, each run's
`RunSummary`, a chunk of runs per message: unpickling the adapters' RunItem
dataclasses, with their parsed documents, cost the writer about as much as the
reading it saved. A summary even travels as a bare tuple, since pickling a
NamedTuple calls back into Python for every run on both sides.

The reader never touches a database. It is started with "spawn": a forked
copy of a process that holds a database connection would share its socket.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import queue
import threading
import traceback
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from records.errors import RecordError
from records.manifest import RunItem
from records.sources import ImportUnit
from records.sources.base import Item, Progress
from records.summary import RunSummary, summarize

ReadItem = RunSummary | Item
CHUNK = 1000
# Chunks the reader may hold ready while the writer is busy writing a batch.
CHUNKS_AHEAD = 4
# How long a reader asked to stop may take before it is killed.
STOP_TIMEOUT = 5.0


class ReaderError(RuntimeError):
    """An unexpected error in the reader process that could not be sent as itself."""


def summarized(items: Iterable[Item]) -> Iterator[ReadItem]:
    """The adapter's items with each run reduced to its RunSummary."""
    for item in items:
        yield summarize(item) if isinstance(item, RunItem) else item


@contextmanager
def read_in_process(unit: ImportUnit, progress: Progress = None) -> Iterator[Iterator[ReadItem]]:
    """The unit's items, read and summarized in a child process, in file order.

    The first error the reader meets is raised here after the items before it,
    as it would be raised by the adapter itself. A reader that dies without a
    word (killed, out of memory) closes its end of the pipe, which is raised
    as a ReaderError rather than waited on. Leaving the block stops the reader.
    """
    context = multiprocessing.get_context("spawn")
    receiving, sending = context.Pipe(duplex=False)
    process = context.Process(
        target=_read_and_send, args=(unit, sending), name=f"import-reader {unit.path.name}", daemon=True
    )
    try:
        process.start()
    finally:
        # Only the child holds the sending end now, so its exit, however it happens, ends the pipe.
        sending.close()
    stream = _Stream(receiving, process, progress)
    try:
        yield iter(stream)
    finally:
        receiving.close()
        _stop(process, stream.last_word_received)


class _Stream:
    """The reader's messages as items; progress is reported as the chunks arrive."""

    def __init__(self, connection: Connection, process: BaseProcess, progress: Progress) -> None:
        self.connection = connection
        self.process = process
        self.progress = progress
        self.reported = 0
        self.last_word_received = False

    def __iter__(self) -> Iterator[ReadItem]:
        while True:
            kind, payload, read_bytes = self._next_message()
            if self.progress and read_bytes > self.reported:
                self.progress(read_bytes - self.reported)
                self.reported = read_bytes
            if kind == "items":
                yield from map(_from_wire, payload)
                continue
            self.last_word_received = True
            if kind == "error":
                raise payload
            return

    def _next_message(self) -> tuple[str, Any, int]:
        try:
            message: tuple[str, Any, int] = pickle.loads(self.connection.recv_bytes())
        except EOFError:
            self.process.join(STOP_TIMEOUT)
            code = self.process.exitcode
            raise ReaderError(f"the reader process stopped before the end of the file (exit code {code})") from None
        return message


def _stop(process: BaseProcess, finished: bool) -> None:
    """A reader that has said its last word exits by itself; one still reading is no longer needed."""
    if finished:
        process.join(STOP_TIMEOUT)
    if process.exitcode is None:
        process.terminate()
        process.join(STOP_TIMEOUT)
    if process.exitcode is None:
        process.kill()
        process.join()


# -- in the reader process -----------------------------------------------------


def _read_and_send(unit: ImportUnit, connection: Connection) -> None:
    """Read the unit and send it in chunks; a thread sends while this one reads on."""
    outbox: queue.Queue[bytes | None] = queue.Queue(maxsize=CHUNKS_AHEAD)
    sender = threading.Thread(target=_send_all, args=(outbox, connection), name="import-sender", daemon=True)
    sender.start()
    read_bytes = 0

    def count(size: int) -> None:
        nonlocal read_bytes
        read_bytes += size

    chunk: list[Any] = []
    try:
        for item in summarized(unit.adapter.read(unit.path, count)):
            chunk.append(_to_wire(item))
            if len(chunk) >= CHUNK:
                outbox.put(_message("items", chunk, read_bytes))
                chunk = []
        outbox.put(_message("items", chunk, read_bytes))
        outbox.put(_message("done", None, read_bytes))
    except BaseException as error:  # sent to the importer, which raises it after the items before it
        outbox.put(_message("items", chunk, read_bytes))
        outbox.put(_message("error", _sendable(error), read_bytes))
    outbox.put(None)
    sender.join()


def _send_all(outbox: queue.Queue[bytes | None], connection: Connection) -> None:
    try:
        while (message := outbox.get()) is not None:
            connection.send_bytes(message)
    except OSError:
        # The importer has gone, perhaps killed before it could stop this process. Nothing
        # here is worth finishing, and the reading thread may be waiting for room in the outbox.
        os._exit(1)
    connection.close()


def _to_wire(item: ReadItem) -> Any:
    # The other items are dataclasses, never bare tuples, so _from_wire can tell them apart.
    return tuple(item) if isinstance(item, RunSummary) else item


def _from_wire(entry: Any) -> ReadItem:
    return _new_tuple(RunSummary, entry) if type(entry) is tuple else entry


_new_tuple = tuple.__new__


def _message(kind: str, payload: Any, read_bytes: int) -> bytes:
    return pickle.dumps((kind, payload, read_bytes), protocol=pickle.HIGHEST_PROTOCOL)


def _sendable(error: BaseException) -> BaseException:
    """The error itself where it survives pickling, else a ReaderError; unexpected ones with the reader's traceback."""
    if isinstance(error, RecordError):
        return error  # says what is wrong in the file; the reader's stack adds nothing
    remote = "".join(traceback.format_exception(error))
    try:
        sendable: BaseException = pickle.loads(pickle.dumps(error))
    except Exception:
        sendable = ReaderError(f"{type(error).__name__}: {error}")
    sendable.add_note(f"in the reader process:\n{remote}")
    return sendable
