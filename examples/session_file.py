"""pi-coding-agent: an AgentSession saved to a JSONL session file, then reopened.

Run: python examples/session_file.py [SESSION_DIR]   (default: a temporary folder)
"""

import json
import os
import sys
import tempfile

import trio

from pitrio.providers import faux_assistant_message, register_faux_provider
from pitrio.sessions import SessionManager, open_agent_session


async def main(session_dir: str) -> None:
    faux = register_faux_provider(api="faux")
    faux.set_responses([faux_assistant_message("Noted: 7."), faux_assistant_message("It was 7.")])
    manager = SessionManager.create(os.getcwd(), session_dir)  # the file appears on first answer
    async with open_agent_session(session_manager=manager, model=faux.get_model()) as session:
        await session.prompt("Remember the number 7.")
    path = manager.get_session_file()
    assert path is not None
    print("saved:", path)
    text = await trio.Path(path).read_text(encoding="utf-8")  # file work in a worker thread
    print([json.loads(line)["type"] for line in text.splitlines()])  # a header, then entries

    # Reopen the file: the session continues where it stopped, and appends to the same file.
    reopened = SessionManager.open(path)
    async with open_agent_session(session_manager=reopened, model=faux.get_model()) as session:
        await session.prompt("Which number?")
    context = reopened.build_session_context()
    print([message.role for message in context.messages])


if __name__ == "__main__":
    if len(sys.argv) > 1:
        trio.run(main, sys.argv[1])
    else:
        with tempfile.TemporaryDirectory() as directory:
            trio.run(main, directory)
