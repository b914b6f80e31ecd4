"""pi-coding-agent's built-in tools: read, write, edit, bash, grep, find, ls.

Part of the tools layer: imports :mod:`pitrio.tools`, :mod:`pitrio.providers` and below, never
``actors``, ``sessions`` or anything above.
"""
