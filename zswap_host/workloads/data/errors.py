"""The error a data file raises when it cannot be read as asked."""

from __future__ import annotations

from ...errors import ZswapError


class DataFormatError(ZswapError, ValueError):
    """A data file that cannot be read as asked: missing, of an unknown or wrong format, empty, or
    holding a malformed line (text) or sample (.npz). ``path`` names the file and ``line`` the 1-based
    line (text) or sample row (.npz) at fault, when there is one; the message starts with
    ``path:line:`` then."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None) -> None:
        where = f"{path}:{line}: " if path is not None and line is not None else (f"{path}: " if path else "")
        super().__init__(where + message)
        self.path = path
        self.line = line
        self.reason = message

    def __reduce__(self):       # a bench run in a worker process hands it back pickled
        return (type(self), (self.reason, self.path, self.line))
