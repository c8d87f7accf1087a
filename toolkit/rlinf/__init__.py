"""RLinf adapter: the judge's tools on RLinf's tool channels, its reward class and its worker.

``toolkit.rlinf.JudgeToolWorker`` (an RLinf ``ToolWorker``, `toolkit.rlinf.worker`) and RLinf's
``ToolChannelRequest``/``ToolChannelResponse`` are loaded on first access, so importing this package
imports neither rlinf nor torch.  ``RLINF_EXT_MODULE=toolkit.rlinf.ext`` switches RLinf's stock scripts
to the judge by configuration alone.
"""

from __future__ import annotations

from typing import Any

from toolkit.rlinf.channels import JudgeToolHandler, codejudge_config, handler_from_config

__all__ = [
    'JudgeToolHandler',
    'JudgeToolWorker',
    'ToolChannelRequest',
    'ToolChannelResponse',
    'codejudge_config',
    'handler_from_config',
]


def __getattr__(name: str) -> Any:
    from toolkit.rlinf import channels

    return getattr(channels, name)
