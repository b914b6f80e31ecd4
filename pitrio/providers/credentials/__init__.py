"""pi's credentials: ``auth.json``, its lock, OAuth token refresh.

Part of the ``providers`` layer: imports ``providers`` modules, ``pitrio.codec`` and
``pitrio.channels`` only (never ``sessions``; the agent dirs are passed in as paths).

* :class:`CredentialStore`: a provider's API key in pi's order (``--api-key``, ``auth.json``,
  environment; ``models.json`` after), OAuth tokens renewed once per process and per machine.
* :func:`read_auth_file` / :func:`write_auth_file`: the file as pi keeps it.
* :func:`acquire_auth_lock` / :func:`hold_auth_lock`: the lock pi (proper-lockfile) takes.
* :class:`TokenRefreshers`: provider id -> ``async refresh(credential) -> credential``;
  :func:`default_refreshers` has pi's OpenAI Codex refresh.
* :func:`login_pkce` / :func:`login_device_code`: signing in (browser with a loopback callback
  racing a paste-back, or RFC 8628 device code) for an :class:`OAuthClient`;
  :func:`openai_codex_client` is pi's "Sign in with ChatGPT".
"""

from pitrio._publish import publish as _publish
from pitrio.providers.credentials._auth_file import AUTH_FILE as AUTH_FILE
from pitrio.providers.credentials._auth_file import ApiKeyCredential as ApiKeyCredential
from pitrio.providers.credentials._auth_file import AuthCredential as AuthCredential
from pitrio.providers.credentials._auth_file import AuthFileError as AuthFileError
from pitrio.providers.credentials._auth_file import OAuthCredential as OAuthCredential
from pitrio.providers.credentials._auth_file import parse_credential as parse_credential
from pitrio.providers.credentials._auth_file import read_auth_file as read_auth_file
from pitrio.providers.credentials._auth_file import write_auth_file as write_auth_file
from pitrio.providers.credentials._lock import LOCK_STALE as LOCK_STALE
from pitrio.providers.credentials._lock import LOCK_UPDATE as LOCK_UPDATE
from pitrio.providers.credentials._lock import AuthLockCompromised as AuthLockCompromised
from pitrio.providers.credentials._lock import AuthLockTimeout as AuthLockTimeout
from pitrio.providers.credentials._lock import HeldLock as HeldLock
from pitrio.providers.credentials._lock import acquire_auth_lock as acquire_auth_lock
from pitrio.providers.credentials._lock import hold_auth_lock as hold_auth_lock
from pitrio.providers.credentials._lock import keep_lock_fresh as keep_lock_fresh
from pitrio.providers.credentials._lock import lock_path as lock_path
from pitrio.providers.credentials._lock import release_auth_lock as release_auth_lock
from pitrio.providers.credentials._login import DeviceCode as DeviceCode
from pitrio.providers.credentials._login import LoginError as LoginError
from pitrio.providers.credentials._login import OAuthClient as OAuthClient
from pitrio.providers.credentials._login import PasteFn as PasteFn
from pitrio.providers.credentials._login import authorization_url as authorization_url
from pitrio.providers.credentials._login import exchange_code as exchange_code
from pitrio.providers.credentials._login import generate_pkce as generate_pkce
from pitrio.providers.credentials._login import login_device_code as login_device_code
from pitrio.providers.credentials._login import login_pkce as login_pkce
from pitrio.providers.credentials._login import (
    parse_authorization_input as parse_authorization_input,
)
from pitrio.providers.credentials._login import poll_device_token as poll_device_token
from pitrio.providers.credentials._login import request_device_code as request_device_code
from pitrio.providers.credentials._openai_codex import (
    OPENAI_CODEX_TOKEN_URL as OPENAI_CODEX_TOKEN_URL,
)
from pitrio.providers.credentials._openai_codex import default_refreshers as default_refreshers
from pitrio.providers.credentials._openai_codex import (
    openai_codex_account_id as openai_codex_account_id,
)
from pitrio.providers.credentials._openai_codex import (
    openai_codex_client as openai_codex_client,
)
from pitrio.providers.credentials._openai_codex import (
    openai_codex_refresher as openai_codex_refresher,
)
from pitrio.providers.credentials._refresh import RefreshFn as RefreshFn
from pitrio.providers.credentials._refresh import TokenRefreshError as TokenRefreshError
from pitrio.providers.credentials._refresh import TokenRefreshers as TokenRefreshers
from pitrio.providers.credentials._store import REFRESH_MARGIN as REFRESH_MARGIN
from pitrio.providers.credentials._store import REFRESH_TIMEOUT as REFRESH_TIMEOUT
from pitrio.providers.credentials._store import AuthStatus as AuthStatus
from pitrio.providers.credentials._store import CredentialStore as CredentialStore

__all__ = [
    "AUTH_FILE",
    "LOCK_STALE",
    "LOCK_UPDATE",
    "OPENAI_CODEX_TOKEN_URL",
    "REFRESH_MARGIN",
    "REFRESH_TIMEOUT",
    "ApiKeyCredential",
    "AuthCredential",
    "AuthFileError",
    "AuthLockCompromised",
    "AuthLockTimeout",
    "AuthStatus",
    "CredentialStore",
    "DeviceCode",
    "HeldLock",
    "LoginError",
    "OAuthClient",
    "OAuthCredential",
    "PasteFn",
    "RefreshFn",
    "TokenRefreshError",
    "TokenRefreshers",
    "acquire_auth_lock",
    "authorization_url",
    "default_refreshers",
    "exchange_code",
    "generate_pkce",
    "hold_auth_lock",
    "keep_lock_fresh",
    "lock_path",
    "login_device_code",
    "login_pkce",
    "openai_codex_account_id",
    "openai_codex_client",
    "openai_codex_refresher",
    "parse_authorization_input",
    "parse_credential",
    "poll_device_token",
    "read_auth_file",
    "release_auth_lock",
    "request_device_code",
    "write_auth_file",
]

_publish(globals(), __all__)
