"""``pitrio serve`` hardening (issue 14): where sessions may run, what a request may name,
extensions per session, and logging that cannot end the host."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest
import structlog
import trio
from trio_websocket import ConnectionClosed

from pitrio.cli._serve import make_session_factory
from pitrio.host import HostConfig, OpenedSession, SessionRequest, open_host
from tests.host.serve_helpers import (
    Client,
    faux_env,
    http_get,
    open_client,
    open_test_host,
    text_of_deltas,
)

SURROGATE = "bad \ud800 value"
"""Text no UTF-8 stream with strict errors can write."""


async def _pwd(client: Client, created: dict[str, Any]) -> str:
    """Where the created session runs commands: the output of its user bash ``pwd``."""
    sid = created["data"]["session"]
    answer = await client.call({"type": "bash", "session": sid, "command": "pwd"})
    assert answer["success"] is True, answer
    return str(answer["data"]["output"]).strip()


def _folders(tmp_path: Path) -> tuple[Path, Path]:
    """A root (with a subfolder, a file and a symlink leading out) and a folder outside it."""
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "afile").write_text("x")
    (root / "escape").symlink_to(outside)
    return root, outside


@pytest.mark.parametrize(
    "cwd",
    ["/", "..", "../outside", "sub/../../outside", "escape", "escape/.", "OUTSIDE"],
)
async def test_a_cwd_that_resolves_outside_the_roots_is_refused(tmp_path: Path, cwd: str) -> None:
    """A create_session cwd outside the roots (absolute, "..", or through a symlink) is
    refused for client and host tokens, with an error naming the rule; no session opens."""
    root, outside = _folders(tmp_path)
    cwd = str(outside) if cwd == "OUTSIDE" else cwd
    async with open_test_host(root) as host, open_client(host) as admin:
        token = (await admin.call({"type": "create_token"}))["data"]["token"]
        async with open_client(host, token=token) as guest:
            for client in (admin, guest):
                refused = await client.call({"type": "create_session", "cwd": cwd})
                assert refused["success"] is False
                assert "outside the host's roots" in refused["error"]
                assert "--root" in refused["error"]
        assert not host.sessions
        assert host.metrics.errors.get("cwd_refused") == 2


async def test_a_cwd_inside_a_root_runs_there_and_a_file_is_refused(tmp_path: Path) -> None:
    """A relative or absolute cwd inside one of the roots opens the session there (the real
    path); a file inside a root is refused as not a directory."""
    root, _ = _folders(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    async with (
        open_test_host(root, roots=(str(root), str(other))) as host,
        open_client(host) as client,
    ):
        sub = await client.call({"type": "create_session", "cwd": "sub"})
        assert sub["success"] is True and await _pwd(client, sub) == str(root / "sub")
        second = await client.call({"type": "create_session", "cwd": str(other)})
        assert second["success"] is True and await _pwd(client, second) == str(other)
        refused = await client.call({"type": "create_session", "cwd": "afile"})
        assert refused["success"] is False and "not a directory" in refused["error"]


async def test_allow_any_cwd_lets_only_the_host_token_out(tmp_path: Path) -> None:
    """With allow_any_cwd the host token may name a folder outside the roots; a client token
    still may not."""
    root, outside = _folders(tmp_path)
    async with open_test_host(root, allow_any_cwd=True) as host, open_client(host) as admin:
        allowed = await admin.call({"type": "create_session", "cwd": str(outside)})
        assert allowed["success"] is True and await _pwd(admin, allowed) == str(outside)
        token = (await admin.call({"type": "create_token"}))["data"]["token"]
        async with open_client(host, token=token) as guest:
            refused = await guest.call({"type": "create_session", "cwd": str(outside)})
            assert refused["success"] is False and "outside the host's roots" in refused["error"]


async def test_unknown_thinking_levels_and_models_are_refused(tmp_path: Path) -> None:
    """A thinking level that is not one of pitrio's and a model not in the registry (even of
    a known provider) are refused with an error naming them; known ones open."""
    async with open_test_host(tmp_path) as host, open_client(host) as client:
        bad_level = await client.call({"type": "create_session", "thinking_level": "hyper"})
        assert bad_level["success"] is False
        assert "hyper" in bad_level["error"] and "xhigh" in bad_level["error"]
        for model in ("faux/no-such-model", "anthropic/claude-none-9", "nope/nope"):
            refused = await client.call({"type": "create_session", "model": model})
            assert refused["success"] is False and model in refused["error"], refused
        ok = await client.call(
            {"type": "create_session", "model": "faux/faux-1", "thinking_level": "high"}
        )
        assert ok["success"] is True
        assert not any(live.id != ok["data"]["session"] for live in host.sessions.values()), (
            "a refused request left a session open"
        )


def test_root_flags_default_to_the_current_folder_and_resolve_against_it(tmp_path: Path) -> None:
    """``pitrio serve`` without --root allows only its own folder; --root is repeatable,
    relative to it; --allow-any-cwd is off unless given."""
    from pitrio.cli._serve import _parser, host_config

    cwd = str(tmp_path)
    plain = host_config(_parser().parse_args([]), cwd=cwd, token="t", session_dir=cwd)
    assert plain.roots == (cwd,) and plain.allow_any_cwd is False
    args = _parser().parse_args(["--root", "a", "--root", "/srv/b", "--allow-any-cwd"])
    config = host_config(args, cwd=cwd, token="t", session_dir=cwd)
    assert config.roots == (os.path.join(cwd, "a"), "/srv/b") and config.allow_any_cwd is True


class _Terminal(io.TextIOWrapper):
    """A strict UTF-8 stream that says it is a terminal (structlog's console renderer)."""

    def isatty(self) -> bool:
        return True


def _strict(stream_type: type[io.TextIOWrapper] = io.TextIOWrapper) -> io.TextIOWrapper:
    return stream_type(io.BytesIO(), encoding="utf-8", errors="strict", write_through=True)


def _written(stream: io.TextIOWrapper) -> str:
    buffer = stream.buffer
    assert isinstance(buffer, io.BytesIO)
    return buffer.getvalue().decode()


@contextmanager
def _structlog_config() -> Iterator[None]:
    """Restore structlog's configuration after the block."""
    saved = structlog.get_config()
    try:
        yield
    finally:
        structlog.configure(**saved)


async def test_a_log_line_that_cannot_be_written_does_not_end_the_host(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A connection failure whose traceback holds a lone surrogate, logged by structlog's
    console renderer to a strict UTF-8 stream, ends only that connection: the host keeps
    serving and a plain line on stderr says what failed."""
    root = str(tmp_path)
    inner = make_session_factory(cwd=root, env=faux_env(root), provider="faux")

    def factory(request: SessionRequest) -> AbstractAsyncContextManager[OpenedSession]:
        if request.model == "boom":
            raise RuntimeError(SURROGATE)  # a bug in a factory: not a refused request
        return inner(request)

    config = HostConfig(port=0, session_dir=os.path.join(root, "sessions"), roots=(root,))
    with _structlog_config():
        structlog.configure(logger_factory=structlog.PrintLoggerFactory(_strict()))
        async with open_host(factory, config) as host:
            async with open_client(host) as client:
                await client.send({"type": "create_session", "model": "boom"})
                with pytest.raises(ConnectionClosed):
                    await client.frame()
            status, _, _ = await http_get(host, "/healthz")
            assert status == 200
            async with open_client(host) as client:
                assert (await client.call({"type": "create_session"}))["success"] is True
    assert "pitrio.host: connection_failed" in capsys.readouterr().err
    assert host.metrics.errors["internal"] == 1


def test_serve_logging_escapes_what_the_stream_cannot_encode() -> None:
    """``pitrio serve``'s logging writes a lone surrogate escaped, to a terminal (console
    lines) and otherwise as JSON lines with the traceback."""
    from pitrio.cli._serve import configure_logging

    with _structlog_config():
        terminal = _strict(_Terminal)
        configure_logging(terminal)
        structlog.get_logger("t").error(SURROGATE)  # the event is written as is
        assert "bad \\ud800 value" in _written(terminal)
        piped = _strict()
        configure_logging(piped)
        try:
            raise RuntimeError(SURROGATE)
        except RuntimeError:
            structlog.get_logger("t").exception("json_line", detail=SURROGATE)
        record = json.loads(_written(piped))
        assert record["event"] == "json_line" and record["detail"] == SURROGATE
        assert "RuntimeError" in record["exception"]


def test_available_models_check_each_providers_credentials_once(tmp_path: Path) -> None:
    """``ModelSetup.available`` (asked for every session the host opens) checks credentials
    once per provider, not once per model, and finds exactly the models with credentials."""
    import attrs

    from pitrio.cli._setup import Credentials, load_model_setup
    from pitrio.providers import Model

    env = {**faux_env(str(tmp_path)), "OPENAI_API_KEY": "sk-test"}
    setup = load_model_setup(str(tmp_path / "agent"), env)
    checked: list[str] = []

    class CountingCredentials(Credentials):
        def has_auth(self, model: Model) -> bool:
            checked.append(model.provider)
            return super().has_auth(model)

    counting = CountingCredentials(setup.credentials.custom, env)
    found = attrs.evolve(setup, credentials=counting).available()
    assert found == [m for m in setup.models if setup.credentials.has_auth(m)]
    assert {m.provider for m in found} == {"openai", "faux"}
    assert len(checked) == len({m.provider for m in setup.models}) < len(setup.models) / 10


COUNTER = """
def register(pi):
    seen = []  # per runner, so per session
    def tag(event, ctx):
        seen.append(event.text)
        return {"action": "transform", "text": f"{event.text} [TAG {len(seen)}]"}
    pi.on("input", tag)
"""


async def _answer(client: Client, sid: str, text: str) -> str:
    """The faux model's echo of prompt ``text`` in session ``sid`` (without the message count
    it adds after the first turn)."""
    await client.send({"type": "prompt", "session": sid, "message": text})
    frames = await client.until(lambda f: f.get("type") == "agent_end" and f["session"] == sid)
    return text_of_deltas([f for f in frames if f.get("session") == sid]).split(" (")[0]


async def test_sessions_load_their_folders_extensions_each_with_its_own_state(
    tmp_path: Path,
) -> None:
    """A session loads the project extensions of its own cwd, the global ones and -e ones,
    each session with its own runner (an extension's state is per session); a session in a
    folder without project extensions does not get them."""
    root = tmp_path / "root"
    project, plain = root / "project", root / "plain"
    (project / ".pitrio" / "extensions").mkdir(parents=True)
    plain.mkdir()
    (project / ".pitrio" / "extensions" / "counter.py").write_text(COUNTER.replace("TAG", "p"))
    (tmp_path / "root" / "agent" / "extensions").mkdir(parents=True)
    (root / "agent" / "extensions" / "g.py").write_text(COUNTER.replace("TAG", "g"))
    (tmp_path / "explicit.py").write_text(COUNTER.replace("TAG", "e"))
    options = {"extensions": [str(tmp_path / "explicit.py")]}
    async with (
        open_test_host(root, factory_options=options) as host,
        open_client(host) as client,
    ):
        first = (await client.call({"type": "create_session", "cwd": "project"}))["data"]
        second = (await client.call({"type": "create_session", "cwd": "project"}))["data"]
        other = (await client.call({"type": "create_session", "cwd": "plain"}))["data"]
        assert await _answer(client, first["session"], "a") == "You said: a [p 1] [g 1] [e 1]"
        assert await _answer(client, first["session"], "b") == "You said: b [p 2] [g 2] [e 2]"
        assert await _answer(client, second["session"], "c") == "You said: c [p 1] [g 1] [e 1]"
        assert await _answer(client, other["session"], "d") == "You said: d [g 1] [e 1]"


async def test_no_extensions_keeps_only_the_explicit_ones(tmp_path: Path) -> None:
    """With no_extensions (``--no-extensions``) a session loads only the -e extensions."""
    (tmp_path / ".pitrio" / "extensions").mkdir(parents=True)
    (tmp_path / ".pitrio" / "extensions" / "p.py").write_text(COUNTER.replace("TAG", "p"))
    (tmp_path / "explicit.py").write_text(COUNTER.replace("TAG", "e"))
    options = {"extensions": ["explicit.py"], "no_extensions": True}
    async with (
        open_test_host(tmp_path, factory_options=options) as host,
        open_client(host) as client,
    ):
        sid = (await client.call({"type": "create_session"}))["data"]["session"]
        assert await _answer(client, sid, "x") == "You said: x [e 1]"


async def test_an_extension_that_fails_to_load_is_an_extension_error_event(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An extension that does not load is skipped: the session opens, its client gets an
    ``extension_error`` event (event ``load``) with the session and a seq, and the host logs
    it with the session's id."""
    broken = tmp_path / ".pitrio" / "extensions" / "broken.py"
    broken.parent.mkdir(parents=True)
    broken.write_text("def register(pi):\n    raise RuntimeError('cannot start')\n")
    async with open_test_host(tmp_path) as host, open_client(host) as client:
        created = await client.call({"type": "create_session"})
        assert created["success"] is True
        sid = created["data"]["session"]
        assert await _answer(client, sid, "still") == "You said: still"
        # Events arrive in seq order: by agent_end the load error (seq 1) has arrived.
        [event] = [f for f in client.seen if f.get("type") == "extension_error"]
        assert event["session"] == sid and event["seq"] == 1
        assert event["extensionPath"] == str(broken) and event["event"] == "load"
        assert "cannot start" in event["error"]
    logged = capsys.readouterr().out
    assert "extension_load_failed" in logged and sid in logged


async def _saved_session(client: Client) -> tuple[str, str]:
    """Create a session and run one prompt, so that its file exists; its id and file."""
    created = await client.call({"type": "create_session"})
    sid = created["data"]["session"]
    await client.call({"type": "prompt", "session": sid, "message": "hi"})
    await client.until(lambda f: f.get("type") == "agent_end")  # the file is written
    return sid, created["data"]["sessionFile"]


async def test_paths_a_client_names_stay_inside_the_hosts_folders(tmp_path: Path) -> None:
    """switch_session, new_session's parentSession and export_html name files the host opens
    or writes with its own privileges: a session file outside the session folder is refused;
    an export is written only in the host's exports folder, whatever folder its path names."""
    root, outside = _folders(tmp_path)
    async with open_test_host(root) as host, open_client(host) as client:
        sid, original = await _saved_session(client)
        escapes = ["../../outside/s.jsonl", str(outside / "s.jsonl"), "/etc/passwd"]
        for path in escapes:
            for frame in (
                {"type": "switch_session", "session": sid, "sessionPath": path},
                {"type": "new_session", "session": sid, "parentSession": path},
            ):
                answer = await client.call(frame)
                assert answer["success"] is False, (frame, answer)
                assert "outside the folders this host lets clients name" in answer["error"]
        # export_html takes its outputPath as a name in the host's exports folder.
        exports = root / "sessions" / ".host" / "exports"
        for path in (str(outside / "o.html"), "../../outside/p.html", str(root / "q.html")):
            exported = await client.call(
                {"type": "export_html", "session": sid, "outputPath": path}
            )
            assert exported["success"] is True, exported
            name = path.rsplit("/", 1)[-1]
            assert exported["data"]["path"] == str(await trio.Path(exports / name).resolve())
            assert await trio.Path(exports / name).is_file()
        assert list(outside.iterdir()) == []
        assert not await trio.Path(root / "q.html").exists()
        moved = await client.call(
            {"type": "switch_session", "session": sid, "sessionPath": original}
        )
        assert moved["success"] is True, moved


async def test_export_html_cannot_overwrite_a_session_file(tmp_path: Path) -> None:
    """export_html's outputPath may not name a session file (``.jsonl``) in the session
    folder: the export is refused and the saved session is left as it was."""
    root, _ = _folders(tmp_path)
    async with open_test_host(root) as host, open_client(host) as client:
        sid, original = await _saved_session(client)
        before = await trio.Path(original).read_bytes()
        refused = await client.call({"type": "export_html", "session": sid, "outputPath": original})
        assert refused["success"] is False, refused
        assert "session file" in refused["error"]
        assert await trio.Path(original).read_bytes() == before


async def test_a_client_token_cannot_open_another_tokens_session_by_its_file(
    tmp_path: Path,
) -> None:
    """switch_session (or new_session with parentSession) to the file of a session the client
    token may not see is refused: for client tokens, sessions are opened with open_session,
    which checks who may see what; the host token keeps the commands."""
    root, _ = _folders(tmp_path)
    async with open_test_host(root) as host, open_client(host) as admin:
        secret = await admin.call({"type": "create_session"})
        secret_file = secret["data"]["sessionFile"]
        await admin.call({"type": "prompt", "session": secret["data"]["session"], "message": "s"})
        await admin.until(lambda f: f.get("type") == "agent_end")
        token = (await admin.call({"type": "create_token"}))["data"]["token"]
        async with open_client(host, token=token) as guest:
            own = (await guest.call({"type": "create_session"}))["data"]["session"]
            for frame in (
                {"type": "switch_session", "session": own, "sessionPath": secret_file},
                {"type": "new_session", "session": own, "parentSession": secret_file},
            ):
                answer = await guest.call(frame)
                assert answer["success"] is False, answer
                assert "not available to client tokens" in answer["error"]
            messages = await guest.call({"type": "get_messages", "session": own})
            assert messages["data"]["messages"] == []
            fresh = await guest.call({"type": "new_session", "session": own})
            assert fresh["success"] is True, fresh
        moved = await admin.call(
            {
                "type": "switch_session",
                "session": secret["data"]["session"],
                "sessionPath": secret_file,
            }
        )
        assert moved["success"] is True, moved


def test_generated_tokens_never_start_with_a_dash() -> None:
    """A token starting with '-' reads as an option on a command line (`pitrio load --token
    -x...` failed now and then); 2,000 draws of the host's generator never start with one."""
    from pitrio.host.ws._host import new_token

    tokens = [new_token(24) for _ in range(2000)]
    assert not [t for t in tokens if t.startswith("-")]
    assert len(set(tokens)) == 2000
