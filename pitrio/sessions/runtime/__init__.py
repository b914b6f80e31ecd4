"""The running session: the SessionActor, the AgentSession facade, its commands, retry, user bash,
events and their codec.

The top of ``sessions``: everything else in the layer sits below it.
"""
