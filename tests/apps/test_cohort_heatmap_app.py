"""``mcp-sync app`` shows ``@modelcontextprotocol/server-cohort-heatmap``, an official React app, in headless Chromium.

The server (over stdio) has one tool, ``get-cohort-data``, whose app
(``ui://get-cohort-data/mcp-app.html``) draws a cohort retention heatmap.
The app does not draw the host's tool result: on mount, and whenever its
Metric or Period selector changes, it calls ``get-cohort-data`` itself
(``callServerTool``), so every number it shows came back through our host
from the server. Its numbers are drawn at random in a band of the chosen
metric (:mod:`cohort_heatmap`): that they move from the ``retention`` band
to the ``active`` band after the app's own selector changed shows that its
``tools/call`` reached the server with the new argument and that the
server's answer reached the app.
"""

from __future__ import annotations

import signal

import pytest
from browsing import WAIT, app_command, app_frame, browser, frame_follows_app, npm_app_server, until
from cohort_heatmap import ACTIVE, COHORT_HEATMAP, RETENTION, rows_in

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]


def test_the_heatmap_is_drawn_from_its_own_server_calls_and_its_metric_selector_calls_the_server_again() -> None:
    with app_command(npm_app_server(COHORT_HEATMAP), "get-cohort-data") as (process, url), browser() as chromium:
        page = chromium.new_page()
        console: list[str] = []
        page.on("console", lambda message: console.append(message.text))
        page.goto(url, timeout=WAIT * 1000)
        app = app_frame(page)

        # The handshake, then the host's tool input and result (the app's App class says it parsed them).
        until(lambda: app.locator("h1").count() == 1, "the app to render", page)
        assert app.locator("h1").inner_text() == "Cohort Retention Analysis"
        until(lambda: any("ui/notifications/tool-result" in line for line in console), "the tool result", page)
        assert any("ui/notifications/tool-input" in line for line in console)

        # Its own tools/call on mount, answered by the server: 12 monthly cohorts, a triangle of cells, each row
        # starting at 100%, month 1 in the retention band, cohort sizes of 1,000 to 4,999 users.
        first = until(lambda: rows_in(app, *RETENTION), "the retention heatmap", page)
        assert [len(row["cells"]) for row in first] == list(range(12, 0, -1))
        assert all(row["cells"][0] == 100 for row in first)
        assert all(1000 <= int(row["users"].replace(",", "")) < 5000 for row in first)
        calls = sum("method: tools/call" in line for line in console)
        assert calls >= 1

        # The app's own Metric selector: a new tools/call with metric=active, whose answer the app draws.
        app.locator("select").first.select_option("active")
        second = until(lambda: rows_in(app, *ACTIVE), "the active-users heatmap", page)
        assert sum("method: tools/call" in line for line in console) == calls + 1
        assert [row["cohort"] for row in second] == [row["cohort"] for row in first]
        assert [row["users"] for row in second] != [row["users"] for row in first]  # drawn anew by the server

        # size-changed: the frame follows the app's height (it starts at 320px; the heatmap is taller).
        assert frame_follows_app(page, app) > 320

        # Ctrl-C: ui/resource-teardown sent, and answered by the app.
        process.send_signal(signal.SIGINT)
        until(lambda: page.locator("body[data-closed]").count() == 1, "the page to hear the view closed", page)
        _, stderr = process.communicate(timeout=WAIT)
    assert process.returncode == 0, stderr
    assert "mcp-sync: closed (the app)" in stderr
