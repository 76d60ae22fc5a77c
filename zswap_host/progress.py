"""Progress on stderr for the long commands (``bench``, ``replay``, ``sweep``, ``characterize``): one
object per command, counting *units* (a bench run, a replayed run, a sweep point, a characterize
step). Each unit that reports its own work (iterations, pages) gets a bar of its own; an overall bar
counts the units, finished ones whole and running ones by their share done, so its ETA covers the
whole command. Bars stay on screen when done. With ``quiet`` nothing is shown; when the stream is
not a terminal there are no bars, only one line per finished unit (logs stay readable)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

# the overall bar counts units with a fractional part (running units' share): show one decimal
_OVERALL_FORMAT = ("{desc}: {percentage:3.0f}%|{bar}| {n:.1f}/{total_fmt} {unit} "
                   "[{elapsed}<{remaining}{postfix}]")


class Progress:
    """Progress of ``units`` units of work, named ``unit`` (e.g. 8 "points"), under the label ``what``;
    a unit's own work counts in ``work`` (e.g. "it", "page").

    ``update(name, done, total)`` reports a unit's own work (its bar appears at the first call);
    ``finish(name, info)`` marks a unit done (its bar reaches 100% and stays; off a terminal, one line
    ``what: name done (k/units, 12.3 s; info)``). A name seen beyond ``units`` raises the expected
    count. ``stream`` (default stderr) must have ``write``; bars only when its ``isatty()`` is true
    (``tty`` overrides); ``overall=False``: no overall bar (one unit with a bar of its own says it
    all). ``note(text)`` prints a line without breaking the bars. Use as a context
    manager, or call ``close()``: it closes every bar, leaving them on screen."""

    def __init__(self, what: str, units: int, unit: str = "runs", *, work: str = "it", quiet: bool = False,
                 stream: TextIO | None = None, tty: bool | None = None, overall: bool = True) -> None:
        if units < 0:
            raise ValueError(f"units must be >= 0, not {units}")
        self.what, self.units, self.unit, self.work, self.quiet = what, int(units), unit, work, quiet
        self.stream = stream if stream is not None else sys.stderr
        if tty is None:
            isatty = getattr(self.stream, "isatty", None)
            tty = bool(isatty and isatty())
        self.bars_on = tty and not quiet
        self._bars: dict = {}                 # name -> tqdm bar of the unit's own work
        self._share: dict[str, float] = {}    # name -> fraction done (1.0 once finished)
        self._started: dict[str, float] = {}
        self._finished: list[str] = []
        self._overall = None
        self._t0 = time.monotonic()
        if self.bars_on and overall:
            self._overall_bar()

    # -- reporting ------------------------------------------------------------------------------

    def start(self, name: str) -> None:
        """Mark unit ``name`` as begun (its wall time counts from here; no bar yet)."""
        if name not in self._started:
            self._started[name] = time.monotonic()
            self._share.setdefault(name, 0.0)
            if len(self._share) > self.units:
                self.units = len(self._share)
                if self._overall is not None:
                    self._overall.total = self.units

    def update(self, name: str, done: float, total: float, postfix: str = "") -> None:
        """Unit ``name`` has done ``done`` of its ``total`` (iterations, pages...); ``done == total``
        does not finish it (call ``finish``)."""
        self.start(name)
        if name in self._finished:
            return
        self._share[name] = min(1.0, done / total) if total else 0.0
        if self.bars_on:
            bar = self._bars.get(name)
            if bar is None:
                bar = self._bars[name] = self._bar(name, total)
            if bar.total != total:
                bar.total = total
            bar.n = done
            if postfix:
                bar.set_postfix_str(postfix, refresh=False)
            bar.refresh()
        self._refresh_overall()

    def finish(self, name: str, info: str = "") -> None:
        """Unit ``name`` is done: its bar shows 100% (and stays); the overall count moves on; off a
        terminal, one line says so (with ``info``, e.g. what it measured)."""
        began = name in self._started        # else we never saw it start (a Ray task): no wall time of its own
        self.start(name)
        if name in self._finished:
            return
        self._finished.append(name)
        self._share[name] = 1.0
        wall = time.monotonic() - self._started[name]
        bar = self._bars.get(name)
        if bar is not None:
            if bar.total:
                bar.n = bar.total
            bar.refresh()
        if self.bars_on:
            if self._overall is not None:
                self._overall.set_postfix_str(name, refresh=False)
            self._refresh_overall()
        elif not self.quiet:
            extra = f"; {info}" if info else ""
            took = f"{wall:.1f} s" if began else f"at {time.monotonic() - self._t0:.1f} s"
            self._line(f"{self.what}: {name} done ({len(self._finished)}/{self.units}, {took}{extra})")

    def note(self, text: str) -> None:
        """A line on the stream between the bars (nothing when ``quiet``)."""
        if self.quiet:
            return
        if self.bars_on:
            from tqdm import tqdm

            tqdm.write(text, file=self.stream)
        else:
            self._line(text)

    @property
    def finished(self) -> list[str]:
        """The units finished so far, in the order they finished."""
        return list(self._finished)

    def close(self) -> None:
        """Close every bar (they stay on screen); safe to call twice."""
        for bar in self._bars.values():
            bar.close()
        self._bars.clear()
        if self._overall is not None:
            self._overall.close()
            self._overall = None

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- drawing --------------------------------------------------------------------------------

    def _line(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def _overall_bar(self) -> None:
        from tqdm import tqdm

        self._overall = tqdm(total=self.units, desc=self.what, unit=self.unit, file=self.stream, leave=True,
                             dynamic_ncols=True, position=0, bar_format=_OVERALL_FORMAT, mininterval=0.2)

    def _bar(self, name: str, total: float):
        from tqdm import tqdm

        return tqdm(total=total, desc=f"  {name:22}", file=self.stream, leave=True, dynamic_ncols=True,
                    unit=self.work, position=len(self._bars) + 1, unit_scale=total >= 10_000, mininterval=0.2)

    def _refresh_overall(self) -> None:
        if self._overall is None:
            return
        self._overall.n = round(sum(self._share.values()), 3)
        self._overall.refresh()
