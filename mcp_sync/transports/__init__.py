"""The transports layer: the carriers of JSON-RPC messages, in memory, over stdio and over HTTP.

Layer rule: imports ``runtime`` and ``protocol`` only; never the client or
the server (the client's factories join a transport to a client).
"""
