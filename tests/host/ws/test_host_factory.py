"""The embedder's session factory (:class:`pitrio.host.CodingSessionFactory`): a host served
without ``pitrio.cli``, its sessions built from a model, a registry and an agent dir."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import trio

import pitrio.host.ws._factory as factory_module
from pitrio.host import CodingSessionFactory, HostConfig, open_host
from pitrio.providers import (
    FauxProvider,
    ProviderRegistry,
    faux_assistant_message,
    faux_tool_call,
    register_faux_provider,
)
from tests.host.serve_helpers import open_client


def _faux() -> tuple[FauxProvider, ProviderRegistry]:
    registry = ProviderRegistry()
    faux = register_faux_provider(api="faux", provider="faux", registry=registry)
    return faux, registry


def test_the_factory_module_does_not_import_the_command_line() -> None:
    """Embedding a host needs no ``pitrio.cli``: the factory's module imports none of it."""
    tree = ast.parse(inspect.getsource(factory_module))
    imported = [
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module is not None
    ]
    assert imported and not [name for name in imported if name.startswith("pitrio.cli")]


async def test_an_embedded_host_serves_coding_sessions_and_confines_client_tokens(
    tmp_path: Path,
) -> None:
    """A host built with ``CodingSessionFactory`` creates sessions on disk with the agent
    dir's AGENTS.md in their system prompt, gives the host token the coding tools, and a
    client token read-only tools that may not leave the roots."""
    work = tmp_path / "work"
    agent = tmp_path / "agent"
    work.mkdir()
    agent.mkdir()
    (agent / "AGENTS.md").write_text("Always answer in haiku.")
    (tmp_path / "secret.txt").write_text("s3cret")
    faux, registry = _faux()
    model = faux.get_model()
    assert model is not None
    factory = CodingSessionFactory(
        cwd=str(work), agent_dir=str(agent), model=model, registry=registry
    )
    config = HostConfig(port=0, session_dir=str(tmp_path / "sessions"), roots=(str(work),))
    async with open_host(factory, config) as host, open_client(host) as admin:
        created = (await admin.call({"type": "create_session"}))["data"]
        assert await trio.Path(created["sessionFile"]).is_file()  # on disk at once
        live = host.sessions[created["session"]]
        assert "Always answer in haiku." in live.session.system_prompt
        assert sorted(t.name for t in live.session.agent.tools) == ["bash", "edit", "read", "write"]
        token = (await admin.call({"type": "create_token"}))["data"]["token"]
        async with open_client(host, token=token) as client:
            sid = (await client.call({"type": "create_session"}))["data"]["session"]
            tools = host.sessions[sid].session.agent.tools
            assert sorted(t.name for t in tools) == ["find", "grep", "ls", "read"]
            faux.set_responses(
                [
                    faux_assistant_message(
                        [
                            faux_tool_call("read", {"path": "../secret.txt"}, id="r"),
                            faux_tool_call("write", {"path": "x.txt", "content": "x"}, id="w"),
                        ],
                        stop_reason="toolUse",
                    ),
                    faux_assistant_message("done"),
                ]
            )
            await client.call({"type": "prompt", "session": sid, "message": "go"})
            frames = await client.until(lambda f: f.get("type") == "agent_end")
            ends = {f["toolCallId"]: f for f in frames if f.get("type") == "tool_execution_end"}
            assert ends["r"]["isError"] and "outside the folders" in str(ends["r"]["result"])
            assert ends["w"]["isError"] and "not found" in str(ends["w"]["result"])
            assert not (work / "x.txt").exists()
