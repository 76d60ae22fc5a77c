"""Real Criteo data (issue 13, part 3): the Kaggle/Terabyte text readers and dlrm's .npz, on small files
written here in exactly those formats — empty fields, gzip, stored and deflated .npz in both array
orders, malformed lines failing or skipped, chunk boundaries, hashing and dictionary mapping,
wrap-around — and ``zswap-host bench --data``."""

import gzip
import importlib.util
import json
import os
import zipfile

import numpy as np
import pytest
from click.testing import CliRunner

from zswap_host.errors import ZswapError
from zswap_host.workloads.criteo import TINY_TABLES
from zswap_host.workloads.data import CategoricalMapper, CriteoFile, DataFormatError, IdMap, log_dense
from zswap_host.workloads.data.text import parse_block

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/
SAMPLE = os.path.join(HERE, "data", "criteo-sample.txt")
TABLES = tuple(TINY_TABLES)


def _sample_module():
    path = os.path.join(HERE, "data", "make_criteo_sample.py")
    spec = importlib.util.spec_from_file_location("make_criteo_sample", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def rows(n: int, seed: int = 0, empty: float = 0.2, wide: bool = False) -> list[list[str]]:
    """Random rows as field lists: label, 13 decimal (negatives, empties), 26 hex (8 digits, empties;
    ``wide``: 1 to 16 digits, mixed case, and decimals of up to 18 digits)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        f = [str(rng.integers(0, 2))]
        for _ in range(13):
            if rng.random() < empty:
                f.append("")
            elif wide and rng.random() < 0.3:
                f.append(str(int(rng.integers(-10 ** 17, 10 ** 18))))
            else:
                f.append(str(int(rng.integers(-3, 10 ** int(rng.integers(1, 8))))))
        for _ in range(26):
            if rng.random() < empty:
                f.append("")
            elif wide:
                h = f"{int(rng.integers(0, 1 << 63)):x}"[: int(rng.integers(1, 17))]
                f.append(h.upper() if rng.random() < 0.3 else h)
            else:
                f.append(f"{int(rng.integers(0, 1 << 32)):08x}")
        out.append(f)
    return out


def text(rs) -> str:
    return "".join("\t".join(r) + "\n" for r in rs)


def reference(rs):
    """What the readers must produce, by plain Python: raw dense, raw categorical, labels."""
    dense = np.array([[int(x or 0) for x in r[1:14]] for r in rs], np.int64)
    cat = np.array([[int(x or "0", 16) for x in r[14:]] for r in rs], np.uint64)
    labels = np.array([float(r[0]) for r in rs], np.float32)
    return dense, cat, labels


def write(tmp_path, name, rs, gz=False) -> str:
    p = tmp_path / name
    data = text(rs).encode()
    p.write_bytes(gzip.compress(data) if gz else data)
    return str(p)


def collect(src: CriteoFile, n: int, batch: int):
    bs = list(src.batches(n, batch))
    return (np.concatenate([b.dense for b in bs]), np.concatenate([b.sparse for b in bs], axis=1),
            np.concatenate([b.labels for b in bs]), bs)


# -- parsing ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("wide", [False, True])
def test_parse_matches_python_on_empty_negative_and_wide_fields(wide):
    rs = rows(300, seed=1 + wide, wide=wide)
    got = parse_block(text(rs).encode(), "f", 1, False)
    dense, cat, labels = reference(rs)
    assert (got.dense == dense).all() and (got.cat == cat).all() and (got.labels == labels).all()


def test_edge_values_of_the_word_parsers():
    r = ["1", "-1234567", "99999999", "0", "", "-1", "7", "12345678", "1", "2", "3", "4", "5", "6",
         *(["FFFFFFFF", "00000000", "", "deadBEEF"] * 7)[:26]]
    got = parse_block(text([r, r]).encode(), "f", 1, False)
    dense, cat, _ = reference([r])
    assert (got.dense[1] == dense[0]).all() and (got.cat[1] == cat[0]).all()


def test_dense_log_transform_and_missing_values(tmp_path):
    rs = rows(50, seed=3)
    rs[0][1:14] = [""] * 13                            # every dense field empty
    rs[0][14:] = [""] * 26                             # every categorical empty: value 0, row 0
    rs[1][2] = "-3"
    b = next(iter(CriteoFile(write(tmp_path, "t.txt", rs), TABLES).batches(1, 50)))
    dense, cat, _ = reference(rs)
    want = np.log1p(np.maximum(dense, 0).astype(np.float64)).astype(np.float32)
    assert b.dense.dtype == np.float32 and (b.dense == want).all()
    assert (b.dense[0] == 0).all() and b.dense[1, 1] == 0.0          # empty = 0, negative clamped to 0
    assert (b.sparse[:, 0, 0] == 0).all()
    assert (log_dense(np.array([[0, 1, np.e - 1]])) == np.log1p([[0, 1, np.e - 1]]).astype(np.float32)).all()


def test_batches_are_the_trainers_batch_shape_and_hash_mod_rows(tmp_path):
    rs = rows(100, seed=4)
    dense, sparse, labels, bs = collect(CriteoFile(write(tmp_path, "train.txt", rs), TABLES), 4, 25)
    b = bs[0]
    assert b.dense.shape == (25, 13) and b.dense.dtype == np.float32
    assert b.sparse.shape == (26, 25, 1) and b.sparse.dtype == np.int64
    assert b.labels.shape == (25,) and b.labels.dtype == np.float32 and [x.index for x in bs] == [0, 1, 2, 3]
    _, cat, want_labels = reference(rs)
    assert (sparse[:, :, 0] == (cat % np.array(TABLES, np.uint64)).T).all()
    assert (labels == want_labels).all()


def test_chunk_boundaries_do_not_change_the_batches(tmp_path):
    rs = rows(120, seed=5)
    path = write(tmp_path, "t.txt", rs)
    whole = collect(CriteoFile(path, TABLES), 6, 20)
    line = len(text(rs[:1]))
    for chunk in (1, 7, line - 1, line + 1, 3 * line + 5):            # smaller than a line, than the file
        part = collect(CriteoFile(path, TABLES, chunk_bytes=chunk), 6, 20)
        for a, b in zip(whole[:3], part[:3]):
            assert (a == b).all()


def test_npz_chunks_follow_the_chunk_size(tmp_path):
    rs = rows(90, seed=6)
    dense, cat, y = reference(rs)
    p = tmp_path / "d.npz"
    np.savez_compressed(p, X_int=dense, X_cat=cat.astype(np.int64), y=y.astype(np.int32))
    whole = collect(CriteoFile(str(p), TABLES), 3, 30)
    part = collect(CriteoFile(str(p), TABLES, chunk_bytes=500), 3, 30)     # a few rows per chunk
    assert all((a == b).all() for a, b in zip(whole[:3], part[:3]))


def test_crlf_and_blank_lines_and_a_last_line_without_newline(tmp_path):
    rs = rows(10, seed=7)
    body = "\r\n".join("\t".join(r) for r in rs[:5]) + "\r\n\n" + "\n".join("\t".join(r) for r in rs[5:])
    p = tmp_path / "t.txt"
    p.write_bytes(body.encode())
    _, sparse, labels, _ = collect(CriteoFile(str(p), TABLES), 1, 10)
    _, cat, want = reference(rs)
    assert (labels == want).all() and (sparse[:, :, 0] == (cat % np.array(TABLES, np.uint64)).T).all()


# -- formats ---------------------------------------------------------------------------------------

def test_gzip_terabyte_day_reads_like_the_plain_text(tmp_path):
    rs = rows(80, seed=8)
    plain = CriteoFile(write(tmp_path, "train.txt", rs), TABLES)
    day = CriteoFile(write(tmp_path, "day_3.gz", rs, gz=True), TABLES)
    assert plain.resolved_format() == "kaggle" and day.resolved_format() == "terabyte"
    assert CriteoFile(write(tmp_path, "day_0", rs), TABLES).resolved_format() == "terabyte"
    a, b = collect(plain, 4, 20), collect(day, 4, 20)
    assert all((x == y).all() for x, y in zip(a[:3], b[:3]))
    forced = CriteoFile(day.path, TABLES, format="kaggle", chunk_bytes=333)   # gzip found by content
    assert all((x == y).all() for x, y in zip(a[:3], collect(forced, 4, 20)[:3]))


@pytest.mark.parametrize("save", ["savez", "savez_compressed"])
@pytest.mark.parametrize("order", ["C", "F"])
def test_npz_as_dlrm_writes_it_matches_the_text(tmp_path, save, order):
    """dlrm saves X_cat as float64 and transposed (column-major in the file), X_int with negatives."""
    rs = rows(70, seed=9)
    dense, cat, y = reference(rs)
    x_cat = (cat % np.uint64(1 << 20)).astype(np.float64)      # dlrm's ids are small whole floats
    p = tmp_path / "kaggle_processed.npz"
    getattr(np, save)(p, X_int=dense.astype(np.int32), X_cat=np.asarray(x_cat, order=order),
                      y=y.astype(np.int32), counts=np.array(TABLES))
    with zipfile.ZipFile(p) as z:
        assert (z.getinfo("X_cat.npy").compress_type == zipfile.ZIP_STORED) == (save == "savez")
    src = CriteoFile(str(p), TABLES, chunk_bytes=999)
    assert src.resolved_format() == "npz"
    d, s, lab, _ = collect(src, 2, 35)
    assert (d == log_dense(dense)).all() and (lab == y).all()
    assert (s[:, :, 0] == (x_cat.astype(np.uint64) % np.array(TABLES, np.uint64)).T).all()


def test_npz_wrong_content_is_a_clear_error(tmp_path):
    p = tmp_path / "a.npz"
    np.savez(p, X_int=np.zeros((3, 13)), y=np.zeros(3))
    with pytest.raises(DataFormatError, match="no X_cat array"):
        CriteoFile(str(p), TABLES).check()
    np.savez(p, X_int=np.zeros((3, 13)), X_cat=np.zeros((3, 25)), y=np.zeros(3))
    with pytest.raises(DataFormatError, match=r"X_cat \(n, 26\)"):
        CriteoFile(str(p), TABLES).check()
    np.savez(p, X_int=np.zeros((3, 13)), X_cat=np.zeros((3, 26)), y=np.array([0, 2, 1]))
    with pytest.raises(DataFormatError, match=r"a\.npz:2: y is 2"):
        list(CriteoFile(str(p), TABLES).batches(1, 3))
    np.savez(p, X_int=np.zeros((3, 13)), X_cat=-np.ones((3, 26)), y=np.zeros(3))
    src = CriteoFile(str(p), TABLES, skip_bad_lines=True)
    with pytest.raises(DataFormatError, match="no samples to train on .3 malformed"):
        list(src.batches(1, 1))
    with pytest.raises(DataFormatError, match="not an .npz"):
        CriteoFile(write(tmp_path, "t.txt", rows(2)), TABLES, format="npz").check()


# -- malformed lines -------------------------------------------------------------------------------

BAD = [
    (lambda r: r[:-1], "expected 40 tab-separated fields, found 39"),
    (lambda r: r + ["1"], "found 41"),
    (lambda r: ["2", *r[1:]], "field 1 (label) is '2', not 0 or 1"),
    (lambda r: [r[0], "12a", *r[2:]], "field 2 (I1) is '12a', not an integer"),
    (lambda r: [*r[:5], "1.5", *r[6:]], "(I5) is '1.5', not an integer"),
    (lambda r: [*r[:14], "xyz12345", *r[15:]], "field 15 (C1) is 'xyz12345', not hexadecimal"),
    (lambda r: [*r[:20], "-", *r[21:]], "(C7) is '-', not hexadecimal"),
    (lambda r: [*r[:3], "1" * 19, *r[4:]], "(I3)"),
]


@pytest.mark.parametrize("spoil,words", BAD)
def test_a_malformed_line_names_file_line_and_field(tmp_path, spoil, words):
    rs = rows(60, seed=10)
    rs[41] = spoil(rs[41])
    path = write(tmp_path, "train.txt", rs)
    for chunk in (4 << 20, 300):                    # the bad line inside a later chunk too
        with pytest.raises(DataFormatError) as e:
            list(CriteoFile(path, TABLES, chunk_bytes=chunk).batches(3, 20))
        assert str(e.value).startswith(f"{path}:42: ") and words in str(e.value)
        assert e.value.line == 42 and e.value.path == path and isinstance(e.value, ZswapError)


def test_skip_bad_lines_drops_and_counts_them_once(tmp_path):
    rs = rows(50, seed=11)
    bad = {3: BAD[0][0], 17: BAD[2][0], 30: BAD[5][0]}
    for i, f in bad.items():
        rs[i] = f(rs[i])
    path = write(tmp_path, "train.txt", rs)
    good = [r for i, r in enumerate(rs) if i not in bad]
    stream = CriteoFile(path, TABLES, skip_bad_lines=True, chunk_bytes=500).batches(10, 10)   # 100 > 47: wraps
    bs = list(stream)
    st = stream.stats()
    assert st["bad_lines_skipped"] == 3 and st["passes"] == 3 and st["samples_per_pass"] == 47
    assert [x.split(":")[0] for x in st["bad_line_examples"]] == ["line 4", "line 18", "line 31"]
    _, cat, labels = reference(good)
    got = np.concatenate([b.labels for b in bs])
    assert (got[:47] == labels).all() and (got[47:94] == labels).all()


def test_no_file_directory_empty_file_and_bad_options(tmp_path):
    with pytest.raises(DataFormatError, match="no such data file"):
        CriteoFile(str(tmp_path / "nope.txt"), TABLES).check()
    with pytest.raises(DataFormatError, match="directory"):
        CriteoFile(str(tmp_path), TABLES).check()
    (tmp_path / "empty.txt").write_bytes(b"")
    with pytest.raises(DataFormatError, match="no samples"):
        list(CriteoFile(str(tmp_path / "empty.txt"), TABLES).batches(1, 1))
    for kw in ({"format": "csv"}, {"mapping": "lsh"}, {"max_ind_range": 0}):
        with pytest.raises(ValueError):
            CriteoFile(SAMPLE, TABLES, **kw)
    with pytest.raises(ValueError, match="26 tables"):
        CriteoFile(SAMPLE, TABLES[:5])


# -- mapping and wrap-around -----------------------------------------------------------------------

def test_max_ind_range_caps_tables_and_hashes_mod_the_cap(tmp_path):
    rs = rows(40, seed=12)
    src = CriteoFile(write(tmp_path, "t.txt", rs), TABLES, max_ind_range=100)
    assert src.tables == tuple(min(n, 100) for n in TABLES)
    _, s, _, _ = collect(src, 1, 40)
    _, cat, _ = reference(rs)
    assert (s[:, :, 0] == (cat % np.array(src.tables, np.uint64)).T).all() and s.max() < 100


def test_dict_mapping_numbers_values_in_first_seen_order_and_hashes_overflow(tmp_path):
    rs = rows(60, seed=13, empty=0.0)
    rs[5][14] = rs[2][14] = rs[0][14]                     # C1 repeats a value: same id
    path = write(tmp_path, "t.txt", rs)
    tables = (1000,) + (3,) + TABLES[2:]                   # C2's table holds only 3 ids
    stream = CriteoFile(path, tables, mapping="dict", chunk_bytes=600).batches(2, 60)   # two passes
    b1, b2 = list(stream)
    _, cat, _ = reference(rs)
    first_seen = {}
    want = [first_seen.setdefault(v, len(first_seen)) for v in cat[:, 0].tolist()]
    assert b1.sparse[0, :, 0].tolist() == want
    c2 = b1.sparse[1, :, 0]
    assert c2[:3].tolist() == [0, 1, 2] and (c2[3:] == cat[3:, 1] % 3).all()   # full: hashed
    assert (b2.sparse == b1.sparse).all()                 # the dictionary survives the wrap-around
    st = stream.stats()
    assert st["dict_sizes"][:2] == [len(first_seen), 3] and st["dict_overflow_lookups"] >= 2 * 57


def test_idmap_against_a_python_dict():
    rng = np.random.default_rng(14)
    m, ref = IdMap(500), {}
    for _ in range(40):
        keys = rng.integers(0, 900, rng.integers(1, 60)).astype(np.uint64)
        ids = m.add(keys)
        for k, i in zip(keys.tolist(), ids.tolist()):
            if k not in ref and len(ref) < 500:
                ref[k] = len(ref)
            assert i == ref.get(k, -1)
    assert m.size == len(ref) == 500
    with pytest.raises(ValueError):
        CategoricalMapper(TABLES, "lsh")


def test_wrap_around_batches_span_the_seam(tmp_path):
    rs = rows(25, seed=15)
    stream = CriteoFile(write(tmp_path, "t.txt", rs), TABLES).batches(4, 10)
    labels = np.concatenate([b.labels for b in stream])
    _, _, want = reference(rs)
    assert (labels == np.concatenate([want, want])[:40]).all()
    assert stream.stats()["passes"] == 2 and stream.stats()["samples"] == 40


# -- the committed sample --------------------------------------------------------------------------

def test_committed_sample_is_its_scripts_output_and_parses():
    mod = _sample_module()
    with open(SAMPLE) as f:
        assert f.read() == "".join(line + "\n" for line in mod.sample_lines(400, 0))
    stream = CriteoFile(SAMPLE, TABLES).batches(4, 100)
    bs = list(stream)
    assert stream.stats()["passes"] == 1 and stream.stats()["bad_lines_skipped"] == 0
    assert 0.1 < np.concatenate([b.labels for b in bs]).mean() < 0.5


# -- the trainer and the bench ---------------------------------------------------------------------

def test_train_takes_a_file_source():
    pytest.importorskip("torch")
    from zswap_host.torch.training import train
    from zswap_host.workloads import data_preset

    dc = data_preset("tiny")
    src = CriteoFile(SAMPLE, dc.tables)
    r = train("tiny", dc, None, 1.0, 8, 50, seed=0, source=src)
    assert np.isfinite(r.loss).all() and r.source["samples"] == 400 and r.source["passes"] == 1
    with pytest.raises(ValueError, match="other tables"):
        train("tiny", dc, None, 1.0, 2, 10, seed=0, source=CriteoFile(SAMPLE, dc.tables, max_ind_range=5))


def _bench(*args):
    from zswap_host.cli import main

    return CliRunner().invoke(main, ["bench", "--model", "tiny", "--runs", "linux-swap-batched,store-on-zns",
                                     *args])


def test_cli_bench_trains_on_a_file_and_reports_skipped_lines(tmp_path):
    pytest.importorskip("torch")
    rs = rows(300, seed=16)
    rs[10] = rs[10][:-2]
    path = write(tmp_path, "train.txt", rs)
    out = tmp_path / "r.json"
    r = _bench("--iterations", "6", "--data", path, "--skip-bad-lines", "--cat-mapping", "dict",
               "--max-ind-range", "2000", "--json", str(out))
    assert r.exit_code == 0, r.output
    d = json.loads(out.read_text())
    assert d["data"]["bad_lines_skipped"] == 1 and d["data"]["samples"] == 6 * 64
    assert d["data"]["mapping"] == "dict" and d["data"]["every_run_read_alike"]
    assert all(run["data"]["samples"] == 6 * 64 for run in d["runs"])
    assert d["ratios"]["losses_match"]                       # every backend saw the same batches
    assert "data: " in r.output and "1 malformed lines skipped" in r.output


@pytest.mark.parametrize("args,words", [
    (["--data", "/no/such/train.txt"], "no such data file"),
    (["--data-format", "npz"], "apply to --data"),
    (["--data", SAMPLE, "--data-format", "npz"], "not an .npz"),
])
def test_cli_bad_data_is_one_line_exit_2(args, words):
    pytest.importorskip("torch")
    r = _bench("--iterations", "2", *args)
    assert r.exit_code == 2 and words in r.output and "Traceback" not in r.output, r.output


def test_cli_malformed_line_names_the_line(tmp_path):
    pytest.importorskip("torch")
    rs = rows(100, seed=17)
    rs[6][0] = "x"
    path = write(tmp_path, "train.txt", rs)
    r = _bench("--iterations", "2", "--data", path)
    assert r.exit_code == 2 and f"{path}:7: field 1 (label)" in r.output and "Traceback" not in r.output


def test_truncated_gzip_and_binary_junk_are_clear_errors(tmp_path):
    rs = rows(400, seed=18)
    whole = gzip.compress(text(rs).encode())
    p = tmp_path / "day_1.gz"
    p.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(DataFormatError, match="day_1.gz: cannot read past line"):
        list(CriteoFile(str(p), TABLES, chunk_bytes=1000).batches(10, 40))
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(1, 10)) * 300_000)        # no newline in 2.7 MB
    with pytest.raises(DataFormatError, match="junk.bin:1: a line longer than"):
        CriteoFile(str(junk), TABLES).check()
