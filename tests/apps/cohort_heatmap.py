"""What the tests read of ``@modelcontextprotocol/server-cohort-heatmap``'s app, whichever host shows it.

The server draws its numbers at random around a curve of the chosen metric:
month 1 of ``retention`` is 0.75 + 0.08 ± 0.04 (79 to 87 shown), of
``active`` 0.60 + 0.05 ± 0.05 (60 to 70 shown); cohort sizes are 1,000 to
4,999 users.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playwright.sync_api import Frame

COHORT_HEATMAP = "@modelcontextprotocol/server-cohort-heatmap@2.0.3"

# The grid as the app draws it: per cohort row its label (month, size) and its cells' numbers, left to right.
# Class names are the package's CSS-module names (_label_<hash>, _cell_<hash>; an empty cell is _cellEmpty_).
ROWS = """() => [...document.querySelectorAll('[class^="_label_"]')].map(label => {
  const cells = [];
  for (let next = label.nextElementSibling; next && !next.className.startsWith('_label_');
       next = next.nextElementSibling) {
    if (next.className.startsWith('_cell_')) cells.push(Number(next.textContent));
  }
  return {cohort: label.children[0].textContent, users: label.children[1].textContent, cells};
})"""


def rows_in(app: Frame, low: int, high: int) -> list[dict[str, Any]] | None:
    """The grid's rows once it holds 12 cohorts whose month-1 numbers all lie in [low, high]; else None."""
    rows: list[dict[str, Any]] = app.evaluate(ROWS)
    with_month_one = [row for row in rows if len(row["cells"]) > 1]
    if len(rows) != 12 or len(with_month_one) != 11:
        return None
    return rows if all(low <= row["cells"][1] <= high for row in with_month_one) else None


RETENTION = (79, 87)
"""Month 1's numbers for ``metric=retention``."""
ACTIVE = (60, 70)
"""Month 1's numbers for ``metric=active``."""
