"""pi's RPC protocol: strict JSONL framing, the one command decoder, the stdio server.

The floor of ``host``.
"""
