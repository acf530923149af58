"""Every bad-input class gives one clear DesignError naming file, line, field."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import ampcalc
from ampcalc import DesignError
from ampcalc.model.design import Neighbours

GOOD = """\
name: demo
mechanism:
  epsilon: 1.0
  neighbours: both
sampling:
  scheme: srswor
  population: 10000
  sample: 100
"""

GOOD_SAMPLING = {"scheme": "srswor", "population": 10000, "sample": 100}


def write(tmp_path: Path, text: str, name: str = "d.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def error_of(source, **kw) -> DesignError:
    with pytest.raises(DesignError) as info:
        ampcalc.load_designs(source, **kw)
    return info.value


def test_good_design_loads_into_frozen_objects(tmp_path: Path) -> None:
    (d,) = ampcalc.load_designs(write(tmp_path, GOOD))
    assert d.name == "demo" and d.scheme == "srswor"
    assert d.params.population == 10000 and d.params.sample == 100
    assert d.mechanism.neighbours is Neighbours.BOTH
    with pytest.raises(AttributeError):
        d.name = "other"  # type: ignore[misc]


def test_name_defaults_to_file_stem_and_list_index(tmp_path: Path) -> None:
    (d,) = ampcalc.load_designs(write(tmp_path, GOOD.replace("name: demo\n", ""), "survey.yaml"))
    assert d.name == "survey"
    multi = (
        "mechanism: {epsilon: 1}\n"
        "designs:\n"
        "  - sampling: {scheme: poisson, rate: 0.1}\n"
        "  - sampling: {scheme: poisson, rate: 0.2}\n"
    )
    names = [x.name for x in ampcalc.load_designs(write(tmp_path, multi, "grid.yaml"))]
    assert names == ["grid[0]", "grid[1]"]


def test_typo_gets_did_you_mean_with_line(tmp_path: Path) -> None:
    p = write(tmp_path, GOOD.replace("  sample: 100", "  sampel: 100"))
    err = error_of(p)
    assert err.line == 8 and err.field == "sampling.sampel"
    assert "did you mean 'sample'" in str(err)
    assert str(err).startswith(f"{p}:8:3: sampling.sampel: unknown key")


def test_yaml_syntax_error_has_line_and_column(tmp_path: Path) -> None:
    p = write(tmp_path, "mechanism: {epsilon: 1\nsampling: [\n")
    err = error_of(p)
    assert "YAML syntax error" in err.message
    assert err.line is not None and err.where.column is not None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (".nan", "expected a finite number"),
        (".inf", "expected a finite number"),
        ("-1", "expected a number in (0, 1000000], got -1.0"),
        ("0", "expected a number in (0, 1000000], got 0.0"),
        ("'one'", "expected a number in (0, 1000000], got the string 'one'"),
        ("true", "got the boolean true"),
        ("[1, 2]", "got a list"),
        ("", "got nothing (null)"),
    ],
)
def test_bad_epsilon(tmp_path: Path, value: str, expected: str) -> None:
    err = error_of(write(tmp_path, GOOD.replace("epsilon: 1.0", f"epsilon: {value}")))
    assert err.field == "mechanism.epsilon" and err.line == 3
    assert expected in err.message


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("-1", "expected a number in (0, 1000000], got -1.0"),
        ("0", "expected a number in (0, 1000000], got 0.0"),
        ("2000000", "expected a number in (0, 1000000], got 2000000.0"),
        ("nan", "expected a finite number (a number in (0, 1000000]), got nan"),
    ],
)
def test_one_epsilon_rule_for_file_engine_and_sweep(
    tmp_path: Path, value: str, expected: str
) -> None:
    """The loader, the engine's ε override and sweep refuse the same ε with one message."""
    from ampcalc import engine
    from ampcalc.analyses import sweep as sw

    yaml_value = {"nan": ".nan"}.get(value, value)
    p = write(tmp_path, GOOD.replace("epsilon: 1.0", f"epsilon: {yaml_value}"))
    err = error_of(p)
    assert str(err) == f"{p}:3:3: mechanism.epsilon: {expected}"
    design = ampcalc.load_designs(write(tmp_path, GOOD, "good.yaml"))[0]
    for eps in (float(value), [1.0, float(value)]):
        with pytest.raises(DesignError) as info:
            engine.bound(design, eps)
        assert str(info.value) == f"epsilon: {expected}"
    with pytest.raises(DesignError) as info:
        engine.with_epsilon(design.mechanism, float(value))
    assert str(info.value) == f"epsilon: {expected}"
    if value == "nan":
        return  # --vary's own parser already refuses a value that is not a number
    vary = sw.parse_vary(f"mechanism.epsilon=1,{value}")
    with pytest.raises(DesignError) as info:
        sw.evaluate({"mechanism": {"epsilon": 1.0}, "sampling": dict(GOOD_SAMPLING)}, [vary])
    assert str(info.value) == f"vary: mechanism.epsilon=1,{value}: {expected}"


@pytest.mark.parametrize("value", ["1", "1.5", "-1e-9"])
def test_delta_outside_0_1(tmp_path: Path, value: str) -> None:
    text = GOOD.replace("  neighbours: both", f"  neighbours: both\n  delta: {value}")
    err = error_of(write(tmp_path, text))
    assert err.field == "mechanism.delta"
    assert "[0, 1)" in err.message


def test_scientific_notation_is_numeric(tmp_path: Path) -> None:
    text = (
        "mechanism: {epsilon: 5e-1, delta: 1e-6, neighbours: replace-one}\n"
        "sampling: {scheme: srswor, population: 1e6, sample: 1E2}\n"
    )
    (d,) = ampcalc.load_designs(write(tmp_path, text))
    assert d.mechanism.epsilon == 0.5 and d.mechanism.delta == 1e-6
    assert d.params.population == 1_000_000 and isinstance(d.params.population, int)


def test_non_integral_float_for_integer_field(tmp_path: Path) -> None:
    err = error_of(write(tmp_path, GOOD.replace("population: 10000", "population: 1.5e0")))
    assert err.field == "sampling.population"
    assert "expected a whole number" in err.message and "1.5" in err.message


def test_sample_larger_than_population(tmp_path: Path) -> None:
    err = error_of(write(tmp_path, GOOD.replace("sample: 100", "sample: 20000")))
    assert err.field == "sampling.sample" and err.line == 8
    assert "larger than population" in err.message


@pytest.mark.parametrize("rate", ["0", "1.5", "-0.1"])
def test_rate_outside_0_1(tmp_path: Path, rate: str) -> None:
    text = f"mechanism: {{epsilon: 1}}\nsampling: {{scheme: poisson, rate: {rate}}}\n"
    err = error_of(write(tmp_path, text))
    assert err.field == "sampling.rate" and "(0, 1]" in err.message


def test_unknown_scheme_lists_known_ones(tmp_path: Path) -> None:
    err = error_of(write(tmp_path, GOOD.replace("scheme: srswor", "scheme: srswo")))
    assert err.field == "sampling.scheme" and err.line == 6
    assert "known schemes:" in err.message and "srswor" in err.message
    assert "did you mean one of: 'srswor' (" in str(err) and "'srswr' (" in str(err)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    assert "no such file" in error_of(tmp_path / "nope.yaml").message
    assert "is a directory" in error_of(tmp_path).message


def test_empty_and_non_utf8_and_non_mapping(tmp_path: Path) -> None:
    assert "empty" in error_of(write(tmp_path, "")).message
    p = tmp_path / "bin.yaml"
    p.write_bytes(b"mechanism: {epsilon: 1}\nname: \xff\xfe\n")
    err = error_of(p)
    assert "not UTF-8" in err.message and err.line == 2
    assert "expected a design" in error_of(write(tmp_path, "- 1\n- 2\n")).message


def test_duplicate_keys_are_refused(tmp_path: Path) -> None:
    err = error_of(write(tmp_path, GOOD + "sampling: {scheme: poisson, rate: 0.1}\n"))
    assert "duplicate key 'sampling'" in err.message and err.line == 9


def test_alias_bomb_is_refused_quickly(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 12):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 10)}]")
    start = time.perf_counter()
    err = error_of(write(tmp_path, "\n".join(lines) + "\n"))
    assert time.perf_counter() - start < 2
    assert "aliases" in err.message


def test_oversized_file_is_refused_without_reading(tmp_path: Path) -> None:
    p = tmp_path / "big.yaml"
    with p.open("wb") as f:
        f.truncate(60 * 1024 * 1024)
    start = time.perf_counter()
    err = error_of(p)
    assert time.perf_counter() - start < 1
    assert "limited to 50 MB" in err.message


def test_releases_compose_by_sum(tmp_path: Path) -> None:
    text = (
        "mechanism: {releases: [0.3, 0.5, {epsilon: 0.2, delta: 1e-7}], neighbours: both}\n"
        "sampling: {scheme: poisson, rate: 0.1}\n"
    )
    (d,) = ampcalc.load_designs(write(tmp_path, text))
    assert d.mechanism.epsilon == pytest.approx(1.0) and d.mechanism.delta == 1e-7
    assert len(d.mechanism.releases) == 3


def test_epsilon_and_releases_are_exclusive(tmp_path: Path) -> None:
    text = "mechanism: {epsilon: 1, releases: [1]}\nsampling: {scheme: poisson, rate: 0.1}\n"
    assert "either `epsilon` or `releases`" in error_of(write(tmp_path, text)).message


def test_replace_one_parameters_only_with_add_remove(tmp_path: Path) -> None:
    text = GOOD.replace("  neighbours: both", "  neighbours: both\n  epsilon_replace_one: 1.5")
    err = error_of(write(tmp_path, text))
    assert err.field == "mechanism.epsilon_replace_one"


def test_explicit_replace_one_epsilon_with_delta_needs_its_delta(tmp_path: Path) -> None:
    text = GOOD.replace(
        "  neighbours: both", "  neighbours: add-remove\n  delta: 1e-6\n  epsilon_replace_one: 1.5"
    )
    assert "delta_replace_one" in error_of(write(tmp_path, text)).message


def test_guarantee_without_valid_conversion_is_refused(tmp_path: Path) -> None:
    err = error_of(write(tmp_path, GOOD + "guarantee: add-remove\n"))
    assert err.field == "guarantee" and "no valid conversion" in err.message


def test_designs_inherit_and_override_mechanism(tmp_path: Path) -> None:
    text = (
        "mechanism: {epsilon: 0.5, neighbours: both}\n"
        "designs:\n"
        "  - name: a\n"
        "    sampling: {scheme: poisson, rate: 0.01}\n"
        "  - name: b\n"
        "    sampling: {scheme: srswor, population: 10000, sample: 100}\n"
        "    mechanism: {epsilon: 1.0, neighbours: replace-one}\n"
    )
    a, b = ampcalc.load_designs(write(tmp_path, text))
    assert a.mechanism.epsilon == 0.5 and a.mechanism.neighbours is Neighbours.BOTH
    assert b.mechanism.epsilon == 1.0 and b.mechanism.neighbours is Neighbours.REPLACE_ONE


def test_error_in_second_design_names_its_path_and_line(tmp_path: Path) -> None:
    text = (
        "mechanism: {epsilon: 0.5}\n"
        "designs:\n"
        "  - sampling: {scheme: poisson, rate: 0.01}\n"
        "  - sampling: {scheme: poisson, rat: 0.01}\n"
    )
    err = error_of(write(tmp_path, text))
    assert err.field == "designs[1].sampling.rat" and err.line == 4
    assert "did you mean 'rate'" in str(err)


def test_set_overrides_fields_and_reports_its_origin(tmp_path: Path) -> None:
    p = write(tmp_path, GOOD)
    (d,) = ampcalc.load_designs(p, overrides=["sampling.sample=500"])
    assert d.params.sample == 500
    (d,) = ampcalc.load_designs(p, overrides=["mechanism.epsilon=2e-1"])
    assert d.mechanism.epsilon == 0.2
    err = error_of(p, overrides=["sampling.sample=0"])
    assert err.where.file == "--set" and err.field == "sampling.sample"
    err = error_of(p, overrides=["sampling.sampel=5"])
    assert "did you mean 'sample'" in str(err)
    assert "PATH=VALUE" in error_of(p, overrides=["sampling.sample"]).message


def test_set_on_one_design_of_a_list(tmp_path: Path) -> None:
    text = (
        "mechanism: {epsilon: 0.5}\n"
        "designs:\n"
        "  - sampling: {scheme: poisson, rate: 0.01}\n"
        "  - sampling: {scheme: poisson, rate: 0.02}\n"
    )
    p = write(tmp_path, text)
    a, b = ampcalc.load_designs(p, overrides=["designs[1].sampling.rate=0.5"])
    assert a.params.rate == 0.01 and b.params.rate == 0.5
    a, b = ampcalc.load_designs(p, overrides=["sampling.rate=0.3"])
    assert a.params.rate == b.params.rate == 0.3


def test_set_on_a_design_index_that_does_not_exist(tmp_path: Path) -> None:
    text = "mechanism: {epsilon: 1}\ndesigns:\n  - sampling: {scheme: poisson, rate: 0.1}\n"
    err = error_of(write(tmp_path, text), overrides=["designs[3].sampling.rate=0.5"])
    assert "there is no designs[3]" in err.message and err.where.file == "--set"


def test_failed_condition_result_keeps_the_declared_epsilon(tmp_path: Path) -> None:
    text = "mechanism: {epsilon: 0.7, neighbours: replace-one}\n"
    text += "sampling: {scheme: poisson, rate: 0.1}\n"
    (d,) = ampcalc.load_designs(write(tmp_path, text))
    res = ampcalc.bound(d).to_dict()
    assert res["epsilon"] == 0.7 and res["epsilon_prime"] == {"lower": None, "upper": None}
    assert "Lemma 3.3" in res["error"] and res["verdict"] is None


@pytest.mark.parametrize(
    ("typed", "listed"),
    [("srs", ["srswor", "srswr"]), ("SRSWOR", ["srswor"]), ("poison", ["poisson"])],
)
def test_an_unknown_scheme_lists_every_close_scheme_with_what_it_is(typed, listed) -> None:
    """`srs` must not steer to `srswr` alone (a bootstrap sample degrades privacy):
    every close name is listed with its one-line description; case does not matter."""
    from ampcalc import schemes

    text = f"mechanism: {{epsilon: 1}}\nsampling: {{scheme: {typed}, population: 10, sample: 2}}\n"
    with pytest.raises(ampcalc.DesignError) as info:
        ampcalc.load_design(text)
    hint = info.value.hint or ""
    for name in listed:
        assert f"'{name}' ({schemes.get(name).summary})" in hint
    assert hint.count("'") == 2 * len(listed)
