"""Compaction and branch summaries (seed 002 s.8).

Sits on ``context``, ``settings`` and ``storage``.
"""
