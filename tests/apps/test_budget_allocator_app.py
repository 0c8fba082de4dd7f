"""``mcp-sync app`` shows ``@modelcontextprotocol/server-budget-allocator``, an official app, in headless Chromium.

The server (over stdio) has one tool, ``get-budget-data``, whose app
(``ui://budget-allocator/mcp-app.html``, Chart.js) builds everything from
the tool result the host delivers: a slider per budget category, the
budget presets, the company stages and their benchmarks. Its controls
(sliders, the budget and stage selectors) make no call to the server and
send no ``ui/update-model-context``: they recompute from the delivered
result in the page (its package registers tools of its own for a host to
call, which this host does not offer). So the test asserts what they do:
the totals and the comparison with the server's benchmarks change, and no
``tools/call`` leaves the app.
"""

from __future__ import annotations

import signal

import pytest
from browsing import WAIT, app_command, app_frame, browser, frame_follows_app, npm_app_server, until

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

BUDGET_ALLOCATOR = "@modelcontextprotocol/server-budget-allocator@2.0.3"
CATEGORIES = ["Marketing", "Engineering", "Operations", "Sales", "R&D"]
"""The server's categories, with their default shares below."""
DEFAULT_SHARES = ["25.0%", "35.0%", "15.0%", "15.0%", "10.0%"]


def test_the_app_is_built_from_the_tool_result_and_its_controls_recompute_without_calling_the_server() -> None:
    with app_command(npm_app_server(BUDGET_ALLOCATOR), "get-budget-data") as (process, url), browser() as chromium:
        page = chromium.new_page()
        console: list[str] = []
        page.on("console", lambda message: console.append(message.text))
        page.goto(url, timeout=WAIT * 1000)
        app = app_frame(page)

        # The handshake, the tool input, then the result: the app builds its controls from the server's data.
        until(lambda: app.locator(".slider-row").count() == 5, "the sliders built from the tool result", page)
        assert any("ui/notifications/tool-input" in line for line in console)
        assert any("UI initialized with 24 months of history" in line for line in console)  # the server's history
        assert app.locator(".slider-row .label-text").all_inner_texts() == CATEGORIES
        assert app.locator(".slider-row .percent").all_inner_texts() == DEFAULT_SHARES
        presets = app.locator("#budget-selector option").all_inner_texts()
        assert presets == ["$50,000", "$100,000", "$250,000", "$500,000"]
        assert app.locator("#budget-selector").input_value() == "100000"
        assert app.locator("#stage-selector option").all_inner_texts() == ["Seed", "Series A", "Series B", "Growth"]
        assert app.locator("#stage-selector").input_value() == "Series A"
        assert " ".join(app.locator("#status-bar").inner_text().split()) == "Allocated: $100,000 / $100,000"

        # size-changed: the frame follows the app's height (it starts at 320px; the app is taller).
        assert frame_follows_app(page, app) > 320

        # Its controls: Marketing to 40% overspends the budget, and the comparison uses the server's benchmarks
        # (Series A's Marketing median is 25%); a larger preset rescales the totals. All in the page.
        app.locator(".slider-row[data-category-id='marketing'] .slider").fill("40")
        until(lambda: "Over" in app.locator("#status-bar").inner_text(), "the budget to show overspent", page)
        assert " ".join(app.locator("#status-bar").inner_text().split()) == "Allocated: $115,000 / $100,000 Over"
        comparison = " ".join(app.locator("#comparison-summary").inner_text().split())
        assert comparison == "vs. Industry: Marketing 15% above avg"
        app.locator("#budget-selector").select_option("250000")
        until(lambda: "$250,000" in app.locator("#status-bar").inner_text(), "the new budget", page)
        assert " ".join(app.locator("#status-bar").inner_text().split()) == "Allocated: $287,500 / $250,000 Over"
        assert not any("method: tools/call" in line or "update-model-context" in line for line in console)

        # Ctrl-C: ui/resource-teardown sent, and answered by the app (with an error: it has no teardown handler).
        process.send_signal(signal.SIGINT)
        until(lambda: page.locator("body[data-closed]").count() == 1, "the page to hear the view closed", page)
        _, stderr = process.communicate(timeout=WAIT)
    assert process.returncode == 0, stderr
    assert "mcp-sync: closed (the app)" in stderr
