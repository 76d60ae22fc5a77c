"""Files zswap-host did not create are not overwritten (issue 34, item 1): an existing regular file
that holds data and carries no mark of ours (``PATH.json`` describing one of our devices, or an
emulated device's state file) is refused as a device without ``--force``, and left byte for byte
as it was; a file the project created, an empty, sparse or all-zero file, and ``--force`` are fine;
read-only commands work on any file."""

import hashlib
import json
import os

import numpy as np
import pytest
from click.testing import CliRunner

from zswap_host.cli import main
from zswap_host.devices import FileBlockDevice, open_device, safety
from zswap_host.devices.ownership import holds_data, is_ours
from zswap_host.errors import UnsafeDeviceError

MiB = 1 << 20


def _text_file(path, size=18 * MiB):
    """A user's plain text file of exactly ``size`` bytes (a whole number of 4 KiB blocks)."""
    line = b"2026-12-03 12:00:00 user data that must survive, line %08d\n"
    with open(path, "wb") as f:
        i = 0
        while f.tell() < size:
            f.write(line % i)
            i += 1
        f.truncate(size)
    return path


def _sha(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


@pytest.fixture
def text(tmp_path):
    return str(_text_file(tmp_path / "notes.txt"))


URLS = ["{p}", "emu-conv://{p}?size=18MiB&preset=none", "fdp://{p}?size=18MiB&preset=none",
        "emu://{p}?zones=9&zone_size=2MiB&preset=none"]


@pytest.mark.parametrize("url", URLS, ids=["file", "emu-conv", "fdp", "emu"])
def test_a_text_file_is_refused_and_left_unchanged(text, url):
    before = _sha(text)
    with pytest.raises(UnsafeDeviceError) as e:
        open_device(url.format(p=text))
    msg = str(e.value)
    assert text in msg and "--force" in msg and "\n" not in msg
    assert _sha(text) == before and not is_ours(text)
    assert sorted(os.listdir(os.path.dirname(text))) == ["notes.txt"]        # nothing written beside it


def test_force_uses_it_and_marks_it(text):
    dev = open_device(text, force=True)
    assert isinstance(dev, FileBlockDevice)
    dev.write(0, np.full(4096, 7, np.uint8))
    dev.close()
    assert json.loads(open(text + ".json").read())["kind"] == "file" and is_ours(text)
    open_device(text).close()                  # the project's file now: no --force needed again
    with safety.forced():
        open_device(text).close()


def test_a_file_the_project_made_is_reopened_without_force(tmp_path):
    img = str(tmp_path / "swap.img")
    with open(img, "wb") as f:                 # `truncate -s 4M swap.img`: holes only
        f.truncate(4 * MiB)
    assert not holds_data(img)
    dev = open_device(img)                    # nothing to lose: taken and marked
    dev.write(MiB, np.random.default_rng(1).integers(1, 256, MiB, dtype=np.uint8))
    dev.close()
    assert holds_data(img) and is_ours(img)
    open_device(img).close()
    # an emulated device's file: its PATH.json is the mark
    url = f"emu-conv://{tmp_path}/conv.img?size=1MiB&preset=none"
    dev = open_device(url)
    dev.write(0, np.ones(4096, np.uint8))
    dev.close()
    open_device(f"emu-conv://{tmp_path}/conv.img").close()


@pytest.mark.parametrize("url", ["emu-conv://{p}?size=1MiB&preset=none", "fdp://{p}?size=1MiB&preset=none",
                                 "emu://{p}?zones=4&zone_size=256KiB&preset=none",
                                 "ocssd://{p}?groups=1&pus=1&chunks=2&preset=none"],
                         ids=["emu-conv", "fdp", "emu", "ocssd"])
def test_an_empty_file_is_accepted(tmp_path, url):
    p = tmp_path / "empty.img"
    p.write_bytes(b"")
    dev = open_device(url.format(p=p))
    dev.close()
    assert is_ours(str(p)) and p.stat().st_size > 0
    open_device(url.split("?")[0].format(p=p)).close()


def test_an_empty_or_all_zero_file_passes_the_check(tmp_path):
    empty, zeros = tmp_path / "empty", tmp_path / "zeros.img"
    empty.write_bytes(b"")
    zeros.write_bytes(bytes(MiB))                 # written zeros, not holes
    safety.check_unowned(str(empty))
    safety.check_unowned(str(zeros))
    safety.check_unowned(str(tmp_path / "absent"))
    open_device(str(zeros)).close()


def test_holds_data_finds_one_byte_behind_holes(tmp_path):
    p = str(tmp_path / "sparse")
    with open(p, "wb") as f:
        f.truncate(8 * MiB)
    assert not holds_data(p)
    with open(p, "r+b") as f:
        f.seek(5 * MiB + 123)
        f.write(b"x")
    assert holds_data(p)


def test_a_json_that_is_not_ours_is_no_mark_and_is_not_overwritten(text):
    with open(text + ".json", "w") as f:
        f.write('{"title": "my notes"}')
    with pytest.raises(UnsafeDeviceError, match="--force"):
        open_device(text)
    open_device(text, force=True).close()
    assert open(text + ".json").read() == '{"title": "my notes"}' and not is_ours(text)


def test_read_only_commands_work_on_any_file(text):
    before = _sha(text)
    r = CliRunner().invoke(main, ["info", text])
    assert r.exit_code == 0 and "18MiB" in r.output, r.output
    assert _sha(text) == before and not os.path.exists(text + ".json")


def test_bench_refuses_a_text_baseline_then_uses_it_with_force(text):
    before = _sha(text)
    r = CliRunner().invoke(main, ["bench", "--quick", "--baseline-device", text])
    assert r.exit_code == 2, r.output
    errors = [line for line in r.output.splitlines() if line.startswith("zswap-host: error:")]
    assert len(errors) == 1 and text in errors[0] and "--force" in errors[0] and "Traceback" not in r.output
    assert _sha(text) == before and not os.path.exists(text + ".json")
    args = ["bench", "--model", "tiny", "--iterations", "6", "--runs", "linux-swap", "--no-model-twin",
            "--compute-us-per-sample", "40", "--baseline-device", text]
    r = CliRunner().invoke(main, [*args, "--force"])
    assert r.exit_code == 0, r.output
    assert _sha(text) != before and is_ours(text)                # used (its data is gone), and marked
    assert CliRunner().invoke(main, args).exit_code == 0         # reopened without --force
