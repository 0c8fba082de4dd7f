"""The display layer: how results look in a terminal and in Jupyter.

``render`` (text and HTML renderers), ``progress`` (the progress bar of
``call_tool(progress=True)``) and ``ipython`` (IPython formatters,
``%load_ext mcp_sync.notebook``). Layer rule: imports ``protocol`` only;
the wire models reach it through :mod:`mcp_sync.protocol.rendering`.
"""
