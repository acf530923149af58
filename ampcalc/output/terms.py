"""Plain-words labels for what tables show: the one place a JSON ``details`` key, a
budget accountant's description or a noise-calibration column becomes a phrase a survey
statistician can read. Only the table renderers use it: JSON and CSV keep their keys,
which docs/glossary.md explains one by one.

A key without a label here is shown as it is (and docs/glossary.md must still define it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

#: The glossary every table links to once, cited like the project's other documents.
GLOSSARY = "docs/glossary.md"
GLOSSARY_NOTE = f"terms explained in {GLOSSARY}"
GLOSSARY_LINE = f"({GLOSSARY_NOTE})"


def with_glossary(footer: list[str]) -> list[str]:
    """A table's footer linking the glossary once: on its "references:" heading when it
    has one (no extra line), else as a last line of its own."""
    if footer and footer[0] == "references:":
        return [f"references ({GLOSSARY_NOTE}):", *footer[1:]]
    return [*footer, GLOSSARY_LINE]


#: ``details`` key -> the phrase tables show instead.
DETAIL_LABELS: Mapping[str, str] = {
    # design sizes
    "population": "population N",
    "sample": "sample size m",
    "rate": "sampling rate",
    "rate_max": "largest stratum sampling rate",
    "fraction": "share of clusters drawn",
    "within_rate": "sampling rate within clusters",
    "within_sample": "records sampled in each chosen cluster",
    "records": "records",
    "total_sample": "total sample size",
    "expected_size": "expected sample size",
    "mean_size": "mean sample size",
    "interval": "sampling interval k",
    "order": "order of the list",
    "group_size": "records protected together (g)",
    "strata_count": "strata",
    "census_strata": "strata taken whole",
    "certainty_units": "units taken with certainty",
    "allocation": "allocation",
    "allocation_source": "allocation from",
    "allocation_sum": "allocated sample total",
    "rounding": "rounding of the allocation",
    "distribution": "sample-size distribution",
    "pmf_source": "sample-size probabilities from",
    "pmf_support": "possible sample sizes",
    "grid_size": "sample sizes compared",
    # clusters
    "clusters": "clusters k",
    "chosen": "clusters drawn",
    "cluster_fraction": "share of clusters drawn",
    "smallest_cluster": "smallest cluster size",
    "sizes_source": "cluster sizes from",
    "K_upper": "largest group of records a cluster change moves (K, upper)",
    "K_lower": "records a cluster change surely moves (K, lower)",
    "srs_same_fraction": "same share sampled at random would give ε′",
    "without_replacement_same_rate": "same rate without replacement would give ε′",
    "heuristic_cluster_analogy": "cluster-style estimate (heuristic, not a bound)",
    "heuristic_note": "about the cluster-style estimate",
    "max_cluster_size_for": "largest cluster size meeting the target",
    "max_cluster_size_note": "about the largest cluster size",
    # probability-proportional-to-size
    "method": "selection method",
    "threshold": "threshold τ",
    "max_size_measure": "largest size measure R",
    "max_inclusion_probability": "largest inclusion probability allowed",
    "max_inclusion_probability_present": "largest inclusion probability in the data",
    "worst_inclusion": "largest inclusion probability a change can reach",
    "inclusion_basis": "inclusion probabilities from",
    "upper_rate": "highest sampling rate a change can cause",
    # mechanism and relations
    "epsilon_replace_one": "mechanism ε when one record is replaced (ε_R)",
    "mechanism_neighbours": "neighbours the mechanism's ε is stated for",
    "reference_epsilon": "ε without sampling (the yardstick of the verdict)",
    "target_epsilon_prime": "target ε′",
    "scale": "noise scale",
    "sensitivity": "sensitivity",
    "sensitivity_kind": "kind of sensitivity",
    "noise_constant": "noise constant",
    "count_scale": "noise scale of the counts",
    "sum_scale": "noise scale of the sums",
    # how a bound was found
    "form": "form of the bound",
    "reading": "reading of the theorem",
    "conservative_rule": "simpler conservative bound",
    "remove_direction": "ε′ when a record is removed",
    "tilted_mean_size": "tilted mean sample size",
    "advantage": "best test advantage between size distributions",
    "total_variation": "total variation between size distributions",
    "approx_6re": "6rε shortcut (approximate, unused)",
    "approx_6re_relative_error": "relative error of the 6rε shortcut",
    "bound_4": "lower bound from the attack's first inequality",
    "identity_5": "lower bound from the attack's identity",
    "lower_bound": "lower bound",
    "test_epsilon": "ε′ of the membership test",
    "conditional_epsilon": "conditional ε″ of the membership test",
    "lower_witness": "neighbouring pair behind the lower bound",
    "witness_class_size": "size of the worst-case class",
    "laplace_witness_add_remove": "exact ε′ of the Laplace example",
    "laplace_witness_note": "about the Laplace example",
    "neighbour": "worst neighbouring change",
    # private weighted sampling
    "L": "frequency scale L(ε, δ)",
    "first_frequency_half": "first frequency reported at least half as often as sampled",
    "settled_from": "frequency from which privacy costs nothing",
    "privacy_cost_rows": "how many frequencies privacy costs reporting",
    "privacy_cost_frequencies": "frequencies where privacy costs reporting",
    "max_frequency": "largest frequency",
    "sampled_sbh": "baseline (SbH) also sampled",
    # importance sampling
    "probabilities": "inclusion probabilities",
    "profile": "privacy profile",
    "max_probability": "largest inclusion probability",
    "radius": "data radius r",
    "feasible_radius": "largest radius meeting the target",
    "dimension": "dimension",
    "infeasible_records": "records that cannot meet the target",
    "data_mean_sq_norm": "mean squared norm of the data",
    "domain_argmax_norm": "norm of the worst record",
    "domain_gap": "gap of the worst-record search",
    "epsilon_replace_one_ratio": "mechanism ε_R as a multiple of ε",
    # nested (never on the details line; named so that notes pointing to them read)
    "strata": "per-stratum rows",
    "frequencies": "per-frequency rows",
    "shortcut": "ε′/(6r) shortcut (approximate, unused)",
    "allocations": "allocations of the neighbouring pair",
    "allocation_sums": "allocation totals of the neighbouring pair",
    "allocation_sensitivity": "allocation sensitivity",
    "apportionment_sensitivity": "apportionment sensitivity",
    "witness": "neighbouring pair behind the bound",
    "largest_clusters": "largest cluster sizes",
    "inverse": "how the certified ε was found",
    "tight": "bounds coincide",
    "target_for_expected_size": "target met at the expected sample size",
    "lower_bound_printed_slack": "lower bound with the paper's printed constant",
}

#: A budget entry's or total's accountant, as JSON writes it -> the table's words.
COMPOSED_AS: Mapping[str, str] = {
    "randomized response at ε′ (pure)": "exactly, as a pure ε′ release",
    "(ε′, δ′) dominating pair": "as an (ε′, δ′) release (its worst case)",
    "dp_accounting PLD (pessimistic estimate for the upper, optimistic estimate for the lower)": (
        "by the privacy-loss-distribution accountant (dp_accounting)"
    ),
    "the accountant's optimistic estimate of the same composition: an accounting "
    "interval, not a worst-case witness": (
        "the accountant's optimistic estimate; the exact total lies between it and the "
        "upper (a guarantee)"
    ),
}
_SAMPLED_PLD = re.compile(r"^dp_accounting sampled (\w+) PLD$")

#: Column headers of the noise-calibration tables (``invert --solve``, ``budget --solve``).
NOISE_CERTIFIED = "noise scale meeting the target"
NOISE_IMPOSSIBLE = "noise scale below which the target is impossible"


def detail_label(key: str) -> str:
    """The phrase a table shows for ``details`` key ``key`` (the key itself if none)."""
    return DETAIL_LABELS.get(key, key)


def composed_as(text: str | None) -> str | None:
    """The table's words for a budget accountant description (unknown ones unchanged)."""
    if text is None:
        return None
    if text in COMPOSED_AS:
        return COMPOSED_AS[text]
    m = _SAMPLED_PLD.match(text)
    if m:
        return f"by the accountant, as a sampled {m.group(1)} mechanism"
    return text


#: ``knob.KEY`` (the calibrated noise in JSON) -> the column it is shown in.
KNOB_LABELS: Mapping[str, str] = {
    "value": NOISE_CERTIFIED,
    "impossible_below": NOISE_IMPOSSIBLE,
}

_JSON_REF = re.compile(r"\b(details|knob)\.([A-Za-z_][A-Za-z0-9_]*)")


def plain_references(text: str) -> str:
    """``text`` with each ``details.KEY`` or ``knob.KEY`` it names written as the label
    tables show (in quotes); keys without a label are left as they are."""

    def sub(m: re.Match[str]) -> str:
        labels = DETAIL_LABELS if m.group(1) == "details" else KNOB_LABELS
        key = m.group(2)
        return f"“{labels[key]}”" if key in labels else m.group(0)

    return _JSON_REF.sub(sub, text)
