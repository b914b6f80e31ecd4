"""Shared fixtures. Tests never reach the network: providers are tested against loopback servers."""

from __future__ import annotations

ALLOW_NETWORK = False
