"""The display layer: how results look in a terminal and in Jupyter.

- ``render``: the text and HTML renderings of tool results, resource contents, prompts and tool listings;
- ``progress``: the bar of ``call_tool(..., progress=True)``, tqdm when installed and plain lines otherwise;
- ``ipython``: IPython's rich formatters (which ``%load_ext mcp_sync`` turns on), links and log lines in a cell.

The wire models reach this layer through the seam :mod:`mcp_sync.protocol.rendering`,
never by import. The forms that answer an elicitation are the client's
(:mod:`mcp_sync.client.forms`, :mod:`mcp_sync.client.widget_form`).

May import: ``display``, ``protocol``.
Must not import: ``runtime``, ``transports``, ``client``, ``server``, ``llm``, ``apps``, nor the composition level.
"""
