"""The websocket host: sessions shared by many clients, the HTTP head, the browser page, metrics.

Sits on ``rpc``.
"""
