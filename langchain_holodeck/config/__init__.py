"""Configuration: pydantic models for ``agent.yaml`` and ``.holodeck/config.yaml``.

``config.models`` holds the models and names them in its ``__all__``; this package re-exports
exactly that list, so the two can never disagree.
"""

from __future__ import annotations

from langchain_holodeck.config.models import *  # noqa: F403  (re-export: models.__all__)
from langchain_holodeck.config.models import __all__  # noqa: F401
