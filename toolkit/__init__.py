"""Client toolkit for the code judge: batching async client, verl/RLinf tools, sync client, rewards.

Speaks HTTP JSON to the gateway only (aiohttp); imports nothing from ``judge`` or ``api`` and needs
neither torch, verl nor rlinf.  ``PythonTool``/``JupyterTool`` are loaded on first access so that
``import toolkit`` never pulls in verl (and torch) when verl happens to be installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolkit.batcher import RequestProcessor
from toolkit.client import DEFAULT_BASE_URL, JudgeClient
from toolkit.errors import (
    BadResponse,
    DeadlineExceeded,
    JudgeBusy,
    JudgeUnavailable,
    ProcessorClosed,
    RequestRejected,
    RequestTimeout,
    ToolkitError,
)
from toolkit.models import Result, Submission
from toolkit.policy import BatchPolicy, RetryPolicy, is_retryable
from toolkit.sessions import CellResult, Notebooks, Session, Sessions, SyncSession, SyncSessions, cell_text
from toolkit.shared import close_shared, get_shared
from toolkit.sync import SyncJudgeClient
from toolkit.wrapper import format_tool_text, wrap_code

if TYPE_CHECKING:
    from toolkit.verl.tools import JupyterTool, PythonTool

__all__ = [
    'DEFAULT_BASE_URL',
    'BadResponse',
    'BatchPolicy',
    'CellResult',
    'DeadlineExceeded',
    'JudgeBusy',
    'JudgeClient',
    'JudgeUnavailable',
    'JupyterTool',
    'Notebooks',
    'ProcessorClosed',
    'PythonTool',
    'RequestProcessor',
    'RequestRejected',
    'RequestTimeout',
    'Result',
    'RetryPolicy',
    'Session',
    'Sessions',
    'Submission',
    'SyncJudgeClient',
    'SyncSession',
    'SyncSessions',
    'ToolkitError',
    'cell_text',
    'close_shared',
    'format_tool_text',
    'get_shared',
    'is_retryable',
    'wrap_code',
]

_LAZY = {'PythonTool', 'JupyterTool'}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from toolkit.verl import tools

        return getattr(tools, name)
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
