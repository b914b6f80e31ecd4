"""The tools layer's wire codec: the providers codec plus every :class:`AgentTool`.

Built once, here, and sealed. An ``AgentTool`` of any class (a user's subclass included, however
late it is defined) encodes as ``JSON.stringify`` makes of a pi tool; the hook matches by
subclass, so defining a tool class registers nothing anywhere.
"""

from __future__ import annotations

from typing import Any, Final

from pitrio.codec import WireCodec, make_codec
from pitrio.providers._codec import PROVIDERS_CODEC
from pitrio.tools._tool import AgentTool

__all__ = ["TOOLS_CODEC"]


def _encode_tool(agent_tool: AgentTool) -> dict[str, Any]:
    # JSON.stringify of a pi AgentTool: data keys in declaration order, functions dropped.
    data: dict[str, Any] = {
        "name": agent_tool.name,
        "label": agent_tool.label,
        "description": agent_tool.description,
        "parameters": PROVIDERS_CODEC.to_wire(dict(agent_tool.parameters)),
    }
    if agent_tool.execution_mode is not None:
        data["executionMode"] = agent_tool.execution_mode
    return data


def _build() -> WireCodec:
    codec = make_codec(PROVIDERS_CODEC, name="tools")
    codec.register_type(AgentTool, encode=_encode_tool, subclasses=True)
    return codec.seal()


TOOLS_CODEC: Final = _build()
"""The tools layer's codec (sealed; derived from the providers codec)."""
