"""``zswap_host.progress``: on a terminal, bars with an ETA that appear at once and stay when done
(an overall bar counting units, a bar per unit that reports its own work); off a terminal, one line
per finished unit; ``quiet``: nothing. The stream here is a StringIO that says it is (or is not) a
terminal."""

import io
import re

import pytest

from zswap_host.progress import Progress


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _screen(text: str) -> list[str]:
    """What a terminal would show last on each line tqdm drew (carriage returns and cursor moves
    stripped: the last redraw of each line wins)."""
    text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "\n", text)
    return [seg.split("\r")[-1] for seg in text.split("\n") if seg.split("\r")[-1].strip()]


def test_bars_appear_at_once_show_eta_and_stay_when_done():
    out = Tty()
    p = Progress("bench", 2, "runs", stream=out)
    assert "bench:" in out.getvalue() and "0.0/2 runs" in out.getvalue()    # before any unit reported
    p.update("linux-swap", 5, 20)
    assert "linux-swap" in out.getvalue()
    p.update("linux-swap", 20, 20)
    p.finish("linux-swap")
    p.update("store-on-zns", 10, 20)
    assert "1.5/2 runs" in out.getvalue()              # a running unit counts by its share done
    p.finish("store-on-zns")
    p.close()
    shown = _screen(out.getvalue())
    assert any("bench:" in s and "100%" in s and "2.0/2 runs" in s for s in shown)
    assert any("linux-swap" in s and "20/20" in s for s in shown)
    assert any("store-on-zns" in s and "100%" in s for s in shown)      # finished: shown whole, not erased
    assert re.search(r"<\d\d:\d\d", out.getvalue())                     # an ETA (remaining time)
    assert p.finished == ["linux-swap", "store-on-zns"]


def test_off_a_terminal_one_line_per_finished_unit():
    out = io.StringIO()
    with Progress("replay", 3, "runs", work="page", stream=out) as p:
        for name in ("a", "b"):
            for done in range(0, 101, 10):
                p.update(name, done, 100)
            p.finish(name, "100 pages")
        p.finish("c")                                  # never seen starting (a Ray task): no wall time of its own
        p.finish("c")                                  # twice: still one line
        p.note("a note")
    lines = out.getvalue().splitlines()
    assert len(lines) == 4 and lines[3] == "a note"
    assert re.fullmatch(r"replay: a done \(1/3, \d+\.\d s; 100 pages\)", lines[0])
    assert lines[1].startswith("replay: b done (2/3, ")
    assert re.fullmatch(r"replay: c done \(3/3, at \d+\.\d s\)", lines[2])


def test_quiet_shows_nothing_anywhere():
    for stream in (Tty(), io.StringIO()):
        with Progress("sweep", 2, "points", stream=stream, quiet=True) as p:
            p.update("x", 1, 2)
            p.finish("x")
            p.note("hidden")
        assert stream.getvalue() == ""


def test_more_units_than_expected_raise_the_count():
    out = io.StringIO()
    with Progress("bench", 1, stream=out) as p:
        p.finish("dram-only")
        p.finish("linux-swap (twin)")
    assert out.getvalue().splitlines()[1].startswith("bench: linux-swap (twin) done (2/2, ")


def test_overall_off_leaves_only_the_unit_bar():
    out = Tty()
    with Progress("characterize", 1, "study", work="B", stream=out, overall=False) as p:
        assert out.getvalue() == ""
        p.update("thesis study", 512, 1024, postfix="randwrite 4k")
        p.finish("thesis study")
    shown = _screen(out.getvalue())
    assert any("thesis study" in s and "100%" in s for s in shown)
    assert not any(s.startswith("characterize:") for s in shown)


def test_negative_units_are_refused():
    with pytest.raises(ValueError, match="units must be >= 0"):
        Progress("x", -1)
