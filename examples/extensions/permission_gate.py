"""A permission gate: asks before dangerous bash commands, logs every tool result, adds /gate.

Load it with ``pitrio -e examples/extensions/permission_gate.py -p "..."``. In print mode
``ctx.ui.confirm`` answers False (no one to ask), so dangerous commands are blocked; in RPC mode
the client is asked through an ``extension_ui_request``.
"""

from __future__ import annotations

from typing import Any

DANGEROUS = ("rm -rf", "sudo ", "mkfs", "> /dev/")


def register(pi: Any) -> None:
    pi.register_flag("allow-all", type="boolean", default=False, description="never ask")
    blocked: list[str] = []

    async def gate(event: Any, ctx: Any) -> Any:
        if event.tool_name != "bash" or pi.get_flag("allow-all"):
            return None
        command = str(event.input.get("command", ""))
        dangerous = any(word in command for word in DANGEROUS)
        if dangerous and not await ctx.ui.confirm("Dangerous command", f"Allow `{command}`?"):
            blocked.append(command)
            return {"block": True, "reason": "Blocked by the permission gate"}
        return None

    def audit(event: Any, ctx: Any) -> Any:
        note = {"type": "text", "text": f"\n[audit: {event.tool_name} ok={not event.is_error}]"}
        return {"content": [*event.content, note]}

    async def report(args: str, ctx: Any) -> None:
        ctx.ui.notify(f"{len(blocked)} command(s) blocked", "info")

    pi.on("tool_call", gate)
    pi.on("tool_result", audit)
    pi.register_command("gate", report, description="how many commands were blocked")
