"""The display layer: how results look in a terminal and in Jupyter.

``render`` (text and HTML renderers), ``progress`` (the progress bar of
``call_tool(progress=True)``) and ``ipython`` (IPython formatters, which
``%load_ext mcp_sync`` turns on, links and log lines in a notebook). The
forms that answer an elicitation are the client's
(:mod:`mcp_sync.client.forms`, :mod:`mcp_sync.client.widget_form`).

Layer rule: imports ``protocol`` only; the wire models reach it through
:mod:`mcp_sync.protocol.rendering`.
"""
