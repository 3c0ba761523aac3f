"""The site's cache holds JSON, never a pickle: a value whoever reaches the cache planted is data to it.

Django's cache backends pickle what they store, and unpickling runs code the
pickle names. Anyone who can write to the cache (on Redis, anyone with its
password) could then run code in the web tier, which holds the database and
the site's secrets. So every backend the site uses stores JSON:

- `JsonSerializer`, the `serializer` option of the Redis backend
  (web/redis_cache.py). Integers stay raw, as Django's own serializer keeps
  them, so `incr` stays one atomic INCR.
- `JsonFileBasedCache`, the file cache of a laptop setup, in place of Django's
  FileBasedCache, which pickles each file's expiry and value.

A value JSON cannot carry is refused when it is stored (TypeError), so a caller
learns at once, not when a pickle would have been needed to read it. JSON has
lists, not tuples, and string keys only: a tuple comes back a list. A stored
value that is not JSON (a pickle, say) is a miss when it is read, never an
exception and never unpickled (UnreadableValueError between the two layers).
"""

from __future__ import annotations

import json
import time
import zlib
from typing import IO, Any

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.filebased import FileBasedCache
from django.core.files import locks


class UnreadableValueError(ValueError):
    """A stored value that is not JSON: the backend answers it as a miss."""


def json_bytes(value: Any) -> bytes:
    """`value` as JSON; TypeError, naming its type, for anything JSON does not carry (NaN and infinities too)."""
    try:
        return json.dumps(value, separators=(",", ":"), allow_nan=False).encode()
    except (TypeError, ValueError) as error:
        raise TypeError(f"the cache stores JSON only, not {type(value).__name__}: {error}") from None


def read_json(data: bytes) -> Any:
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError):  # JSONDecodeError is a ValueError
        raise UnreadableValueError("not JSON") from None


class JsonSerializer:
    """Django's RedisSerializer without pickle: an int as Redis keeps it, anything else JSON."""

    def dumps(self, value: Any) -> int | bytes:
        # type(), not isinstance(): a bool is JSON, as Django's serializer leaves it to pickle.
        return value if type(value) is int else json_bytes(value)

    def loads(self, data: bytes) -> Any:
        try:
            return int(data)
        except ValueError:
            return read_json(data)


class JsonFileBasedCache(FileBasedCache):
    """Django's file cache with each file written as a JSON expiry on the first line, then the value as
    zlib-compressed JSON. A file that does not read so (one Django's backend wrote, say) is expired."""

    def _file(self, key: str, version: int | None) -> str:
        path: str = self._key_to_file(key, version)  # type: ignore[attr-defined]  # Django's, untyped
        return path

    def get(self, key: str, default: Any = None, version: int | None = None) -> Any:
        try:
            with open(self._file(key, version), "rb") as f:
                if not self._is_expired(f):
                    return read_json(zlib.decompress(f.read()))
        except FileNotFoundError:
            pass
        except (UnreadableValueError, zlib.error):
            self.delete(key, version)
        return default

    def _write_content(self, file: IO[bytes], timeout: float | None, value: Any) -> None:
        content = zlib.compress(json_bytes(value))  # refused before anything is written
        file.write(json_bytes(self.get_backend_timeout(timeout)) + b"\n")
        file.write(content)

    def touch(self, key: str, timeout: float | None = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        try:
            with open(self._file(key, version), "r+b") as f:
                locks.lock(f, locks.LOCK_EX)
                try:
                    if self._is_expired(f):
                        return False
                    value = read_json(zlib.decompress(f.read()))
                    f.seek(0)
                    f.truncate()
                    self._write_content(f, timeout, value)
                    return True
                finally:
                    locks.unlock(f)
        except (FileNotFoundError, UnreadableValueError, zlib.error):
            return False

    def incr(self, key: str, delta: int = 1, version: int | None = None) -> int:
        if type(self.get(key, version=version)) is not int:
            raise ValueError(f"Key '{key}' holds no integer.")  # as a missing key: the caller starts it again
        new_value: int = super().incr(key, delta, version)
        return new_value

    def _is_expired(self, f: IO[bytes]) -> bool:
        try:
            expiry = read_json(f.readline())
        except UnreadableValueError:
            expiry = 0
        if expiry is not None and (type(expiry) not in (int, float) or expiry < time.time()):
            f.close()
            self._delete(f.name)  # type: ignore[attr-defined]  # Django's private helper, untyped
            return True
        return False
