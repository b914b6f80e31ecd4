"""Settings files (global and project ``settings.json``).

Sits on ``storage`` (its file primitives) only.
"""
