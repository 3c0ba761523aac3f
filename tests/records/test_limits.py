"""Limits on what an import reads: size, nesting, strings, NUL; each refused with file, line and field."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path

import pytest

from records import limits
from records.errors import RecordError
from records.sources.base import iter_json_lines, read_json_file


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def lines_of(path: Path) -> list[tuple[int, object]]:
    return list(iter_json_lines(path))


def test_a_line_over_the_limit_is_refused_before_it_has_been_read_whole(tmp_path: Path) -> None:
    """The line arrives through a pipe whose writer finishes it only once the reader has given up."""
    path = tmp_path / "huge.jsonl"
    os.mkfifo(path)
    gave_up = threading.Event()

    def write() -> None:
        with contextlib.suppress(BrokenPipeError), path.open("wb") as pipe:  # once the reader has closed its end
            pipe.write(b'{"id": 1}\n{"title": "' + b"x" * limits.MAX_LINE_BYTES)
            pipe.flush()
            gave_up.wait(timeout=60)
            pipe.write(b'"}\n')

    writer = threading.Thread(target=write)
    writer.start()
    try:
        with pytest.raises(RecordError) as raised:
            lines_of(path)
        assert not gave_up.is_set()  # refused with the line still unfinished
    finally:
        gave_up.set()
        writer.join()
    assert (raised.value.path, raised.value.line) == (str(path), 2)
    assert f"longer than {limits.MAX_LINE_BYTES} bytes" in str(raised.value)


def test_a_line_just_under_the_limit_is_read(tmp_path: Path) -> None:
    strings = ["x" * limits.MAX_STRING_CHARS] * 3
    line = json.dumps({"cases": strings, "title": ""})
    path = tmp_path / "big.jsonl"
    path.write_text(line[:-2] + "y" * (limits.MAX_LINE_BYTES - len(line)) + '"}\n')
    [(_, value)] = lines_of(path)
    assert isinstance(value, dict) and value["cases"] == strings


def test_a_document_over_the_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    with path.open("wb") as handle:
        handle.write(b'{"title": "')
        handle.truncate(limits.MAX_DOCUMENT_BYTES + 10)  # a sparse file: size without the writing
    with pytest.raises(RecordError, match=f"larger than {limits.MAX_DOCUMENT_BYTES} bytes") as raised:
        read_json_file(path)
    assert raised.value.line is None


@pytest.mark.parametrize("depth", [limits.MAX_DEPTH + 1, 500, 200_000])
def test_deep_nesting_is_refused_not_a_traceback(tmp_path: Path, depth: int) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text('{"ok": 1}\n' + '{"spec": ' + nested(depth - 1) + "}\n")
    with pytest.raises(RecordError, match=f"nested deeper than {limits.MAX_DEPTH} levels") as raised:
        lines_of(path)
    assert raised.value.line == 2
    if depth < 1000:
        assert raised.value.field is not None and raised.value.field.startswith("spec.0.0.")


def test_nesting_at_the_limit_is_read(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text(nested(limits.MAX_DEPTH))
    assert read_json_file(path) is not None


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ({"metadata": {"title": "softmax\u0000"}}, "metadata.title"),
        ({"metadata": {"labels": {"a\u0000b": "x"}}}, "metadata.labels.a\\u0000b"),
        ({"spec": {"cases": ["ok", "\u0000"]}}, "spec.cases.1"),
    ],
)
def test_a_nul_character_is_refused_naming_the_field(tmp_path: Path, document: object, field: str) -> None:
    path = tmp_path / "nul.json"
    path.write_text(json.dumps(document))
    with pytest.raises(RecordError, match="NUL character") as raised:
        read_json_file(path)
    assert raised.value.field == field


def test_the_text_backslash_u0000_is_not_a_nul(tmp_path: Path) -> None:
    path = tmp_path / "escaped.json"
    path.write_text(json.dumps({"title": "\\u0000"}))
    assert read_json_file(path) == {"title": "\\u0000"}


def test_a_string_over_the_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "long.json"
    path.write_text(json.dumps({"spec": {"description": "é" * (limits.MAX_STRING_CHARS + 1)}}))
    with pytest.raises(RecordError, match=f"the limit is {limits.MAX_STRING_CHARS}") as raised:
        read_json_file(path)
    assert raised.value.field == "spec.description"
