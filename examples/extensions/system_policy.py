"""Seed 001's persisted system-part change: after a turn, a ``policy`` part is added to the
system prompt and persisted as a ``context_transform`` entry.

Every later request's system prompt ends with the policy (``system.compiled`` is the parts
joined with no separator). It also registers a ``/context`` renderer for its transform.
"""

from __future__ import annotations

from typing import Any

POLICY = "\n\n# Policy\n\nNever output secrets."


def register(pi: Any) -> None:
    def add_policy(event: Any, ctx: Any) -> Any:
        if event.reason != "turn_end" or event.state.envelope.system.part("policy") is not None:
            return None
        return {
            "transformerName": "system-policy",
            "display": {"title": "System policy", "rendererId": "system-policy"},
            "patch": [
                {
                    "op": "system_part_set",
                    "scope": "cached",
                    "partName": "policy",
                    "text": POLICY,
                    "invalidateCacheReason": "add policy section",
                }
            ],
        }

    def render(transform: Any, options: Any) -> str:
        return f"policy part set ({len(POLICY)} chars): Never output secrets."

    pi.on("context", add_policy)
    pi.register_context_transform_renderer("system-policy", render)
