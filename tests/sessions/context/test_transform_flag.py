"""The tree's ``has_context_transforms`` flag: what lets a request skip walking the path."""

from __future__ import annotations

import pathlib

from pitrio.sessions import SessionManager
from pitrio.sessions.envelope import MessagesCachedReplaceOp
from tests.actors.helpers import assistant
from tests.sessions.context.test_envelope import _user


def test_flag_follows_appends_reopens_and_new_sessions(tmp_path: pathlib.Path) -> None:
    """False until a context_transform is appended, true after reopening that file, false again
    for a new session."""
    manager = SessionManager.create(str(tmp_path), str(tmp_path))
    first = _user("hello")
    manager.append_message(first)
    manager.append_message(assistant("ok"))
    assert not manager.has_context_transforms()
    manager.append_context_transform(
        "before_request",
        [MessagesCachedReplaceOp(messages=[first], invalidate_cache_reason="trim")],
        "trim",
    )
    assert manager.has_context_transforms()
    path = manager.get_session_file()
    assert path is not None
    manager.close()
    reopened = SessionManager.open(path)
    assert reopened.has_context_transforms()
    reopened.new_session()
    assert not reopened.has_context_transforms()
    reopened.close()
