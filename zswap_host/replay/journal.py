"""A resumable replay's record: one JSON line per finished run, keyed by what the run replayed (the
trace, the sizing), appended as each run ends — so an interrupted replay resumes where it stopped and
a finished run is never run again for the same key."""

from __future__ import annotations

import json
import os


class Journal:
    """The jsonl file at ``path`` (None: nothing kept, nothing resumed); rows carry ``key``."""

    def __init__(self, path: str | None, key: dict) -> None:
        self.path, self.key = path, key

    def done(self) -> dict[str, dict]:
        """run name -> its row, for the rows of this key (a line cut short by a crash is skipped)."""
        rows: dict[str, dict] = {}
        if self.path is None or not os.path.exists(self.path):
            return rows
        with open(self.path) as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if isinstance(r, dict) and r.get("key") == self.key and "run" in r:
                    from ..run_names import current_name

                    r["run"] = current_name(r["run"])   # a row from before a rename
                    rows[r["run"]] = r
        return rows

    def restart(self) -> None:
        """Forget every run (the file goes)."""
        if self.path is not None and os.path.exists(self.path):
            os.remove(self.path)

    def add(self, row: dict) -> dict:
        """Record a finished run; the row with its key."""
        row = {**row, "key": self.key}
        if self.path is not None:
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
            with open(self.path, "a") as f:
                f.write(json.dumps(row) + "\n")
        return row
