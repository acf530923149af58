"""Data safety: outputs never destroy inputs, interrupted runs leave no partial file, and
hostile data files (special files, wrong encodings, noise, long names) are input errors.

Issue 15, items D1 (output over an input), D2 (interrupted writes) and R (hostile and
odd inputs). Every data-file reader goes through ``ampcalc.fileio.open_input``; every
output file through ``ampcalc.fileio.atomic_write``.
"""

from __future__ import annotations

import math
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import EXAMPLES, ROOT, run_in_process

from ampcalc.load.files import excerpt

PWS_DESIGN = str(EXAMPLES / "pws.yaml")
_WARNING = re.compile(r"\b[A-Z][A-Za-z]*Warning\b|Traceback|internal error")


def assert_input_error(code: int, err: str, *needles: str) -> None:
    """Exit 2, one short message naming what it should, no traceback or warning text."""
    assert code == 2, err
    assert not _WARNING.search(err), err
    assert err.count("\n") <= 2, err
    for needle in needles:
        assert needle in err, (needle, err)


# --------------------------------------------------------------------------------------
# D1: an output that is an input is refused before anything is written
# --------------------------------------------------------------------------------------

SAMPLE = "key,frequency\na,3\nb,5\nc,2000\n"


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    p = tmp_path / "sample.csv"
    p.write_text(SAMPLE)
    return p


def _sanitize(src: str, out: str, cwd: Path) -> tuple[int, str, str]:
    return run_in_process(
        ["pws", "sanitize", src, "--design", PWS_DESIGN, "--seed", "7", "-o", out], cwd
    )


def test_pws_sanitize_over_its_input_is_refused(sample: Path) -> None:
    # the reproduction: `-o sample.csv` once left sample.csv empty
    code, _, err = _sanitize("sample.csv", "sample.csv", sample.parent)
    assert_input_error(code, err, "--output 'sample.csv' is an input of this run")
    assert sample.read_text() == SAMPLE


@pytest.mark.parametrize("link", ["hard", "symbolic", "relative"])
def test_links_and_relative_paths_are_the_same_file(sample: Path, link: str) -> None:
    d = sample.parent
    (d / "sub").mkdir()
    if link == "hard":
        os.link(sample, d / "alias.csv")
        out = "alias.csv"
    elif link == "symbolic":
        os.symlink("sample.csv", d / "alias.csv")
        out = "alias.csv"
    else:
        out = "sub/../sample.csv"
    code, _, err = _sanitize(str(sample), out, d)
    assert_input_error(code, err, "is an input of this run", "destroy")
    assert sample.read_text() == SAMPLE


def test_stdin_redirected_from_the_output_is_refused(sample: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with sample.open("rb") as fh:
        proc = subprocess.run(
            [sys.executable, "-m", "ampcalc", "pws", "sanitize", "-", "--design", PWS_DESIGN,
             "--seed", "7", "-o", str(sample)],
            stdin=fh, capture_output=True, text=True, cwd=ROOT, timeout=120, env=env,
        )  # fmt: skip
    assert_input_error(proc.returncode, proc.stderr, "(as '<stdin>')")
    assert sample.read_text() == SAMPLE


def test_output_equal_to_the_design_file_is_refused(tmp_path: Path) -> None:
    design = tmp_path / "pws.yaml"
    text = (EXAMPLES / "pws.yaml").read_text()
    design.write_text(text)
    (tmp_path / "s.csv").write_text(SAMPLE)
    code, _, err = run_in_process(
        ["pws", "sanitize", "s.csv", "--design", "pws.yaml", "--seed", "1", "-o", "pws.yaml"],
        tmp_path,
    )
    assert_input_error(code, err, "'pws.yaml' is an input of this run")
    assert design.read_text() == text


def test_weights_over_its_records_is_refused(tmp_path: Path) -> None:
    records = tmp_path / "records.csv"
    records.write_text((EXAMPLES / "data" / "importance-six.csv").read_text())
    before = records.read_bytes()
    design = tmp_path / "d.yaml"
    design.write_text(
        (EXAMPLES / "importance-uniform-constant.yaml")
        .read_text()
        .replace("data/importance-six.csv", "records.csv")
    )
    code, _, err = run_in_process(["weights", "d.yaml", "-o", "records.csv"], tmp_path)
    assert_input_error(code, err, "'records.csv' is an input of this run")
    assert records.read_bytes() == before
    code, _, err = run_in_process(["weights", "d.yaml", "-o", "d.yaml"], tmp_path)
    assert_input_error(code, err, "'d.yaml' is an input of this run")
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_sweep_plot_over_a_data_file_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    sizes = tmp_path / "sizes.png"  # a data file that happens to end in .png
    sizes.write_text("size\n3\n4\n5\n")
    design = tmp_path / "d.yaml"
    design.write_text(
        "mechanism: {epsilon: 1.0, neighbours: add-remove}\n"
        "sampling: {scheme: cluster, clusters: {file: sizes.png}, chosen: 1}\n"
    )
    code, _, err = run_in_process(
        ["sweep", "d.yaml", "--vary", "mechanism.epsilon=0.5,1", "--plot", "sizes.png"], tmp_path
    )
    assert_input_error(code, err, "--plot 'sizes.png' is an input of this run")
    assert sizes.read_text() == "size\n3\n4\n5\n"


def test_successful_write_replaces_the_file_and_keeps_its_mode(sample: Path) -> None:
    out = sample.parent / "out.csv"
    out.write_text("previous\n")
    out.chmod(0o640)
    code, _, err = _sanitize(str(sample), str(out), sample.parent)
    assert code == 0, err
    code, stdout, _ = run_in_process(
        ["pws", "sanitize", str(sample), "--design", PWS_DESIGN, "--seed", "7"], sample.parent
    )
    assert code == 0
    assert out.read_text() == stdout  # the same rows as on standard output
    assert out.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in sample.parent.iterdir()) == ["out.csv", "sample.csv"]


def test_output_to_dev_null_is_written_directly(sample: Path) -> None:
    code, _, err = _sanitize(str(sample), os.devnull, sample.parent)
    assert code == 0, err
    assert Path(os.devnull).is_char_device()


def test_output_in_a_missing_directory_is_an_input_error(sample: Path) -> None:
    code, _, err = _sanitize(str(sample), "nowhere/out.csv", sample.parent)
    assert_input_error(code, err, "cannot write 'nowhere/out.csv'", "no such file")


# --------------------------------------------------------------------------------------
# D2: SIGINT/SIGTERM leave the previous output intact and no temporary file
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def big_sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("big") / "big.csv"
    with p.open("w") as f:
        f.write("key,frequency\n")
        f.writelines(f"k{i},{i % 50 + 1}\n" for i in range(400_000))
    return p


@pytest.mark.slow  # about 3 s each: a process start, a table, then the signal
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupted_sanitize_leaves_the_previous_output(
    big_sample: Path, tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    out = tmp_path / "out.csv"
    previous = b"key\nprevious,run\n" * 1000
    out.write_bytes(previous)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ampcalc", "pws", "sanitize", str(big_sample), "--design",
         PWS_DESIGN, "--seed", "7", "--chunk-size", "4000", "-o", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    # wait until the run has started writing: its temporary file holds bytes
    while time.monotonic() < deadline and proc.poll() is None:
        temps = [p for p in tmp_path.iterdir() if p.name.startswith(".out.csv.")]
        if temps and temps[0].stat().st_size > 0:
            break
        time.sleep(0.01)
    assert proc.poll() is None, "the run finished before it could be interrupted"
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == code, stderr
    assert stderr == (
        f"ampcalc: interrupted by {sig.name}; the run stopped before finishing and no output "
        "file was written or replaced\n"
    )
    assert stdout == ""
    assert out.read_bytes() == previous
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def test_interrupt_inside_atomic_write_removes_the_temporary_file(tmp_path: Path) -> None:
    from ampcalc.load.files import Interrupted, atomic_write

    out = tmp_path / "out.csv"
    out.write_text("previous\n")
    with pytest.raises(Interrupted), atomic_write(out) as fh:
        fh.write("partial\n")
        raise Interrupted(signal.SIGTERM)
    assert out.read_text() == "previous\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def test_interrupted_maps_to_130_and_143() -> None:
    from ampcalc.load.files import Interrupted

    assert Interrupted(signal.SIGINT).exit_code == 130
    assert Interrupted(signal.SIGTERM).exit_code == 143


# --------------------------------------------------------------------------------------
# R: hostile data files, for every reader
# --------------------------------------------------------------------------------------

#: (command builder, design text with {path}) per reader; the design is written as d.yaml
KINDS: dict[str, tuple[str, str]] = {
    "cluster": (
        "bound",
        "mechanism: {{epsilon: 1.0, neighbours: add-remove}}\n"
        "sampling: {{scheme: cluster, clusters: {{file: {path}}}, chosen: 1}}\n",
    ),
    "stratified": (
        "bound",
        "mechanism: {{epsilon: 1.0, neighbours: add-remove}}\n"
        "sampling: {{scheme: stratified, allocation: poisson, rate: 0.1, value_bound: 1,\n"
        "  strata: {{file: {path}}}}}\n",
    ),
    "pps": (
        "bound",
        "mechanism: {{epsilon: 1.0, neighbours: both}}\n"
        "sampling: {{scheme: pps, size_measures: {{file: {path}}}, sample: 1}}\n",
    ),
    "pps-cluster": (
        "bound",
        "mechanism: {{epsilon: 1.0, neighbours: both}}\n"
        "sampling: {{scheme: pps-cluster, clusters: {{file: {path}}}}}\n",
    ),
    "random-size-pmf": (
        "bound",
        "mechanism: {{epsilon: 1.0, neighbours: both}}\n"
        "sampling: {{scheme: random-size, population: 100,\n"
        "  size: {{distribution: pmf, file: {path}}}}}\n",
    ),
    "importance-records": (
        "bound",
        "mechanism: {{profile: constant, epsilon: 2.0}}\n"
        "sampling: {{scheme: importance, records: {path}, probabilities: uniform,\n"
        "  radius: 3.0, population: 6000, expected_size: 60}}\n",
    ),
    "plan-data": (
        "plan",
        "target: {{epsilon_prime: 0.1, delta_prime: 0.0001}}\n"
        "sampling: {{scheme: srswor}}\n"
        "statistic: {{kind: median, data: {path}, bounds: [0, 10], rates: [0.5],\n"
        "  simulations: 5, seed: 1}}\n",
    ),
    "pws-sample": ("pws", ""),
    "pws-estimate": ("pws", ""),
}


def _fifo(d: Path) -> str:
    p = d / "fifo.csv"
    os.mkfifo(p)
    return str(p)


def _directory(d: Path) -> str:
    (d / "adir.csv").mkdir()
    return str(d / "adir.csv")


def _latin1(d: Path) -> str:
    p = d / "latin1.csv"
    p.write_bytes("size,name\n3,Müller\n4,Zoë\n".encode("latin-1"))
    return str(p)


def _empty(d: Path) -> str:
    p = d / "empty.csv"
    p.write_bytes(b"")
    return str(p)


def _noise(d: Path) -> str:
    p = d / "noise.csv"
    p.write_bytes(bytes(range(256)) * 40)
    return str(p)


LONG_CELL = "h" * 6000


def _long_line(d: Path) -> str:
    p = d / "long.csv"
    p.write_text(LONG_CELL + ",size\n1,2\n3," + LONG_CELL + "\n")
    return str(p)


def _passwd(d: Path) -> str:
    p = d / "passwd"
    p.write_text(
        "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n" * 30
    )
    return str(p)


def _long_name(d: Path) -> str:
    return str(d / ("n" * 5000 + ".csv"))


#: a fake secret: no message may quote any of it
SECRET = "abcd" + "0123456789abcdef" * 5


def _environ(d: Path) -> str:
    p = d / "environ"
    p.write_bytes(f"PATH=/usr/bin\x00SECRET_TOKEN={SECRET}\x00HOME=/root\x00".encode())
    return str(p)


def _shadow(d: Path) -> str:
    p = d / "shadow"
    p.write_text(f"root:$6${SECRET}{SECRET[:39]}:19000:0:99999:7:::\n")  # 150 characters
    return str(p)


def _dotenv(d: Path) -> str:
    p = d / ".env"
    p.write_text(f"SECRET_TOKEN={SECRET}\nDEBUG=1\n")
    return str(p)


HOSTILE: dict[str, tuple[Callable[[Path], str], str]] = {
    "dev-zero": (lambda d: "/dev/zero", "is a character device"),
    "fifo": (_fifo, "is a FIFO"),
    "directory": (_directory, "is a directory"),
    "latin-1": (_latin1, "not UTF-8"),
    "empty": (_empty, ""),
    "binary-noise": (_noise, ""),
    "6-kb-line": (_long_line, ""),
    "passwd": (_passwd, ""),
    "long-name": (_long_name, "File name too long"),
    "environ": (_environ, ""),
    "shadow": (_shadow, ""),
    "dotenv": (_dotenv, ""),
}

#: the importance reader decodes with replacement (a bad byte is a bad number, named)
_REPLACES = {"importance-records"}
#: the design field naming the data file, for messages about its values
FIELD = {
    "cluster": "sampling.clusters.file",
    "stratified": "sampling.strata.file",
    "pps": "sampling.size_measures.file",
    "pps-cluster": "sampling.clusters.file",
    "random-size-pmf": "sampling.size.file",
    "importance-records": "sampling.records",
    "plan-data": "statistic.data",
    "pws-sample": "",
    "pws-estimate": "",
}


@pytest.fixture
def hostile_dir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_data_file(hostile_dir: Path, kind: str, case: str) -> None:
    make, needle = HOSTILE[case]
    path = make(hostile_dir)
    command, template = KINDS[kind]
    if kind == "pws-sample":
        args = ["pws", "sanitize", path, "--design", PWS_DESIGN, "--seed", "1"]
    elif kind == "pws-estimate":
        args = ["pws", "estimate", path, "--design", PWS_DESIGN]
    else:
        design = hostile_dir / "d.yaml"
        design.write_text(template.format(path=repr(path).replace("'", '"')))
        args = [command, str(design)] + (["--json"] if command == "bound" else [])
    start = time.monotonic()
    code, _, err = run_in_process(args, hostile_dir)
    assert time.monotonic() - start < 20
    if case == "latin-1" and kind in _REPLACES:
        needle = "expected a number, got 'M\ufffdller'"
    assert_input_error(code, err, needle)
    # the message names the file (or, for a long name, its start), or the field naming it
    shown = path if len(path) <= 160 else path[:40]
    assert shown in err or (FIELD[kind] and FIELD[kind] in err), err
    # no more than a short excerpt of the content is quoted
    assert len(err) < 700, err
    assert "h" * 100 not in err
    # a file that is plainly not a CSV of the expected shape is said so, quoted nowhere
    assert SECRET[:8] not in err and "SECRET_TOKEN" not in err, err


def test_excerpt_is_short_and_escaped() -> None:
    assert excerpt("abc") == "'abc'"
    text = excerpt("\x00\x1b[31m" + "x" * 500)
    assert text.endswith("… (506 characters)") and len(text) < 100 and "\x1b" not in text
    assert excerpt(b"\xff\xfe") == "'\\\\xff\\\\xfe'"


# --------------------------------------------------------------------------------------
# R: printed numbers stay in their range; numpy warnings stay off the terminal
# --------------------------------------------------------------------------------------


@pytest.mark.float_kernels
def test_delta_prime_never_above_one(tmp_path: Path) -> None:
    # srswor of the whole population (m = N = 10) with δ = 0.9999 once printed
    # δ′ = 1.0000000000000018: outward rounding past 1. Every δ′ is a probability bound, so
    # 1 is always valid; the ε′ bounds are unchanged.
    import json

    design = tmp_path / "d.yaml"
    design.write_text(
        "mechanism: {epsilon: 1.0, delta: 0.9999, neighbours: add-remove}\n"
        "sampling: {scheme: srswor, population: 10, sample: 10}\n"
    )
    code, out, err = run_in_process(["bound", str(design), "--json"], tmp_path)
    assert code == 0, err
    (r,) = json.loads(out)["results"]
    assert r["delta_prime"] == 1.0
    # q = 1: ε′ = A(1, ε_R) = ε_R = 2ε = 2 exactly; the lower bound is log1p(expm1(2))
    # (the C library's or numpy's SIMD loops: 2 or an ulp off) rounded down 8 ulps
    lower = r["epsilon_prime"]["lower"]
    assert 2.0 - (8 + 4) * math.ulp(1.0) <= lower <= 2.0


def test_in_range_clamps_lower_bounds_and_delta() -> None:
    import numpy as np

    from ampcalc.engine.core import in_range

    lower, delta = in_range(
        np.array([-4.5e-13, np.nan, 0.3]), np.array([1.0000000000000018, -1e-300, 0.5])
    )
    assert lower[0] == 0.0 and np.isnan(lower[1]) and lower[2] == 0.3
    assert delta.tolist() == [1.0, 0.0, 0.5]
    assert in_range(None, None) == (None, None)


@pytest.mark.parametrize(
    ("design", "args"),
    [
        ("group-verify-tiny.yaml", ["invert", "--target", "1e6"]),
        ("srswr-subsample.yaml", ["invert", "--target", "1e6"]),
        ("srswor.yaml", ["invert", "--target", "1e-300"]),
        ("poisson.yaml", ["invert", "--target", "5e-324"]),
        ("srswr-subsample.yaml", ["bound", "--epsilon", "1e6"]),
    ],
)
def test_extreme_targets_raise_no_numpy_warning(design: str, args: list[str]) -> None:
    # overflow in nextafter (outward rounding of the largest float) and overflow in
    # multiply once leaked as RuntimeWarnings on stderr
    import json
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, out, err = run_in_process(
            [args[0], str(EXAMPLES / design), *args[1:], "--json"], ROOT
        )
    assert code == 0, err
    assert not [str(w.message) for w in caught]
    assert not _WARNING.search(err), err
    if args[0] == "invert":
        from ampcalc import engine
        from ampcalc.designs.document import load_designs

        target = float(args[2])
        results = json.loads(out)["results"]
        for d, r in zip(load_designs(str(EXAMPLES / design)), results, strict=True):
            cert = r["epsilon"]["certified"]
            if cert is not None:  # the certificate holds as evaluated
                upper = engine.bound(d, epsilon=cert).upper
                assert upper is not None and upper <= target


def test_header_only_size_file_raises_no_loadtxt_warning(tmp_path: Path) -> None:
    import warnings

    (tmp_path / "sizes.csv").write_text("size\n")
    design = tmp_path / "d.yaml"
    design.write_text(
        "mechanism: {epsilon: 1.0, neighbours: add-remove}\n"
        "sampling: {scheme: cluster, clusters: {file: sizes.csv}, chosen: 1}\n"
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, _, err = run_in_process(["bound", str(design)], tmp_path)
    assert not [str(w.message) for w in caught]
    assert_input_error(code, err, "sizes.csv: no cluster sizes in the file")


@pytest.mark.parametrize("command", ["sanitize", "estimate"])
def test_endless_standard_input_is_cut_at_the_line_limit(command: str) -> None:
    # `-` reads standard input (documented); /dev/zero there has no line end: the read
    # stops at the line limit of ampcalc/model/limits.py instead of growing without bound
    extra = ["--seed", "1"] if command == "sanitize" else []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open("/dev/zero", "rb") as zero:
        proc = subprocess.run(
            [sys.executable, "-m", "ampcalc", "pws", command, "-", "--design", PWS_DESIGN,
             *extra],
            stdin=zero, capture_output=True, text=True, cwd=ROOT, timeout=60, env=env,
        )  # fmt: skip
    assert_input_error(
        proc.returncode,
        proc.stderr,
        "<stdin>:1: characters in one line of a pws sample",
        "above the limit of 1,048,576",
    )


def test_dask_engine_output_over_its_input_is_refused(sample: Path) -> None:
    # refused before Dask is imported (or needed)
    code, _, err = run_in_process(
        ["pws", "sanitize", "sample.csv", "--design", PWS_DESIGN, "--seed", "7", "--engine",
         "dask", "--scheduler", "synchronous", "-o", "./sample.csv"],
        sample.parent,
    )  # fmt: skip
    assert_input_error(code, err, "--output './sample.csv' is an input of this run")
    assert sample.read_text() == SAMPLE
    assert [p.name for p in sample.parent.iterdir()] == ["sample.csv"]


def test_infinite_detail_is_written_as_null() -> None:
    # ε = 5e-324 makes the Laplace scale Δ/ε overflow to inf; `--json` once ended in an
    # internal error (strict JSON has no infinity). The bounds themselves are finite.
    import json

    code, out, err = run_in_process(
        ["bound", str(EXAMPLES / "importance-laplace.yaml"), "--epsilon", "5e-324", "--json"],
        ROOT,
    )
    assert code == 0, err
    for r in json.loads(out)["results"]:
        assert r["details"]["scale"] is None
        assert r["epsilon_prime"]["upper"] == 1.0  # the calibrated target ε*
