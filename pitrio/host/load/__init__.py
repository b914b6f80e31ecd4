"""The load harness (``pitrio load``): many sessions in process or over websocket, measured.

Sits on nothing else in ``host``.
"""
