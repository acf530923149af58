"""Tables for people: the text table of a result, laid out to the terminal's width.

Columns keep their full names where they fit; a narrow terminal wraps headers and
cells, folds the least needed columns first (``PRIORITY``), and colours only a
terminal that shows colour. Nothing else happens here: no maths, no exit codes.
"""

from __future__ import annotations

import functools
import io
import re
import shutil
from collections.abc import Iterable, Sequence

from ampcalc.model.errors import printable

DASH = "-"


#: The width when standard output is not a terminal and COLUMNS is unset.
DEFAULT_WIDTH = 80
#: Narrower than this, no table is readable; tables are drawn at least this wide.
MIN_WIDTH = 20
#: Column priorities by header: a table that does not fit folds its lowest-priority
#: column first (rightmost first among equals). ``KEEP`` columns (and the first column)
#: never fold; columns below ``FOLD_FIRST`` fold before any cell is wrapped.
KEEP = 100
FOLD_FIRST = 30
DEFAULT_PRIORITY = 50
PRIORITY: dict[str, int] = {
    "verdict": KEEP,
    "ε′ upper": KEEP,
    "certified ε": KEEP,
    "valid": KEEP,
    "gain": KEEP,
    "certified": KEEP,
    "ε′ lower": 70,
    "V_n/V_N": 70,
    "impossible above": 60,
    "impossible below": 60,
    "noise scale meeting the target": KEEP,
    "noise scale below which the target is impossible": 60,
    "target ε′": 55,
    "ε (M)": 45,
    "scheme": 40,
    "composed as": 25,
    "δ_n": 35,
    "δ′": 35,
    "δ (M)": 35,
    "guarantee": 10,
    "bounds": 15,
}
#: A column of sentences (a cell of five words or more) wraps before columns fold,
#: down to this width.
PROSE_WIDTH = 24
GAP = "  "
COLOURS = {
    "amplifies": "green",
    "degrades": "red",
    "no-amplification": "yellow",
    "no-guarantee": "yellow",
    "error": "red",
}


def terminal_width() -> int:
    """The width tables are drawn to: COLUMNS when set, else the terminal's width, else
    ``DEFAULT_WIDTH`` (standard output is a file or a pipe); at least ``MIN_WIDTH``."""

    columns = shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
    return max(MIN_WIDTH, columns if columns > 0 else DEFAULT_WIDTH)


@functools.lru_cache(maxsize=4096)
def cells(text: str) -> int:
    """Display width of ``text`` in terminal cells."""
    import unicodedata  # lazy: start-up (bound)

    if text.isascii():
        return len(text)
    n = 0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        n += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return n


_LEAD = re.compile(r"^(\s*(?:(?:[-*•└…]|\d+\.)\s+)?)")


def wrap(text: str, width: int, *, break_long: bool = True) -> list[str]:
    """``text`` wrapped at spaces to ``width`` cells, each of its lines on its own.

    A line that fits is kept as it is. Continuation lines are indented like the text
    after a line's indentation and bullet (``  - ``, ``  └ ``), so a wrapped item stays
    under its bullet. A word is never split unless it alone is wider than the line and
    ``break_long`` is true (then it is cut, as the only way to fit)."""
    out: list[str] = []
    for line in text.split("\n"):
        out.extend(_wrap_line(line.rstrip(), max(1, width), break_long))
    return out


def _wrap_line(line: str, width: int, break_long: bool) -> list[str]:
    if cells(line) <= width:
        return [line]
    lead = _LEAD.match(line).group(1)  # type: ignore[union-attr]  # always matches
    hang = " " * cells(lead)
    if cells(hang) > width // 2:
        lead = hang = ""
    return _greedy([(w, " ") for w in line[len(lead) :].split()], width, lead, hang, break_long)


def _greedy(
    tokens: Sequence[tuple[str, str]], width: int, lead: str, hang: str, break_long: bool
) -> list[str]:
    """Fill lines greedily with ``(token, glue before it)``; the first line starts with
    ``lead``, the others with ``hang``."""
    lines: list[str] = []
    cur, filled = lead, False
    for word, glue in tokens:
        joined = cur + (glue if filled else "") + word
        if cells(joined) <= width:
            cur, filled = joined, True
            continue
        if filled:
            lines.append(cur.rstrip())
            cur, filled = hang, False
        while break_long and cells(cur + word) > width and width > cells(cur):
            cut = _cut(word, width - cells(cur))
            lines.append(cur + word[:cut])
            cur, word = hang, word[cut:]
        cur, filled = cur + word, True
    if filled or not lines:
        lines.append(cur.rstrip())
    return lines


def _cut(word: str, room: int) -> int:
    """How many characters of ``word`` fill ``room`` cells (at least one)."""
    used = 0
    for i, ch in enumerate(word):
        used += cells(ch)
        if used > room:
            return max(1, i)
    return len(word)


def _header_tokens(text: str) -> list[tuple[str, str]]:
    """A header's break opportunities: at spaces, and after a ``_`` or ``.`` between two
    words of three letters or more (so ``noise_variance_optimistic`` wraps between its
    words, never inside one, and ``V_n`` stays whole)."""
    out: list[tuple[str, str]] = []
    for word in text.split():
        segs = re.split(r"([_.])", word)
        cur, glue = segs[0], " "
        for sep, seg in zip(segs[1::2], segs[2::2], strict=True):
            last = re.split(r"[_.]", cur)[-1]
            if len(last) >= 3 and len(seg) >= 3:
                out.append((cur + sep, glue))
                cur, glue = seg, ""
            else:
                cur += sep + seg
        out.append((cur, glue))
    return out


def _header_lines(text: str, width: int) -> list[str]:
    return _greedy(_header_tokens(text), width, "", "", False)


def _longest(tokens: Iterable[str]) -> int:
    return max((cells(t) for t in tokens), default=0)


def _is_sub(row: Sequence[str]) -> bool:
    return bool(row) and row[0][:1].isspace()


def _spans(row: Sequence[str]) -> bool:
    """A per-unit row with only its first cell: drawn across the whole width."""
    return _is_sub(row) and not any(c.strip() for c in row[1:])


class _Layout:
    """Which columns a table shows at a width, how wide, and which fold."""

    def __init__(self, header: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> None:
        self.header = list(header)
        self.width = width
        n = len(header)
        body = [list(r) + [""] * (n - len(r)) for r in rows]
        self.rows = body
        grid = [r for r in body if not _spans(r)]
        main = [r for r in body if not _is_sub(r)]
        cap = max(8, width // 4)
        self.natural: list[int] = []
        self.least: list[int] = []
        for i in range(n):
            col = [r[i] for r in (main if i == 0 else grid)]
            self.natural.append(_longest(col))
            if i == 0:
                least = 0
                for r in grid:
                    lead = _LEAD.match(r[0]).group(1)  # type: ignore[union-attr]
                    words = r[0][len(lead) :].split()
                    least = max(least, min(cap, cells(lead) + _longest(words)))
                self.least.append(least)
            else:
                self.least.append(_longest(w for c in col for w in c.split()))
        self.wish = _longest(r[0] for r in grid)  # the first column with its sub-rows
        self.head_natural = [cells(h) for h in header]
        self.head_least = [_longest(t for t, _ in _header_tokens(h)) for h in header]
        self.priority = [
            KEEP if i == 0 else PRIORITY.get(h, DEFAULT_PRIORITY) for i, h in enumerate(header)
        ]
        self.left = [i < 2 or any(" " in r[i].strip() for r in main) for i in range(n)]
        self.shown = list(range(n))
        self.folded: list[int] = []  # shown under each row as "header: value"
        self.constant: list[tuple[int, str]] = []  # stated once: the same in every row
        self.records = False  # no columns at all: one block of lines per row
        self.widths = self._fit()

    # -- the fitting steps ---------------------------------------------------------------
    def _need(self, cols: Sequence[int], cell: Sequence[int], head: Sequence[int]) -> int:
        return sum(max(cell[i], head[i]) for i in cols) + cells(GAP) * (len(cols) - 1)

    def _fits_unwrapped(self) -> bool:
        return self._need(self.shown, self.natural, self.head_least) <= self.width

    def _fits_wrapped(self) -> bool:
        return self._need(self.shown, self.least, self.head_least) <= self.width

    def _value_in_every_row(self, i: int) -> str | None:
        """The value of column ``i`` when it is the same in every row (of two or more)."""
        main = {r[i] for r in self.rows if not _is_sub(r)}
        subs = {r[i] for r in self.rows if _is_sub(r) and r[i].strip()}
        count = sum(1 for r in self.rows if not _is_sub(r))
        return main.pop() if count > 1 and len(main) == 1 and subs <= main else None

    def _fold(self, i: int) -> None:
        self.shown.remove(i)
        value = self._value_in_every_row(i)
        if value is not None:
            self.constant.append((i, value))
        else:
            self.folded.append(i)

    def _order(self, below: int) -> list[int]:
        """Columns to fold, in order: any column the same in every row (stated once,
        nothing is lost), then those of priority below ``below``, lowest first."""
        cand = [i for i in self.shown if i != 0 and self.priority[i] < KEEP]
        same = [i for i in cand if self._value_in_every_row(i) is not None]
        if 0 in self.shown and len(self.shown) > 1 and self._value_in_every_row(0) is not None:
            if not any(_is_sub(r) for r in self.rows):  # a sweep of one design
                same.append(0)
        rest = [i for i in cand if i not in same and self.priority[i] < below]
        return [
            *sorted(same, key=lambda i: (self.priority[i], -i)),
            *sorted(rest, key=lambda i: (self.priority[i], -i)),
        ]

    def _fit(self) -> dict[int, int]:
        n = len(self.header)
        if self._need(self.shown, self.natural, self.head_natural) <= self.width:
            return {i: max(self.natural[i], self.head_natural[i]) for i in range(n)}
        # headers wrap at their word breaks, prose columns wrap (no narrower than
        # PROSE_WIDTH); then low-priority columns fold, one by one
        prose = [
            i
            for i in self.shown
            if i and any(r[i].count(" ") >= 4 for r in self.rows if not _is_sub(r))
        ]
        if prose:
            cell = [
                max(self.least[i], min(self.natural[i], PROSE_WIDTH)) if i in prose else w
                for i, w in enumerate(self.natural)
            ]
            if self._need(self.shown, cell, self.head_least) <= self.width:
                return self._spread()
        for i in [None, *self._order(FOLD_FIRST)]:
            if i is not None:
                self._fold(i)
            if self._fits_unwrapped():
                return self._spread()
        # then cells wrap at spaces; then more columns fold, lowest priority first
        for i in [None, *self._order(KEEP)]:
            if i is not None:
                self._fold(i)
            if self._fits_unwrapped() or self._fits_wrapped():
                return self._spread()
        self.records = True
        return {}

    def _spread(self) -> dict[int, int]:
        """Widths for the shown columns: as wide as their content where the width allows,
        the widest columns narrowed first (never below a whole word)."""
        lo = {i: max(self.least[i], self.head_least[i]) for i in self.shown}
        hi = {i: max(self.natural[i], self.head_least[i], lo[i]) for i in self.shown}
        room = self.width - cells(GAP) * (len(self.shown) - 1)
        level = max(hi.values(), default=0)
        widths = {i: hi[i] for i in self.shown}
        while sum(widths.values()) > room and level > 0:
            level -= 1
            widths = {i: max(lo[i], min(hi[i], level)) for i in self.shown}
        spare = room - sum(widths.values())
        if 0 in widths:  # room left: per-unit rows under the first column unwrapped
            grow = max(0, min(spare, self.wish - widths[0]))
            widths[0] += grow
            spare -= grow
        for i in self.shown:  # headers back on one line where there is room
            grow = min(spare, max(0, self.head_natural[i] - widths[i]))
            if grow and widths[i] + grow >= self.head_natural[i]:
                widths[i] += grow
                spare -= grow
        return widths

    # -- drawing ------------------------------------------------------------------------
    def lines(self, rule: str) -> list[list[tuple[str, str | None]]]:
        """The table as lines of ``(text, style)`` pieces (style: None, ``bold`` or a
        verdict's colour)."""
        out: list[list[tuple[str, str | None]]] = []
        if self.records:
            for row in self.rows:
                out.extend(self._record(row))
            return out
        heads = {i: _header_lines(self.header[i], self.widths[i]) for i in self.shown}
        depth = max((len(h) for h in heads.values()), default=1)
        for k in range(depth):
            cells_k = []
            for i in self.shown:
                h = heads[i]
                text = h[k] if k < len(h) else ""
                cells_k.append(self._pad(text, i))
            out.append([(GAP.join(cells_k).rstrip(), "bold")])
        out.append([(GAP.join(rule * self.widths[i] for i in self.shown), None)])
        for row in self.rows:
            out.extend(self._row(row))
        for i, value in sorted(self.constant):
            out.extend(
                [(t, None)] for t in wrap(f"{self.header[i]} = {value} in every row", self.width)
            )
        return out

    def _pad(self, text: str, i: int) -> str:
        fill = " " * max(0, self.widths[i] - cells(text))
        return text + fill if self.left[i] else fill + text

    def _row(self, row: Sequence[str]) -> list[list[tuple[str, str | None]]]:
        if _spans(row):
            return [[(t, None)] for t in wrap(row[0], self.width)]
        parts = {i: wrap(row[i], self.widths[i], break_long=i == 0) for i in self.shown}
        depth = max(len(p) for p in parts.values())
        out = []
        for k in range(depth):
            line: list[tuple[str, str | None]] = []
            for j, i in enumerate(self.shown):
                text = parts[i][k] if k < len(parts[i]) else ""
                if j:
                    line.append((GAP, None))
                line.append((self._pad(text, i), COLOURS.get(text.strip())))
            out.append(_rstrip(line))
        extra = [f"{self.header[i]}: {row[i]}" for i in self.folded if row[i].strip(" " + DASH)]
        if extra:
            out.extend([(t, None)] for t in wrap("    " + "; ".join(extra), self.width))
        return out

    def _record(self, row: Sequence[str]) -> list[list[tuple[str, str | None]]]:
        out = [[(t, "bold" if not _is_sub(row) else None)] for t in wrap(row[0], self.width)]
        for i in range(1, len(self.header)):
            if row[i].strip():
                for t in wrap(f"    {self.header[i]}: {row[i]}", self.width):
                    out.append([(t, COLOURS.get(row[i].strip()) if t.endswith(row[i]) else None)])
        return out


def _rstrip(line: list[tuple[str, str | None]]) -> list[tuple[str, str | None]]:
    while line and not line[-1][0].strip():
        line.pop()
    if line:
        text, style = line[-1]
        line[-1] = (text.rstrip(), style)
    return line


def table_lines(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    footer: Sequence[str] = (),
    *,
    width: int | None = None,
    title: str | None = None,
    rule: str = "-",
) -> list[list[tuple[str, str | None]]]:
    """The lines of a table fitted to ``width`` (default ``terminal_width()``), as
    ``(text, style)`` pieces: no line is wider than the width.

    Fitting, in order, until the table fits: headers wrap at word breaks; columns
    the same in every row are dropped (stated once under the table: "δ′ = 0 in every
    row"), then low-priority columns (``PRIORITY`` below ``FOLD_FIRST``: guarantee)
    fold; cells wrap at spaces; other columns fold, lowest priority first; at last
    each row becomes a block of ``header: value`` lines. A folded column's values
    appear under their row as ``header: value`` (unknown values, ``-``, left out).
    Numbers, verdicts and other single words are never split (only an over-long word
    of the first column is). ``footer`` lines are wrapped at word boundaries, continuation
    lines indented under their bullet. Control and bidirectional characters in any of
    the texts are shown escaped (``model.errors.printable``).
    """
    w = max(MIN_WIDTH, width if width is not None else terminal_width())
    # a design's name, a stratum's, a warning quoting a file: a person reads these on a
    # terminal, so no control or bidirectional character reaches it (JSON and CSV keep
    # the exact text)
    header = [printable(h) for h in header]
    rows = [r if "".join(r).isprintable() else [printable(c) for c in r] for r in rows]
    footer = [printable(f, keep="\n") for f in footer]
    title = printable(title) if title else title
    out: list[list[tuple[str, str | None]]] = []
    if title:
        out.extend([(t, "bold")] for t in wrap(title, w))
    out.extend(_Layout(header, rows, w).lines(rule))
    if footer:
        out.append([])
        for line in footer:
            out.extend([(t, None)] for t in wrap(line, w))
    return out


def render_table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    footer: Sequence[str],
    *,
    rich_output: bool,
    title: str | None = None,
    width: int | None = None,
) -> str:
    """A table plus its notes, fitted to ``width`` (``table_lines``): bold headers and
    coloured verdicts on a terminal (colour unless NO_COLOR), plain text otherwise."""
    w = max(MIN_WIDTH, width if width is not None else terminal_width())
    lines = table_lines(
        header, rows, footer, width=w, title=title, rule="━" if rich_output else "-"
    )
    if not rich_output:
        return "".join("".join(t for t, _ in line) + "\n" for line in lines)
    from rich.console import Console  # lazy: start-up (bound)
    from rich.text import Text  # lazy: start-up (bound)

    text = Text()
    for line in lines:
        for piece, style in line:
            text.append(piece, style=style or "")
        text.append("\n")
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=w, highlight=False)
    console.print(text, soft_wrap=True, end="")
    return buffer.getvalue()
