"""pitrio's terminal UI: a differential renderer, key input, an editor and the interactive app.

Layer: above ``sessions`` and ``extensions`` (the app reads a session's events and calls its
methods); below ``cli``, whose interactive mode builds the session and runs the app.
"""

from pitrio._publish import publish as _publish
from pitrio.tui._app import FRAME_INTERVAL as FRAME_INTERVAL
from pitrio.tui._app import AppConfig as AppConfig
from pitrio.tui._app import InteractiveApp as InteractiveApp
from pitrio.tui._app import RenderStats as RenderStats
from pitrio.tui._custom import ComponentHost as ComponentHost
from pitrio.tui._custom import CustomEditor as CustomEditor
from pitrio.tui._custom import EditorHost as EditorHost
from pitrio.tui._editor import Editor as Editor
from pitrio.tui._extension_ui import TuiExtensionUI as TuiExtensionUI
from pitrio.tui._keybindings import Keybindings as Keybindings
from pitrio.tui._keys import Key as Key
from pitrio.tui._keys import KeyParser as KeyParser
from pitrio.tui._keys import Paste as Paste
from pitrio.tui._keys import normalize_key as normalize_key
from pitrio.tui._markdown import MarkdownView as MarkdownView
from pitrio.tui._picker import pick_session as pick_session
from pitrio.tui._render import Component as Component
from pitrio.tui._render import Container as Container
from pitrio.tui._render import Renderer as Renderer
from pitrio.tui._terminal import Terminal as Terminal
from pitrio.tui._terminal import open_terminal as open_terminal
from pitrio.tui._theme import Theme as Theme
from pitrio.tui._theme import ThemeError as ThemeError
from pitrio.tui._theme import load_theme as load_theme

__all__ = [
    "FRAME_INTERVAL",
    "AppConfig",
    "Component",
    "ComponentHost",
    "Container",
    "CustomEditor",
    "Editor",
    "EditorHost",
    "InteractiveApp",
    "Key",
    "KeyParser",
    "Keybindings",
    "MarkdownView",
    "Paste",
    "RenderStats",
    "Renderer",
    "Terminal",
    "Theme",
    "ThemeError",
    "TuiExtensionUI",
    "load_theme",
    "normalize_key",
    "open_terminal",
    "pick_session",
]

_publish(globals(), __all__)
