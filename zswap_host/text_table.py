"""Aligned plain-text tables for the terminal: a header and rows of already formatted cells, the first
columns (labels) left-aligned and the rest (numbers) right-aligned, two spaces between columns."""

from __future__ import annotations


def aligned(header: list[str], rows: list[list[str]], labels: int = 1, rule: bool = True) -> list[str]:
    """The table's lines: ``header``, a rule of dashes (``rule``), then ``rows``. The first
    ``labels`` columns are left-aligned, the others right-aligned; every line has the same column
    starts. ``ValueError`` for a row whose length differs from the header's."""
    for r in rows:
        if len(r) != len(header):
            raise ValueError(f"a row has {len(r)} cells, the header {len(header)}: {r!r}")
    width = [max(len(c) for c in col) for col in zip(header, *rows)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i < labels else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, width))).rstrip()

    out = [line(header)]
    if rule:
        out.append("-" * sum(width) + "-" * 2 * (len(width) - 1))
    return out + [line(r) for r in rows]
