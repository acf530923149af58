"""Size caps on user input: one table, so the documentation and the messages agree.

Every cap keeps one run of ``bound``/``invert`` within about a second on a laptop and its
memory small. An input above a cap is refused with a ``DesignError`` that names the field,
the cap and, where one exists, the closed-form alternative (e.g. ``{count, size}`` clusters,
a binomial or normal size distribution, a ``file:`` of sizes), which stays uncapped.
``docs/limits.md`` lists them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Limit:
    """One cap: its value, what it bounds, and what to use instead."""

    value: int
    what: str
    alternative: str = ""

    def message(self, got: int | float) -> str:
        """``{what}: {got} is above the cap of {value}[; alternative]``."""
        shown = f"{got:,}" if isinstance(got, int) else f"{got:.6g}"
        text = f"{self.what}: {shown} is above the limit of {self.value:,}"
        return text + (f"; {self.alternative}" if self.alternative else "")


LIMITS: dict[str, Limit] = {
    "file_bytes": Limit(50 * 1024 * 1024, "design file size in bytes"),
    "yaml_nodes": Limit(
        100_000,
        "YAML nodes (keys, values and list items) in a design file",
        "put long lists of sizes or records in a data file (`file:`)",
    ),
    "yaml_aliases": Limit(100, "YAML aliases (*name) in a design file"),
    "yaml_depth": Limit(64, "nesting depth of a design file"),
    "epsilon": Limit(
        1_000_000,
        "an ε (mechanism ε, a release's ε, their sum, a target ε′)",
        "an ε this large gives no privacy; the bounds are meaningless above it",
    ),
    "verify_epsilon": Limit(
        34,
        "M's ε under a relation of verify's exact programme (ε_R = 2ε under replace-one "
        "for an add-remove M)",
        "the programme's constraints carry e^ε and its solver takes coefficients up to "
        "10^15 (e^34.5); `ampcalc bound` gives the bounds at any ε",
    ),
    "releases": Limit(10_000, "releases in `mechanism.releases`"),
    "inline_list": Limit(
        10_000,
        "items in an inline list (cluster sizes, size measures, inclusion probabilities)",
        "put the values in a data file (`{file: sizes.csv}`) or, for equal clusters, use "
        "`{count: k, size: n}`",
    ),
    "pmf_values": Limit(
        1_000_000,
        "entries of an explicit size pmf (inline or `file:`)",
        "use `distribution: binomial` or `normal`, which have no cap",
    ),
    "size_window": Limit(
        1_000_000,
        "sizes m evaluated one by one for the tilted size distribution (its spread at this "
        "ε, up to N + 1)",
        "`distribution: binomial`, `uniform`, and `normal` well inside [0, N] are closed "
        "forms with no limit",
    ),
    "strata": Limit(100_000, "strata in a stratified design"),
    "pld_points": Limit(
        10_000_000,
        "grid points of one privacy-loss distribution of the PLD accountant (a release, "
        "its self-composition or a running total)",
        "fewer releases, or a coarser discretization interval (`budget --discretization`, "
        "the ledger's `discretization:`)",
    ),
    "accountant_work": Limit(
        40_000_000,
        "grid points the PLD accountant builds, self-composes and composes in one total "
        "(summed over the releases or ledger entries)",
        "fewer or grouped entries (one entry with `count: k` for identical releases), or a "
        "coarser discretization interval (`budget --discretization`)",
    ),
    "line_chars": Limit(
        1024 * 1024,
        "characters in one line of a pws sample (its header, or a line read to complete a chunk)",
        "a sample line holds a key, a frequency and a few columns",
    ),
    "pws_extend": Limit(
        10_000_000,
        "largest frequency the sanitiser extends its table to (rows above max_frequency)",
        "check the frequency column: a key's frequency counts its elements",
    ),
    "pws_row_entries": Limit(
        100_000_000,
        "entries of Algorithm 4's rows computed one by one by `pws sanitize --frequencies` "
        "(rows up to where π_i stops changing, about 2L(ε, δ) + 2 entries each)",
        "drop --frequencies (keys only), or use a design whose q_i reaches 1 at a lower "
        "frequency (a larger threshold τ or weight_power)",
    ),
    "sweep_design_points": Limit(
        1_000_000,
        "grid points of `sweep` axes other than M's ε (or the target of `--of invert`/"
        "`plan`): each re-reads the design and is evaluated on its own, about 0.2-0.5 ms",
        "sweep M's ε (or the target) over the long axis: it is evaluated in one call",
    ),
    "plot_points": Limit(
        1_000_000,
        "grid points drawn by `sweep --plot`",
        "draw a coarser grid (a figure shows a few thousand points at most); the rows of "
        "the full grid are written without --plot",
    ),
    "pws_rows": Limit(
        10_000,
        "rows of the PWS table reported by bound/invert (`max_frequency`)",
        "`ampcalc pws table` writes longer tables",
    ),
    "plot_text": Limit(
        200,
        "characters in a figure's title or axis label",
        "a figure shows it on one line: shorten it",
    ),
}


def limit(name: str) -> int:
    """The value of cap ``name``."""
    return LIMITS[name].value
