"""Old option names that still work: a command renames an option (``--utilisations`` became
``--utilisation``, the training preset ``--preset`` became ``--model`` in ``sweep`` and ``replay``)
and keeps accepting the old spelling, rewritten to the new one before click parses the command line,
with one line on stderr saying what to write instead. The old names stay out of ``--help``."""

from __future__ import annotations

import click


def rename_args(args: list[str], renamed: dict[str, str]) -> tuple[list[str], list[str]]:
    """``args`` with every old option name in ``renamed`` (old -> new) replaced, also in the
    ``--old=value`` form, up to a ``--`` (after it nothing is an option); and the old names met, in
    order, each once."""
    out, met = [], []
    for i, a in enumerate(args):
        if a == "--":
            out += args[i:]
            break
        name, eq, value = a.partition("=")
        if name in renamed:
            out.append(renamed[name] + eq + value)
            if name not in met:
                met.append(name)
        else:
            out.append(a)
    return out, met


class RenamedOptions(click.Command):
    """A ``click.Command`` that takes ``renamed={"--old": "--new", ...}``: an old name given is used as
    the new one, and stderr gets ``zswap-host CMD: --old is deprecated, use --new`` (once per name)."""

    def __init__(self, *args, renamed: dict[str, str] | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.renamed = dict(renamed or {})

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        args, met = rename_args(list(args), self.renamed)
        for old in met:
            click.echo(f"zswap-host {self.name}: {old} is deprecated, use {self.renamed[old]}", err=True)
        return super().parse_args(ctx, args)
