"""A tiny key-value shelf kept in a plain text file, one `key = value` a line.

The e2e suite runs this package's unittest suite bare and through safe_bash:
it touches what real suites touch (temporary files, a child interpreter,
the package's own data), not only arithmetic.
"""

import os
import tempfile
from importlib import resources

__all__ = ["Shelf", "parse", "dump", "defaults"]


def parse(text):
    """Return the mapping a shelf file's text holds. Blank lines and lines
    starting with '#' are skipped; the last value of a repeated key wins."""
    out = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"line {n}: want 'key = value', got {line!r}")
        out[key] = value.strip()
    return out


def dump(mapping):
    """Return the text of a shelf file holding mapping, keys sorted."""
    for key in mapping:
        if "=" in key or "\n" in key or not key.strip():
            raise ValueError(f"bad key {key!r}")
    return "".join(f"{k} = {mapping[k]}\n" for k in sorted(mapping))


def defaults():
    """The shelf shipped with the package (shelf/defaults.shelf)."""
    return parse(resources.files(__package__).joinpath("defaults.shelf").read_text(encoding="utf-8"))


class Shelf:
    """A shelf file on disk; every change is written atomically."""

    def __init__(self, path):
        self.path = path

    def load(self):
        try:
            with open(self.path, encoding="utf-8") as f:
                return parse(f.read())
        except FileNotFoundError:
            return {}

    def put(self, key, value):
        data = self.load()
        data[key] = str(value)
        self._write(data)

    def delete(self, key):
        data = self.load()
        if data.pop(key, None) is not None:
            self._write(data)

    def _write(self, data):
        folder = os.path.dirname(os.path.abspath(self.path))
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".shelf-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(dump(data))
            os.replace(tmp, self.path)
        except BaseException:
            os.unlink(tmp)
            raise
