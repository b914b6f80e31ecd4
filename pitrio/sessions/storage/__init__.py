"""Session files: entries and their codec, the loader, the single writer, the tree, the manager and
the persistence actor.

The floor of ``sessions``: imports nothing from its sibling subpackages.
"""
