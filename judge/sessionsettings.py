"""The settings of live Python sessions (docs/sessions.md), read from the environment like `judge.settings`.

Kept apart from `judge.settings.Settings` so that sessions change nothing of it.  Read at the edges
only: the gateway's session routes (`api.routes.sessions`) and the worker's session task
(`judge.worker.sessions`).
"""

from __future__ import annotations

import functools

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


def _env(name: str) -> AliasChoices:
    return AliasChoices(name)


class SessionSettings(BaseSettings):
    """Configuration of live sessions on gateways and workers (env var names in `validation_alias`)."""

    model_config = SettingsConfigDict(env_file=None, extra='ignore', populate_by_name=True)

    enabled: bool = Field(True, validation_alias=_env('JUDGE_SESSIONS'))
    """Workers consume their node's session queue and gateways serve ``/sessions*``."""
    memory_mb: int = Field(8192, gt=0, validation_alias=_env('JUDGE_SESSION_MEMORY_MB'))
    """Memory budget of one node's live sessions together (what their cgroups are charged); past it the
    least recently used idle sessions are evicted to replay-only."""
    max_sessions: int = Field(2000, gt=0, validation_alias=_env('JUDGE_SESSION_MAX'))
    """Live sessions per node (eviction as for the memory budget)."""
    ttl_s: float = Field(600, gt=0, validation_alias=_env('JUDGE_SESSION_TTL_S'))
    """Idle time after which a session expires (its record too), unless it asked for another."""
    max_ttl_s: float = Field(86400, gt=0, validation_alias=_env('JUDGE_SESSION_MAX_TTL_S'))
    max_memory_mb: int = Field(2048, gt=0, validation_alias=_env('JUDGE_SESSION_MAX_MEMORY_MB'))
    """The most a session may ask for as its own memory limit (the default is ``MAX_MEMORY``)."""
    disk_mb: int = Field(64, gt=0, validation_alias=_env('JUDGE_SESSION_DISK_MB'))
    """The tmpfs of a session and its forks together."""
    uid_base: int = Field(100000, gt=0, validation_alias=_env('JUDGE_SESSION_UID_BASE'))
    """First uid of the session uids (each session host takes 4096 of them, by its slot number)."""
    hash_seed: int = Field(0, ge=0, le=2**32 - 1, validation_alias=_env('JUDGE_SESSION_HASH_SEED'))
    """``PYTHONHASHSEED`` of the sessions' warm parents, the same on every node: replay elsewhere then
    orders sets and dicts of strings the same way."""
    replay_s: float = Field(120, gt=0, validation_alias=_env('JUDGE_SESSION_REPLAY_S'))
    """How long rebuilding a session by replay may take before the call is answered ``internal_error``."""
    heartbeat_s: float = Field(2, gt=0, validation_alias=_env('JUDGE_SESSION_HEARTBEAT_S'))
    """How often a worker says its node is alive; a node silent for three of these is presumed dead and its
    sessions move (by replay) to another node."""


@functools.lru_cache(maxsize=1)
def get_session_settings() -> SessionSettings:
    """The process-wide session settings, read once."""
    return SessionSettings()
