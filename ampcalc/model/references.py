"""The works ampcalc cites: one list, and the citation objects results carry.

Every user-facing citation (a result's ``basis``, a warning that names a theorem, a
plot caption, ``ampcalc schemes``) is built from the entries here, so a reader always
gets the same readable short form ("Bun et al., Theorem 2.2") and, in JSON, the full
reference under the document's top-level ``references``.

A field of a ``Reference`` is filled only where a text we hold states it; ``source``
says which text. For the five papers ampcalc implements that is the paper's own title
page and header (kept as plain text, see the comment at each entry); a field the paper
does not state about itself is left out. Other works are described by what a
bibliography of one of those papers (or, where none does, a quoted public page) says.
Pages of ampcalc's own documentation (``docs/``) are references too: they hold the
derivations the papers do not state.

Where a reference has no authors, its short form is its title (or ``label``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Reference:
    """One cited work; ``None``/empty fields are not stated by any text we hold.

    Attributes:
        key: the stable identifier used in JSON (``basis[].reference``).
        title: the work's title as printed.
        authors: full names in the printed order.
        year: year of the version cited.
        venue: where it appeared, as printed (or "working paper", a docs page, ...).
        arxiv: arXiv identifier, as printed.
        doi: DOI, as printed.
        url: a location (ampcalc's docs pages, software repositories).
        label: an explicit short form (ampcalc's own pages and software only).
        source: where each stated field was read (provenance; not emitted in JSON).
    """

    key: str
    title: str
    authors: tuple[str, ...] = ()
    year: int | None = None
    venue: str | None = None
    arxiv: str | None = None
    doi: str | None = None
    url: str | None = None
    label: str | None = None
    source: str = ""

    @property
    def short(self) -> str:
        """The readable short form: "Bun et al. 2020", "Hu et al.", or the title."""
        if self.label is not None:
            return self.label
        if not self.authors:
            return self.title
        names = [a.split()[-1] for a in self.authors]
        if len(names) == 1:
            who = names[0]
        elif len(names) == 2:
            who = f"{names[0]} and {names[1]}"
        else:
            who = f"{names[0]} et al."
        return f"{who} {self.year}" if self.year is not None else who

    def __str__(self) -> str:
        return self.short

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``references`` entry: only the fields a text states."""
        out: dict[str, Any] = {"short": self.short}
        if self.authors:
            out["authors"] = list(self.authors)
        out["title"] = self.title
        for name in ("year", "venue", "arxiv", "doi", "url"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out

    def full(self) -> str:
        """The full reference on one line (docs/references.md, table footers)."""
        parts = []
        if self.authors:
            parts.append(", ".join(self.authors) + ".")
        parts.append(f"“{self.title}”.")
        tail = [x for x in (self.venue, str(self.year) if self.year else None) if x]
        if tail:
            parts.append(", ".join(tail) + ".")
        if self.arxiv:
            parts.append(f"arXiv:{self.arxiv}.")
        if self.doi:
            parts.append(f"doi:{self.doi}.")
        if self.url:
            parts.append(f"<{self.url}>.")
        return " ".join(parts)


@dataclass(frozen=True)
class Citation:
    """One ``basis`` item: a reference and where in it (``None``: the work as a whole)."""

    reference: Reference
    where: str | None = None

    def __str__(self) -> str:
        return self.reference.short + (f", {self.where}" if self.where else "")

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``basis`` item: ``{"reference": key, "where": ...}``."""
        return {"reference": self.reference.key, "where": self.where}


def cite(paper: Reference, where: str | None = None) -> Citation:
    """A basis item, e.g. ``cite(BUN_2022, "Theorem 2.2")`` ("Bun et al., Theorem 2.2")."""
    return Citation(paper, where)


# ---- the five papers ampcalc implements ------------------------------------------------
# Each field is read from the paper's own first page (file in the project's paper set):
# Bun et al., Bun et al. 2020, Hu et al.,
# Personalized Privacy Amplification via Importance Sampling, Cohen et al. 2021.

BUN_2022 = Reference(
    key="bun-sampling-schemes",
    title=(
        "Controlling Privacy Loss in Sampling Schemes: an Analysis of Stratified and "
        "Cluster Sampling"
    ),
    authors=("Mark Bun", "Jörg Drechsler", "Marco Gaboardi", "Audra McMillan", "Jayshree Sarathy"),
    source=(
        "title and authors from the paper's first page; the text states no year, venue or "
        "identifier about itself (the bibliography of 'Personalized Privacy Amplification "
        "via Importance Sampling' lists it as 'Bun et al. (2022) ... In 3rd Symposium on "
        "Foundations of Responsible Computing, FORC 2022, ... volume 218 of LIPIcs'; those "
        "fields are not filled from another work's citation)"
    ),
)
# (The name BUN_2022 predates this list; the paper itself states no year.)

BUN_2020_WP = Reference(
    key="bun-survey-sampling",
    title="Controlling Privacy Loss in Survey Sampling",
    authors=("Mark Bun", "Jörg Drechsler", "Marco Gaboardi", "Audra McMillan"),
    year=2020,
    venue="Working Paper",
    arxiv="2007.12674v1",
    source=(
        "title, '(Working Paper)' and authors from the first page; arXiv identifier and "
        "date from its arXiv stamp 'arXiv:2007.12674v1 [stat.ME] 24 Jul 2020'"
    ),
)

HU_2023 = Reference(
    key="hu-accuracy-gains",
    title="Accuracy Gains from Privacy Amplification Through Sampling for Differential Privacy",
    authors=("Jingchen Hu", "Jörg Drechsler", "Hang J. Kim"),
    source=(
        "title and authors from the first page; the text states no year, venue or "
        "identifier about itself"
    ),
)

IMPORTANCE = Reference(
    key="importance-sampling",
    title="Personalized Privacy Amplification via Importance Sampling",
    source=(
        "title from the first page; the text we hold names no authors, year, venue or identifier"
    ),
)

PWS = Reference(
    key="cohen-weighted-sampling",
    title="Differentially Private Weighted Sampling",
    authors=("Edith Cohen", "Ofir Geri", "Tamas Sarlos", "Uri Stemmer"),
    year=2021,
    venue=(
        "Proceedings of the 24th International Conference on Artificial Intelligence and "
        "Statistics (AISTATS) 2021, PMLR volume 130"
    ),
    source=(
        "title and authors from the first page; venue and year from its footer "
        "'Proceedings of the 24th International Conference on Artificial Intelligence "
        "and Statistics (AISTATS) 2021, San Diego, California, USA. PMLR: Volume 130.'"
    ),
)

# ---- works the code cites that are not among the five ----------------------------------

BBG18 = Reference(
    key="balle-barthe-gaboardi-2018",
    title=("Privacy amplification by subsampling: Tight analyses via couplings and divergences"),
    authors=("Borja Balle", "Gilles Barthe", "Marco Gaboardi"),
    year=2018,
    venue=("Advances in Neural Information Processing Systems 31 (NeurIPS 2018), pp. 6280–6290"),
    source=(
        "reference [5] of Bun et al. (sampling schemes): 'BALLE, B., BARTHE, G., AND "
        "GABOARDI, M. Privacy amplification by subsampling: Tight analyses via couplings "
        "and divergences. In Advances in Neural Information Processing Systems 31: Annual "
        "Conference on Neural Information Processing Systems 2018, NeurIPS 2018, ... "
        "(2018), pp. 6280–6290'; full first names from the bibliography of "
        "'Personalized Privacy Amplification via Importance Sampling'"
    ),
)

KOV15 = Reference(
    key="kairouz-oh-viswanath-2015",
    title="The composition theorem for differential privacy",
    authors=("Peter Kairouz", "Sewoong Oh", "Pramod Viswanath"),
    year=2015,
    venue="International Conference on Machine Learning (ICML), PMLR, pp. 1376–1385",
    source=(
        "bibliography of 'Personalized Privacy Amplification via Importance Sampling': "
        "'Peter Kairouz, Sewoong Oh, and Pramod Viswanath. The composition theorem for "
        "differential privacy. In International Conference on Machine Learning, pp. "
        "1376–1385. PMLR, 2015.'"
    ),
)

DRS22 = Reference(
    key="dong-roth-su",
    title="Gaussian differential privacy",
    authors=("Jinshuo Dong", "Aaron Roth", "Weijie J. Su"),
    year=2019,
    venue="CoRR",
    arxiv="1905.02383",
    source=(
        "bibliography of 'Personalized Privacy Amplification via Importance Sampling': "
        "'Jinshuo Dong, Aaron Roth, and Weijie J. Su. Gaussian differential privacy. "
        "CoRR, abs/1905.02383, 2019.'"
    ),
)

BALLE_WANG = Reference(
    key="balle-wang-2018",
    title=(
        "Improving the Gaussian Mechanism for Differential Privacy: Analytical Calibration "
        "and Optimal Denoising"
    ),
    authors=("Balle", "Wang"),
    year=2018,
    venue="ICML",
    url="http://proceedings.mlr.press/v80/balle18a/balle18a.pdf",
    source=(
        "no text in the project's sources; quoted from public pages: 'Balle and Wang "
        "(2018), Improving the Gaussian Mechanism for Differential Privacy: Analytical "
        "Calibration and Optimal Denoising, ICML' (rmoriedata's dpgmean manual) and "
        "'[Balle and Wang, ICML'18]. Reference: "
        "http://proceedings.mlr.press/v80/balle18a/balle18a.pdf' (TensorFlow Federated)"
    ),
)

CKS20 = Reference(
    key="canonne-kamath-steinke-2020",
    title="The Discrete Gaussian for Differential Privacy",
    authors=("Clément L. Canonne", "Gautam Kamath", "Thomas Steinke"),
    year=2020,
    venue="CoRR",
    arxiv="2004.00010",
    source=(
        "no text in the project's sources; OpenDP's bibliography entry CKS20 "
        "(author, title, journal = CoRR, volume = abs/2004.00010, year = 2020)"
    ),
)

SU16 = Reference(
    key="su-et-al-2016",
    title="Differentially private k-means clustering",
    authors=("Dong Su", "Jianneng Cao", "Ninghui Li", "Elisa Bertino", "Hongxia Jin"),
    year=2016,
    venue=(
        "Proceedings of the Sixth ACM Conference on Data and Application Security and "
        "Privacy, pp. 26–37"
    ),
    source=(
        "bibliography of 'Personalized Privacy Amplification via Importance Sampling': "
        "'Dong Su, Jianneng Cao, Ninghui Li, Elisa Bertino, and Hongxia Jin. "
        "Differentially private k-means clustering. In Proceedings of the Sixth ACM "
        "Conference on Data and Application Security and Privacy, pp. 26–37, 2016.'"
    ),
)

DP_ACCOUNTING = Reference(
    key="dp-accounting",
    title="dp_accounting: privacy loss distributions (PLD)",
    venue="Google differential-privacy library",
    url="https://github.com/google/differential-privacy",
    label="Google dp_accounting",
    source="the project's style guide names google/differential-privacy, python/dp_accounting",
)

DGKKM22 = Reference(
    key="doroshenko-connect-the-dots",
    title="Connect the Dots: Tighter Discrete Approximations of Privacy Loss Distributions",
    authors=(
        "Vadym Doroshenko",
        "Badih Ghazi",
        "Pritish Kamath",
        "Ravi Kumar",
        "Pasin Manurangsi",
    ),
    year=2022,
    arxiv="2207.04380",
    source=(
        "no text in the project's sources; quoted from dp_accounting's docstring of "
        "pld_pmf.create_pmf_pessimistic_connect_dots: 'Title: Connect the Dots: Tighter "
        "Discrete Approximations of Privacy Loss Distributions; Authors: V. Doroshenko, "
        "B. Ghazi, P. Kamath, R. Kumar, P. Manurangsi; Link: "
        "https://arxiv.org/abs/2207.04380' (first names and year from the arXiv listing)"
    ),
)

ZDW22 = Reference(
    key="zhu-dong-wang-2022",
    title="Optimal Accounting of Differential Privacy via Characteristic Function",
    authors=("Yuqing Zhu", "Jinshuo Dong", "Yu-Xiang Wang"),
    year=2022,
    venue="AISTATS 2022, PMLR 151",
    arxiv="2106.08567",
    source="no text in the project's sources; quoted from the arXiv listing 2106.08567",
)

# ---- ampcalc's own documentation -------------------------------------------------------

DERIVATIONS = Reference(
    key="ampcalc-derivations",
    title="ampcalc documentation: derivations not stated in the papers",
    venue="ampcalc documentation",
    url="docs/derivations.md",
    label="ampcalc derivations",
    source="this repository",
)

CLUSTER_DOCS = Reference(
    key="ampcalc-cluster-docs",
    title="ampcalc documentation: cluster-type designs",
    venue="ampcalc documentation",
    url="docs/cluster.md",
    label="ampcalc cluster docs",
    source="this repository",
)

STRATIFIED_DOCS = Reference(
    key="ampcalc-stratified-docs",
    title="ampcalc documentation: stratified designs",
    venue="ampcalc documentation",
    url="docs/stratified.md",
    label="ampcalc stratified docs",
    source="this repository",
)

#: Every reference, in the order docs/references.md lists them.
REFERENCES: dict[str, Reference] = {
    r.key: r
    for r in (
        BUN_2022,
        BUN_2020_WP,
        HU_2023,
        IMPORTANCE,
        PWS,
        BBG18,
        BALLE_WANG,
        CKS20,
        DRS22,
        KOV15,
        SU16,
        DGKKM22,
        ZDW22,
        DP_ACCOUNTING,
        DERIVATIONS,
        CLUSTER_DOCS,
        STRATIFIED_DOCS,
    )
}


def derivation(section: str) -> Citation:
    """A section of ``docs/derivations.md``, e.g. ``derivation("§2 Poisson, replace-one")``."""
    return Citation(DERIVATIONS, section)


# ---- reading citations back from JSON documents ----------------------------------------


def describe(item: Citation | Mapping[str, Any] | str) -> str:
    """A basis item in words: "Bun et al., Theorem 2.2" (JSON dicts and objects alike)."""
    if isinstance(item, Citation):
        return str(item)
    if isinstance(item, Mapping):
        ref = REFERENCES.get(str(item.get("reference")))
        name = ref.short if ref is not None else str(item.get("reference"))
        where = item.get("where")
        return name + (f", {where}" if where else "")
    return str(item)


def describe_all(items: Iterable[Citation | Mapping[str, Any] | str]) -> str:
    """Basis items joined with "; " (table notes, plot captions)."""
    return "; ".join(describe(i) for i in items)


def _by_length() -> list[Reference]:
    return sorted(REFERENCES.values(), key=lambda r: len(r.short), reverse=True)


def _walk(value: Any) -> Iterator[Any]:
    yield value
    if isinstance(value, Mapping):
        for v in value.values():
            yield from _walk(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _walk(v)


def keys_used(document: Any) -> list[str]:
    """The keys of the references a JSON document cites, in list order: every
    ``{"reference": key, ...}`` item, and every short form named in its text (longest
    first, so "Bun et al. 2020" is not also read as "Bun et al.")."""
    found: set[str] = set()
    texts: set[str] = set()
    for node in _walk(document):
        if isinstance(node, Mapping) and "reference" in node and "where" in node:
            key = node.get("reference")
            if isinstance(key, str) and key in REFERENCES:
                found.add(key)
        elif isinstance(node, str):
            texts.add(node)
    # only the short forms that occur at all (a regular expression each costs a compile)
    shorts = [r for r in _by_length() if any(r.short in t for t in texts)]
    patterns = [(r.key, re.compile(re.escape(r.short) + r"(?!\w)")) for r in shorts]
    for text in texts:
        for key, pattern in patterns:
            if pattern.search(text):
                found.add(key)
                text = pattern.sub(" ", text)
    return [k for k in REFERENCES if k in found]


def references_used(document: Any) -> dict[str, dict[str, Any]]:
    """The JSON ``references`` map of a document: key -> the full reference."""
    return {k: REFERENCES[k].to_dict() for k in keys_used(document)}


def footer(document: Any) -> list[str]:
    """The "references:" lines under a table citing these works (empty if none)."""
    keys = keys_used(document)
    if not keys:
        return []
    lines = ["references:"]
    for key in keys:
        ref = REFERENCES[key]
        lead = "" if ref.short == ref.title else f"{ref.short}: "
        lines.append(f"  - {lead}{ref.full()}")
    return lines
