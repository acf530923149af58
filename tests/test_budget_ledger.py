"""The ledger around the composition: ``--set`` on a ledger, ``--solve count`` and the
overrun warning of ``ampcalc budget``.

Oracles: a ledger edited on disk (``--set`` must equal the edit), the public
``ampcalc.api.budget`` at the neighbouring counts (``--solve count``'s answer c has
total(c) <= budget < total(c + 1)), and the payload's own upper total and budget (the
overrun is their difference)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

pytest.importorskip("dp_accounting")
import jsonschema
from conftest import ROOT, run_main

from ampcalc import api
from ampcalc.model.errors import DesignError

YEAR = ROOT / "examples" / "budget" / "year.yaml"
SCHEMA = json.loads((ROOT / "ampcalc" / "schema" / "result.schema.json").read_text())

WAVE = "mechanism: {{gaussian: {{sigma: {sigma}}}}}\nsampling: {{scheme: poisson, rate: 0.01}}\n"


def _ledger(tmp_path: Path, eps: float | None = 2.0, k: int = 10, sigma: float = 1.0) -> Path:
    (tmp_path / "wave.yaml").write_text(WAVE.format(sigma=sigma))
    budget = f"epsilon: {eps}, " if eps is not None else ""
    p = tmp_path / "ledger.yaml"
    p.write_text(
        f"name: year\ntarget: {{{budget}delta: 1e-6}}\nentries:\n"
        f"  - {{name: wave, design: wave.yaml, count: {k}}}\n"
        "  - name: counts\n"
        "    design:\n"
        "      mechanism: {laplace: {scale: 2.0}}\n"
        "      sampling: {scheme: poisson, rate: 0.05}\n"
        "    count: 12\n"
    )
    return p


def _upper(led) -> float:
    return float(api.budget(led)["total"]["upper"])


# ---- --set on a ledger ---------------------------------------------------------------


def test_set_reaches_the_ledgers_own_fields() -> None:
    led = api.load_ledger(
        str(YEAR),
        overrides=[
            "target.epsilon=2.5",
            "target.delta=1e-7",
            "discretization=1e-3",
            "neighbours=add-remove",
            "entries[0].count=6",
            "entries[1].name=households",
        ],
    )
    assert (led.epsilon, led.delta, led.discretization) == (2.5, 1e-7, 1e-3)
    assert [e.count for e in led.entries] == [6, 4, 12]
    assert led.entries[1].name == "households"


def test_set_inside_an_inline_entry_design_reaches_that_entry_only() -> None:
    led = api.load_ledger(str(YEAR), overrides=["entries[2].design.mechanism.laplace.scale=3"])
    assert led.entries[2].design.mechanism.profile.scale == 3.0
    base = api.load_ledger(str(YEAR))
    for a, b in zip(led.entries[:2], base.entries[:2], strict=True):
        assert (a.name, a.count, a.design.mechanism) == (b.name, b.count, b.design.mechanism)
    assert base.entries[2].design.mechanism.profile.scale == 2.0


def test_set_inside_a_design_file_equals_editing_the_file(tmp_path: Path) -> None:
    p = _ledger(tmp_path)
    # the same ledger with a second entry on the same file: only entry 0 is overridden
    p.write_text(p.read_text() + "  - {name: again, design: wave.yaml, count: 3}\n")
    over = api.load_ledger(str(p), overrides=["entries[0].design.mechanism.gaussian.sigma=2"])
    edited_dir = tmp_path / "edited"
    edited_dir.mkdir()
    (edited_dir / "wave.yaml").write_text(WAVE.format(sigma=2.0))
    edited = p.read_text().replace(
        "design: wave.yaml, count: 10", "design: edited/wave.yaml, count: 10"
    )
    (tmp_path / "edited.yaml").write_text(edited)
    by_edit = api.load_ledger(str(tmp_path / "edited.yaml"))
    assert over.entries[0].design.mechanism == by_edit.entries[0].design.mechanism
    assert over.entries[0].design.params == by_edit.entries[0].design.params
    assert over.entries[0].design.mechanism.profile.sigma == 2.0
    assert over.entries[2].design.mechanism.profile.sigma == 1.0  # the same file, untouched
    assert _upper(over) == _upper(by_edit)


def test_set_of_a_design_field_still_reaches_every_entry(tmp_path: Path) -> None:
    p = _ledger(tmp_path)
    led = api.load_ledger(str(p), overrides=["sampling.rate=0.02"])
    assert [e.design.params.rate for e in led.entries] == [0.02, 0.02]


@pytest.mark.parametrize(
    ("override", "field", "words"),
    [
        ("targt.epsilon=2", "targt.epsilon", "did you mean 'target'"),
        ("target.epsilom=2", "target.epsilom", "did you mean 'epsilon'"),
        ("entries[7].design.mechanism.laplace.scale=2", "entries[7].design", "no entries[7]"),
        ("entries[7].count=2", "entries[7].count", "no item [7]"),
        (
            "entries[0].design.mechanism.gaussian.sigam=2",
            "entries[0].design.mechanism.gaussian.sigam",
            "did you mean 'sigma'",
        ),
        ("entries[1].count=0", "entries[1].count", "[1, 10000000]"),
    ],
)
def test_set_on_a_ledger_refuses_unknown_paths(
    tmp_path: Path, override: str, field: str, words: str
) -> None:
    with pytest.raises(DesignError) as err:
        api.load_ledger(str(_ledger(tmp_path)), overrides=[override])
    assert err.value.where is not None and err.value.where.file.startswith("--set")
    assert (err.value.where.field or "").startswith(field)
    assert words in str(err.value)


def test_set_on_a_ledger_exits_2_with_one_line(tmp_path: Path, capsys) -> None:
    run = run_main(capsys, "budget", str(YEAR), "--set", "targt.epsilon=2", expect=2)
    assert "did you mean 'target'" in run.stderr and len(run.stderr.strip().splitlines()) == 1


# ---- --solve count -----------------------------------------------------------------


def test_solve_count_is_the_largest_count_within_the_budget(tmp_path: Path, capsys) -> None:
    p = _ledger(tmp_path, eps=1.5)
    run = run_main(capsys, "budget", str(p), "--solve", "count", "--entry", "wave", "--json")
    doc = run.json()
    jsonschema.validate(doc, SCHEMA)
    k = doc["knob"]
    c = k["value"]
    assert k["entry"] == "wave" and k["index"] == 0 and k["current"] == 10
    assert k["fits"] is True and k["more"] == c - 10 > 0
    # independently, through the public API: the ledger with c and c + 1 waves
    at_c = _upper(api.load_ledger(str(p), overrides=[f"entries[0].count={c}"]))
    at_next = _upper(api.load_ledger(str(p), overrides=[f"entries[0].count={c + 1}"]))
    assert at_c <= 1.5 < at_next
    assert k["epsilon_upper_at_value"] == at_c and k["epsilon_upper_at_next"] == at_next
    # the entry named by its index gives the same answer
    again = run_main(capsys, "budget", str(p), "--solve", "count", "--entry", "0", "--json")
    assert again.json()["knob"]["value"] == c


def test_solve_count_over_budget_exits_1_with_fewer_waves(tmp_path: Path, capsys) -> None:
    p = _ledger(tmp_path, eps=0.8, k=400)
    now = _upper(api.load_ledger(str(p)))
    assert now > 0.8
    run = run_main(
        capsys, "budget", str(p), "--solve", "count", "--entry", "0", "--json", expect=1
    )
    k = run.json()["knob"]
    c = k["value"]
    assert k["fits"] is False and k["more"] == c - 400 < 0 and k["epsilon_upper_at_current"] == now
    at_c = _upper(api.load_ledger(str(p), overrides=[f"entries[0].count={c}"]))
    at_next = _upper(api.load_ledger(str(p), overrides=[f"entries[0].count={c + 1}"]))
    assert at_c <= 0.8 < at_next
    assert "over the budget ε = 0.8" in run.stderr and f"at most {c} waves" in run.stderr


def test_solve_count_when_the_other_entries_alone_break_the_budget(tmp_path: Path, capsys) -> None:
    p = _ledger(tmp_path, eps=0.05)
    led = api.load_ledger(str(p))
    alone = _upper(dataclasses.replace(led, entries=led.entries[1:]))
    assert alone > 0.05
    run = run_main(
        capsys, "budget", str(p), "--solve", "count", "--entry", "wave", "--json", expect=1
    )
    k = run.json()["knob"]
    assert k["value"] is None and k["more"] is None and k["fits"] is False
    assert "no count of 'wave' fits" in run.stderr


def test_solve_count_needs_a_budget_and_an_entry(tmp_path: Path, capsys) -> None:
    run = run_main(
        capsys,
        "budget",
        str(_ledger(tmp_path, eps=None)),
        "--solve",
        "count",
        "--entry",
        "0",
        expect=2,
    )
    assert "needs the ε budget" in run.stderr
    run = run_main(capsys, "budget", str(_ledger(tmp_path)), "--solve", "count", expect=2)
    assert "--entry" in run.stderr and "0: 'wave'; 1: 'counts'" in run.stderr
    run = run_main(
        capsys, "budget", str(_ledger(tmp_path)), "--solve", "count", "--entry", "wav", expect=2
    )
    assert "did you mean 'wave'" in run.stderr
    run = run_main(
        capsys, "budget", str(_ledger(tmp_path)), "--solve", "count", "--entry", "5", expect=2
    )
    assert "indexed from 0" in run.stderr
    run = run_main(capsys, "budget", str(_ledger(tmp_path)), "--entry", "0", expect=2)
    assert "--solve count" in run.stderr


def test_solve_count_with_a_set_budget_and_target(tmp_path: Path, capsys) -> None:
    p = _ledger(tmp_path, eps=None)
    a = run_main(
        capsys,
        "budget",
        str(p),
        "--solve",
        "count",
        "--entry",
        "0",
        "--set",
        "target.epsilon=1.2",
        "--json",
    ).json()
    b = run_main(
        capsys, "budget", str(p), "--solve", "count", "--entry", "0", "--target", "1.2", "--json"
    ).json()
    assert a["knob"] == b["knob"] and a["target"]["epsilon"] == 1.2


# ---- the overrun ---------------------------------------------------------------------


def test_an_upper_total_over_the_budget_is_said_with_its_overrun(capsys) -> None:
    run = run_main(capsys, "budget", str(YEAR), "--set", "target.epsilon=0.3", "--json")
    doc = run.json()
    jsonschema.validate(doc, SCHEMA)
    up = doc["total"]["upper"]
    assert up > 0.3 and doc["overrun"] == pytest.approx(up - 0.3, rel=1e-12)
    assert doc["remaining"] == pytest.approx(-doc["overrun"], rel=1e-12)
    (line,) = [ln for ln in run.stderr.splitlines() if ln.startswith("warning:")]
    assert "over the budget ε = 0.3" in line and f"{doc['overrun']:.6g}" in line
    # --fail-above is unchanged: its own threshold, not the budget
    run_main(capsys, "budget", str(YEAR), "--set", "target.epsilon=0.3", "--fail-above", "1")
    run_main(capsys, "budget", str(YEAR), "--fail-above", "0.3", expect=1)


def test_a_total_within_the_budget_has_no_overrun(capsys) -> None:
    run = run_main(capsys, "budget", str(YEAR), "--json")
    doc = run.json()
    jsonschema.validate(doc, SCHEMA)
    assert doc["overrun"] is None and "warning" not in run.stderr


def test_solve_sigma_output_matches_the_schema(tmp_path: Path, capsys) -> None:
    p = _ledger(tmp_path, eps=3.0)
    doc = run_main(
        capsys, "budget", str(p), "--solve", "sigma", "--discretization", "1e-3", "--json"
    ).json()
    jsonschema.validate(doc, SCHEMA)
    assert doc["knob"]["name"] == "sigma" and doc["knob"]["value"] is not None


def _poisson_gaussians(tmp_path: Path, n: int) -> Path:
    lines = ["target: {epsilon: 5.0, delta: 1e-6}", "entries:"]
    for i in range(n):
        lines += [
            f"  - name: e{i}",
            f"    design: {{mechanism: {{gaussian: {{sigma: {2.0 + 0.01 * i}}}}}, "
            f"sampling: {{scheme: poisson, rate: {0.01 + 0.0001 * i}}}}}",
        ]
    p = tmp_path / f"ledger{n}.yaml"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_rows_above_the_share_limit_carry_no_sampled_profile(tmp_path: Path) -> None:
    # above MAX_SHARE_ENTRIES (as with `share`) a row leaves out the entry's sampled
    # profile; its ε′ and δ′ are still `ampcalc bound`'s, to the bit
    from ampcalc.analyses import budget
    from ampcalc.model.design import Target

    small = api.budget(api.load_ledger(str(_poisson_gaussians(tmp_path, 2))))
    assert all(len(r["profile"]) > 10 for r in small["entries"])
    n = budget.MAX_SHARE_ENTRIES + 1
    led = api.load_ledger(str(_poisson_gaussians(tmp_path, n)))
    big = api.budget(led)
    assert all("profile" not in r for r in big["entries"])
    for i in (0, n - 1):
        one = api.bound(
            dataclasses.replace(led.entries[i].design, target=Target(delta_prime=1e-6))
        )
        row = big["entries"][i]
        assert row["epsilon_prime"] == {"lower": one.lower, "upper": one.upper}
        assert row["delta_prime"] == one.delta_prime
