"""Small HTML building blocks shared by the run report and the leaderboard page.

Pages are self-contained (inline CSS, inline script, images as data URIs): they open from disk,
offline, and are copied around as one file. Everything from a run record is escaped.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1200px;
       padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; margin-bottom: .2em; } h2 { font-size: 1.15em; margin-top: 2em; }
.sub { color: #555; margin-top: 0; }
body.wide { max-width: none; } body.wide table { font-size: 13px; }
.scroll { overflow-x: auto; } .scroll td { overflow-wrap: anywhere; }  /* a long option value wraps, not the table */
table { border-collapse: collapse; margin: .6em 0; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid #ddd; padding: .3em .7em; text-align: left; vertical-align: top; }
td.num { text-align: right; white-space: nowrap; } td a { white-space: nowrap; }
th { background: #f4f4f4; }
th button { all: unset; cursor: pointer; }
th[aria-sort=ascending] button::after { content: " \\25B2"; }
th[aria-sort=descending] button::after { content: " \\25BC"; }
.badge { display: inline-block; padding: 0 .45em; border-radius: .6em; font-size: .8em; background: #fde7c6;
         color: #7a4500; white-space: nowrap; }
.banner { background: #fff4e0; border-left: 4px solid #e69b00; padding: .5em .9em; }
.headline { font-size: 1.1em; }
figure { margin: 1.2em 0 2em; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { color: #444; max-width: 60em; }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: .9em; }
small { color: #666; }
svg.chart { display: block; margin-top: .25em; } .nowrap { white-space: nowrap; }
p.legend { color: #444; font-size: .9em; } p.legend span { margin-right: 1.4em; white-space: nowrap; }
p.legend svg { vertical-align: -1px; }
.ns { color: #a33; font-size: .85em; white-space: nowrap; }
table.grouped tr:first-child td { border-bottom: none; }
tr.more td { padding-top: 0; }
tr.more summary { cursor: pointer; color: #666; font-size: .85em; width: max-content; }
dl.more { display: grid; grid-template-columns: repeat(auto-fill, minmax(15em, 1fr)); gap: .2em 1.5em;
          margin: .3em 0 .6em; }
dl.more dt { color: #666; font-size: .85em; } dl.more dd { margin: 0; } dl.more .wide { grid-column: 1 / -1; }
"""

# Click a header to sort by it; again to reverse. Numbers sort as numbers (data-sort holds the
# raw value), empty cells stay last either way. A "grouped" table sorts its <tbody>s (a row and its
# details) by their first row.
SORT_SCRIPT = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  var heads = table.tHead.rows[0].cells;
  var grouped = table.classList.contains("grouped");
  Array.prototype.forEach.call(heads, function (th, col) {
    th.querySelector("button").addEventListener("click", function () {
      var asc = th.getAttribute("aria-sort") !== "ascending";
      Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      var body = grouped ? table : table.tBodies[0];
      var entries = grouped ? table.tBodies : body.rows;
      var key = function (entry) {
        var cell = (grouped ? entry.rows[0] : entry).cells[col];
        var raw = cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent.trim();
        var num = Number(raw);
        return raw === "" ? null : (isNaN(num) ? raw.toLowerCase() : num);
      };
      var rows = Array.prototype.slice.call(entries).map(function (r, i) { return [key(r), i, r]; });
      rows.sort(function (a, b) {
        if (a[0] === null || b[0] === null) { return (a[0] === null) - (b[0] === null) || a[1] - b[1]; }
        var c = typeof a[0] === typeof b[0] ? (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)
                                            : (typeof a[0] === "number" ? -1 : 1);
        return (asc ? c : -c) || a[1] - b[1];
      });
      rows.forEach(function (r) { body.appendChild(r[2]); });
    });
  });
});
"""


@dataclass(frozen=True)
class Cell:
    html: str  # already safe HTML
    sort: str | None = None  # the raw value the page sorts on
    numeric: bool = False


def cell(text: object, sort: float | str | None = None, numeric: bool = False) -> Cell:
    """A cell holding plain text (escaped here)."""
    return Cell(escape(str(text)), None if sort is None else str(sort), numeric)


def table(
    headers: list[str], rows: list[list[Cell]], sortable: bool = False, table_id: str = "",
    details: list[str] | None = None,
) -> str:  # fmt: skip
    """A table; with `details` (safe HTML, one per row), each row is followed by a full-width row
    holding its details, the two in a <tbody> of their own so that sorting keeps them together."""
    head = "".join(
        f"<th><button type=button>{escape(h)}</button></th>" if sortable else f"<th>{escape(h)}</th>" for h in headers
    )
    lines = ["<tr>" + "".join(_td(c) for c in row) + "</tr>" for row in rows]
    classes = ["sortable"] * sortable + ["grouped"] * (details is not None)
    attrs = (f' id="{escape(table_id)}"' if table_id else "") + (f' class="{" ".join(classes)}"' if classes else "")
    if details is None:
        body = "<tbody>\n" + "\n".join(lines) + "\n</tbody>"
    else:
        body = "\n".join(f'<tbody>{line}\n<tr class=more><td colspan="{len(headers)}">{more}</td></tr></tbody>'
                         for line, more in zip(lines, details, strict=True))  # fmt: skip
    return f"<div class=scroll><table{attrs}>\n<thead><tr>{head}</tr></thead>\n{body}\n</table></div>"


def _td(c: Cell) -> str:
    attrs = (' class="num"' if c.numeric else "") + (f' data-sort="{escape(c.sort)}"' if c.sort is not None else "")
    return f"<td{attrs}>{c.html}</td>"


def page(title: str, body: str, sortable: bool = False, wide: bool = False) -> str:
    script = f"<script>{SORT_SCRIPT}</script>\n" if sortable else ""
    body_tag = "<body class=wide>" if wide else "<body>"
    return (
        "<!DOCTYPE html>\n<html lang=en>\n<head>\n<meta charset=utf-8>\n"
        '<meta name=viewport content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n<style>{CSS}</style>\n</head>\n{body_tag}\n{body}\n{script}</body>\n</html>\n"
    )
