"""Notebook support: the progress bar (with and without tqdm), rich displays, and the example notebook run headless.

The example notebook is executed by ``nbclient`` on an ``ipykernel`` of this
very Python, described by a kernel spec written to a temporary directory, so
nothing is fetched and no installed kernel spec is needed.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from helpers import kernel_spec

from mcp_sync import load_ipython_extension
from mcp_sync.display.ipython import enable_rich_display
from mcp_sync.display.progress import ProgressBar
from mcp_sync.display.render import (
    call_tool_result_html,
    call_tool_result_text,
    content_text,
    get_prompt_result_html,
    get_prompt_result_text,
    read_resource_result_html,
    read_resource_result_text,
    tools_html,
    tools_text,
)
from mcp_sync.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    ProgressNotificationParams,
    PromptMessage,
    ReadResourceResult,
    ResourceLink,
    TextContent,
    TextResourceContents,
    Tool,
)

ROOT = Path(__file__).parent.parent.parent
EXAMPLES = ROOT / "examples"
PNG = "iVBORw0KGgo="  # 8 bytes


def progress(value: float, total: float | None = None, message: str | None = None) -> ProgressNotificationParams:
    return ProgressNotificationParams(progress_token=1, progress=value, total=total, message=message)


# ------------------------------------------------------------------ progress


def test_progress_bar_with_tqdm() -> None:
    out = io.StringIO()
    bar = ProgressBar("work", stream=out)
    bar(progress(1, 4, "first"))
    bar(progress(2.5, 4))
    bar(progress(4, 4, "done"))
    bar.close()
    bar.close()
    bar(progress(5, 5, "after the end"))  # ignored: the bar is closed
    shown = out.getvalue()
    assert "work:  25%" in shown and "1/4" in shown and "first" in shown
    assert "2.5/4" in shown and "work: 100%" in shown and "done" in shown
    assert "after the end" not in shown


def test_progress_bar_without_a_total_and_closed_before_any_notification() -> None:
    out = io.StringIO()
    bar = ProgressBar("tick", stream=out)
    bar(progress(3))
    bar.close()
    assert "tick: 3" in out.getvalue()
    shown = out.getvalue()
    idle = ProgressBar("idle", stream=out)
    idle.close()
    assert out.getvalue() == shown  # a bar that never got a notification never shows


def test_progress_lines_without_tqdm(capsys: pytest.CaptureFixture[str]) -> None:
    bar = ProgressBar("copy", use_tqdm=False)
    bar(progress(1, 4, "started"))
    bar(progress(2))
    bar(progress(0, 0))
    bar.close()
    assert capsys.readouterr().err == "copy: 1/4 (25%) started\ncopy: 2\ncopy: 0\n"


HIDDEN = """
import sys
sys.modules["tqdm"] = None          # as if tqdm and jsonschema were not installed
sys.modules["jsonschema"] = None
import mcp_sync
from mcp_sync.types import CallToolResult, TextContent

server = mcp_sync.MCPServer("hidden")

def count(args, ctx):
    for step in (1, 2):
        ctx.progress(step, 2, f"step {step}")
    return CallToolResult(content=[TextContent(text="ok")], structured_content={"n": 2})

server.register_tool("count", count, output_schema={"type": "object"})
with mcp_sync.connect(server) as client:
    print(client.call_tool("count", progress=True).text)
    try:
        client.call_tool_structured("count")
    except ImportError as exc:
        print("ImportError:", exc)
"""


def test_progress_and_output_checks_when_tqdm_and_jsonschema_are_missing() -> None:
    done = subprocess.run(
        [sys.executable, "-c", HIDDEN], capture_output=True, text=True, timeout=60, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "ok",
        "ImportError: checking structured content against a tool's output schema needs the jsonschema package "
        "(pip install jsonschema)",
    ]
    assert done.stderr == "count: 1/2 (50%) step 1\ncount: 2/2 (100%) step 2\n"


# ------------------------------------------------------------------ displays


def test_content_as_text_and_html() -> None:
    blocks = [
        TextContent(text="<b>hi</b>"),
        ImageContent(data=PNG, mime_type="image/png"),
        AudioContent(data="AAAA", mime_type="audio/wav"),
        ResourceLink(uri="file:///notes.txt", name="notes"),
        EmbeddedResource(resource=TextResourceContents(uri="mem://a", text="inline text")),
        EmbeddedResource(resource=BlobResourceContents(uri="mem://logo", blob=PNG, mime_type="image/png")),
        EmbeddedResource(resource=BlobResourceContents(uri="mem://data", blob="AAAA")),
    ]
    assert [content_text(block) for block in blocks] == [
        "<b>hi</b>",
        "[image image/png, 8 bytes]",
        "[audio audio/wav, 3 bytes]",
        "[resource link file:///notes.txt (notes)]",
        "inline text",
        "[blob mem://logo image/png, 8 bytes]",
        "[blob mem://data application/octet-stream, 3 bytes]",
    ]
    result = CallToolResult(content=blocks, structured_content={"k": "<v>"})
    html = call_tool_result_html(result)
    assert "&lt;b&gt;hi&lt;/b&gt;" in html and "<b>hi</b>" not in html
    assert f'<img src="data:image/png;base64,{PNG}" alt="image">' in html
    assert '<audio controls src="data:audio/wav;base64,AAAA"></audio>' in html
    assert "<code>file:///notes.txt</code> (notes)" in html and "inline text" in html
    assert f'<img src="data:image/png;base64,{PNG}" alt="mem://logo">' in html
    assert "[blob mem://data application/octet-stream, 3 bytes]" in html
    assert "structured content" in html and "&quot;k&quot;: &quot;&lt;v&gt;&quot;" in html
    assert "tool result" in html and "#2e7d32" in html
    text = call_tool_result_text(result)
    assert text.endswith('structured content: {"k": "<v>"}') and text.startswith("<b>hi</b>\n[image")


def test_error_results() -> None:
    failed = CallToolResult(content=[TextContent(text="no such city")], is_error=True)
    assert call_tool_result_text(failed) == "tool error:\nno such city"
    html = call_tool_result_html(failed)
    assert "tool error" in html and "#c62828" in html and "structured content" not in html


def test_resources_and_prompts() -> None:
    one = ReadResourceResult(contents=[TextResourceContents(uri="mem://a", text="alpha")])
    two = ReadResourceResult(
        contents=[TextResourceContents(uri="mem://a", text="alpha"), BlobResourceContents(uri="mem://b", blob="AAAA")]
    )
    assert read_resource_result_text(one) == "alpha"
    assert (
        read_resource_result_text(two)
        == "--- mem://a\nalpha\n--- mem://b\n[blob mem://b application/octet-stream, 3 bytes]"
    )
    assert "<code>mem://a</code>" in read_resource_result_html(two) and "resource" in read_resource_result_html(one)
    prompt = GetPromptResult(
        description="A greeting",
        messages=[
            PromptMessage(role="user", content=TextContent(text="Hello")),
            PromptMessage(role="assistant", content=TextContent(text="Hi <there>")),
        ],
    )
    assert get_prompt_result_text(prompt) == "A greeting\n[user] Hello\n[assistant] Hi <there>"
    html = get_prompt_result_html(prompt)
    assert "<i>A greeting</i>" in html and "<b>assistant</b>" in html and "Hi &lt;there&gt;" in html
    bare = GetPromptResult(messages=[PromptMessage(role="user", content=TextContent(text="x"))])
    assert get_prompt_result_text(bare) == "[user] x" and "<i>" not in get_prompt_result_html(bare)


def test_tool_lists() -> None:
    tools = [
        Tool(
            name="add",
            description="Add two numbers.\nMore detail.",
            input_schema={
                "type": "object",
                "properties": {"a": {"type": "number", "description": "first <one>"}, "b": {"type": "number"}},
                "required": ["a", "b"],
            },
        ),
        Tool(name="odd", input_schema={"type": "object", "properties": {"x": True}}),
        Tool(name="bare", input_schema={"type": "object"}),
    ]
    assert tools_text(tools) == "add(a: number, b: number)  -- Add two numbers.\nodd(x?: any)\nbare()"
    assert tools_text([]) == "no tools" and tools_html([]) == "<p>no tools</p>"
    html = tools_html(tools)
    assert "<code>add(a: number, b: number)</code>" in html
    assert "<li><code>a</code>: number &mdash; first &lt;one&gt;</li>" in html
    assert "<li><code>b</code>: number</li>" in html and "<li><code>x</code>: any</li>" in html


def test_rich_display_in_ipython() -> None:
    from IPython.core.formatters import DisplayFormatter

    formatter = DisplayFormatter()
    shell = types.SimpleNamespace(display_formatter=formatter)
    assert enable_rich_display(shell) is True
    data, _ = formatter.format(CallToolResult(content=[TextContent(text="five")]))
    assert data["text/plain"] == "five" and "tool result" in data["text/html"]
    data, _ = formatter.format(ReadResourceResult(contents=[TextResourceContents(uri="mem://a", text="alpha")]))
    assert data["text/plain"] == "alpha"

    other = DisplayFormatter()
    load_ipython_extension(types.SimpleNamespace(display_formatter=other))
    data, _ = other.format(GetPromptResult(messages=[PromptMessage(role="user", content=TextContent(text="x"))]))
    assert data["text/plain"] == "[user] x" and "<b>user</b>" in data["text/html"]


def test_no_ipython_no_display_setup() -> None:
    assert enable_rich_display() is False


# ------------------------------------------------------ the example notebook


@pytest.fixture
def kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A kernel spec for this Python's ipykernel, in a directory of its own."""
    pytest.importorskip("ipykernel")
    name = "mcp-sync-test"
    for variable, value in kernel_spec(tmp_path, name, [str(ROOT), os.environ.get("PYTHONPATH")]).items():
        monkeypatch.setenv(variable, value)
    monkeypatch.delenv("MCP_SYNC_INTERACTIVE", raising=False)  # the notebook's person answers its form
    return name


def outputs(cell: Any) -> tuple[str, dict[str, str]]:
    """A cell's stream text and its last rich output's data."""
    stream = "".join(out.get("text", "") for out in cell.outputs if out.output_type == "stream")
    data: dict[str, str] = {}
    for out in cell.outputs:
        if out.output_type in ("execute_result", "display_data"):
            data = dict(out.data)
    return stream, data


def test_example_notebook_runs_headless(kernel: str) -> None:
    import nbformat

    from tests.test_notebook_forms import Person

    notebook = nbformat.read(EXAMPLES / "notebook.ipynb", as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code")
    # The person reading it accepts the booking form as it comes (the defaults).
    runner = Person(
        notebook,
        kernel_name=kernel,
        timeout=60,
        resources={"metadata": {"path": str(EXAMPLES)}},
        answers=[({}, "Accept")],
    )
    runner.execute()
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert not [out for cell in code for out in cell.outputs if out.output_type == "error"]
    by_source = {cell.source.splitlines()[0]: outputs(cell) for cell in code}

    _, connected = by_source["import sys"]
    assert connected["text/plain"] == "('echo-server', '2026-07-28')"  # the default era finds the stateless revision
    _, listing = by_source["client.tools"]
    assert "<table" in listing["text/html"] and "echo(text: string)" in listing["text/html"]
    assert "add(a: integer | number, b: integer | number)  -- Add two numbers." in listing["text/plain"]
    help_text, _ = by_source["help(client.tools.add)"]
    assert "add(a: int | float, b: int | float) -> mcp_sync.protocol.types.CallToolResult" in help_text
    assert "Add two numbers." in help_text
    _, result = by_source["result = client.tools.add(a=2, b=3)"]
    assert "tool result" in result["text/html"] and "&quot;result&quot;: 5" in result["text/html"]
    assert result["text/plain"] == '5\nstructured content: {"result": 5}'
    _, parts = by_source["result.text, result.structured_content"]
    assert parts["text/plain"] == "('5', {'result': 5})"
    _, echoed = by_source['client.tools.echo(text="hello from a notebook").text']
    assert echoed["text/plain"] == "'hello from a notebook'"
    failure, _ = by_source["try:"]
    assert failure == "failed: MCP.INVALID_PARAMS\n"  # "two" is no number: the arguments are refused
    [booking] = [cell for cell in code if cell.source.startswith("from mcp_sync import Context, MCPServer")]
    streams = {out.name: out.text for out in booking.outputs if out.output_type == "stream"}
    assert streams == {"stdout": "booked 2 nights in Oslo\n", "stderr": "[info] looking for rooms in Oslo\n"}
    assert runner.answers == []  # the form was shown, and accepted
    assert by_source["client.close()"] == ("", {})  # the last cell closes the client quietly


def test_the_notebook_is_valid_and_stored_without_outputs() -> None:
    import nbformat

    notebook = nbformat.read(EXAMPLES / "notebook.ipynb", as_version=4)
    nbformat.validate(notebook)
    assert notebook.metadata.kernelspec.name == "python3"
    assert "client.close()" in [cell.source for cell in notebook.cells]


def test_a_bare_result_renders_richly_and_loads_the_display_layer_only_then() -> None:
    """The wire models import nothing of ``display``; the package's renderer loads it on first use."""
    code = (
        "import sys\n"
        "from mcp_sync.types import CallToolResult, TextContent\n"
        "result = CallToolResult(content=[TextContent(text='5')])\n"
        "print('mcp_sync.display' in sys.modules)\n"
        "print('<pre' in result._repr_html_())\n"
        "print('mcp_sync.display' in sys.modules)\n"
        "from mcp_sync.protocol.rendering import set_renderer\n"
        "set_renderer(None)\n"
        "print(result._repr_html_())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["False", "True", "True", "None"]


def test_an_async_tool_runs_from_a_live_kernel_whose_loop_is_running(kernel: str) -> None:
    """In a notebook cell the kernel's event loop is running: ``asyncio.run`` would refuse, the library does not."""
    import nbclient
    import nbformat

    cell = (
        "import asyncio\n"
        "from mcp_sync import MCPServer\n"
        "server = MCPServer('kernel')\n"
        "@server.tool\n"
        "async def double(x: int) -> int:\n"
        "    await asyncio.sleep(0)\n"
        "    return 2 * x\n"
        "running = asyncio.get_running_loop()\n"
        "print(running.is_running(), server.invoke_tool('double', {'x': 21}).structured_content)\n"
    )
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    nbclient.NotebookClient(notebook, kernel_name=kernel, timeout=60).execute()
    [run] = notebook.cells
    assert [out.output_type for out in run.outputs] == ["stream"]
    assert run.outputs[0].text == "True {'result': 42}\n"


def test_load_ext_mcp_sync_in_a_live_kernel_turns_on_rich_display(kernel: str) -> None:
    """``%load_ext mcp_sync``: a result shows as its text (``text/plain``), not the model's repr."""
    import nbclient
    import nbformat

    cells = [
        "import sys\n%load_ext mcp_sync\nprint('mcp_sync.display' in sys.modules)",
        "from mcp_sync.types import CallToolResult, TextContent\nCallToolResult(content=[TextContent(text='five')])",
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell) for cell in cells])
    nbclient.NotebookClient(notebook, kernel_name=kernel, timeout=60).execute()
    loaded, shown = notebook.cells
    assert [out.text for out in loaded.outputs] == ["True\n"]
    [result] = shown.outputs
    assert result.data["text/plain"] == "five" and "tool result" in result.data["text/html"]


def test_rich_display_set_up_before_the_models_are_declared_shows_them_once_they_are() -> None:
    """The formatters name the resource and prompt results, declared only when first used: set up in a fresh
    interpreter before they exist, they still show a resource read afterwards."""
    code = (
        "import sys, types\n"
        "from IPython.core.formatters import DisplayFormatter\n"
        "from mcp_sync.display.ipython import enable_rich_display\n"
        "formatter = DisplayFormatter()\n"
        "enable_rich_display(types.SimpleNamespace(display_formatter=formatter))\n"
        "print('mcp_sync.protocol.types.server_features' in sys.modules)\n"
        "from mcp_sync.types import ReadResourceResult, TextResourceContents\n"
        "data, _ = formatter.format(ReadResourceResult(contents=[TextResourceContents(uri='mem://a', text='alpha')]))\n"
        "print(data['text/plain'], 'text/html' in data)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.splitlines() == ["False", "alpha True"]
