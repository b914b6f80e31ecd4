"""Shared fixtures. Tests never reach the network: providers are tested against loopback servers.

Hypothesis runs under one profile, ``pitrio``, loaded here for every test: no per-example
deadline (a loaded 2-core machine easily takes longer than Hypothesis's default 200 ms, and a
timing failure says nothing about the code) and no example database, so a failure found on one
run is never saved into the checkout (``.hypothesis/``) to replay on later runs. Hypothesis
also caches what it learns from the source (``constants/``) in its home directory, which is
moved to the system temp directory so that nothing it writes lands in the checkout. A test that
needs fewer examples sets ``max_examples`` only.
"""

from __future__ import annotations

import os
import tempfile
from typing import Final

from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir

ALLOW_NETWORK = False

HYPOTHESIS_PROFILE: Final = "pitrio"
HYPOTHESIS_HOME: Final = os.path.join(tempfile.gettempdir(), "pitrio-hypothesis")

set_hypothesis_home_dir(HYPOTHESIS_HOME)

settings.register_profile(HYPOTHESIS_PROFILE, deadline=None, database=None)
settings.load_profile(HYPOTHESIS_PROFILE)
