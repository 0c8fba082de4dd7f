"""The display layer: how results look in a terminal and in Jupyter.

``render`` (text and HTML renderers), ``progress`` (the progress bar of
``call_tool(progress=True)``), ``ipython`` (IPython formatters, which
``%load_ext mcp_sync`` turns on, ``input()`` forms and log lines in a
notebook), ``forms`` (elicitation forms read from their schema, and the
terminal's prompts) and ``widgets`` (the ipywidgets form). Layer rule: imports ``protocol`` only;
the wire models reach it through :mod:`mcp_sync.protocol.rendering`.
"""
