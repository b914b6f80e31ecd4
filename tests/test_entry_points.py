"""The entry points name and annotate every keyword they take (no ``**options`` hiding them
from type checkers)."""

from __future__ import annotations

import inspect
import typing
from typing import Any

import pytest

from pitrio.actors import Agent, open_agent
from pitrio.sessions import AgentSession, open_agent_session


def _keywords(function: Any) -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(function).parameters)


@pytest.mark.parametrize(
    ("entry", "constructor"),
    [(open_agent, Agent.__init__), (open_agent_session, AgentSession.__init__)],
    ids=["open_agent", "open_agent_session"],
)
def test_entry_points_have_named_annotated_keyword_parameters(entry: Any, constructor: Any) -> None:
    """Every parameter is keyword-only and annotated (none is ``**kwargs``), and the entry
    point takes exactly its constructor's keywords, with the same annotations."""
    parameters = _keywords(inspect.unwrap(entry))
    assert len(parameters) >= 20
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters.values())
    assert all(
        p.annotation not in (inspect.Parameter.empty, "Any")
        for n, p in parameters.items()
        if n not in ("transport", "on_payload")
    )
    wanted = {n: p for n, p in _keywords(constructor).items() if n != "self"}
    assert list(parameters) == list(wanted)
    assert [p.annotation for p in parameters.values()] == [p.annotation for p in wanted.values()]
    assert [p.default for p in parameters.values()] == [p.default for p in wanted.values()]


def test_the_session_entry_points_hints_resolve() -> None:
    """``typing.get_type_hints`` resolves every parameter of ``open_agent_session``."""
    hints = typing.get_type_hints(inspect.unwrap(open_agent_session))
    assert set(_keywords(inspect.unwrap(open_agent_session))) <= set(hints)
    assert hints["busy_policy"] is not Any
