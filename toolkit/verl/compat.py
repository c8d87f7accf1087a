"""Soft import of verl: the base class, response type and tracing decorator our tools use.

With verl >= 0.6 installed, tools subclass ``verl.tools.base_tool.BaseTool`` and answer with
``verl.tools.schemas.ToolResponse``; with verl 0.4/0.5 (no ``ToolResponse``) they answer with plain
strings, as those versions expect.  Without verl they subclass :class:`FallbackBaseTool` and answer
with :class:`TextResponse`, so the same method shapes work everywhere and nothing heavy is imported.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

__all__ = [
    'HAVE_VERL',
    'LEGACY_VERL',
    'BaseToolBase',
    'FallbackBaseTool',
    'TextResponse',
    'make_response',
    'make_schema',
    'trace_op',
]

F = TypeVar('F', bound=Callable[..., Any])

logger = logging.getLogger('toolkit.verl.compat')


@dataclasses.dataclass
class TextResponse:
    """Stand-in for verl's ``ToolResponse`` when verl is not installed."""

    text: str | None = None
    image: list[Any] | None = None
    video: list[Any] | None = None


class FallbackBaseTool:
    """Same constructor and attributes as verl's ``BaseTool`` (``config``, ``tool_schema``, ``name``)."""

    def __init__(self, config: dict[str, Any], tool_schema: Any) -> None:
        self.config = config
        self.tool_schema = tool_schema or self.get_openai_tool_schema()
        self.name: str = self.tool_schema['function']['name']

    def get_openai_tool_schema(self) -> Any:
        """The tool's OpenAI function schema."""
        return self.tool_schema

    async def create(self, instance_id: str | None = None, **kwargs: Any) -> Any:
        """Create a tool instance; see the subclasses."""
        return instance_id or uuid.uuid4().hex

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """Forget a tool instance."""


def _identity(fn: F) -> F:
    return fn


def _soft_import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except Exception as e:  # ImportError, or a broken torch/ray install: behave as if verl were absent
        logger.debug('verl not usable (%s): %s', name, e)
        return None


_schemas: Any = _soft_import('verl.tools.schemas')
_base_mod: Any = _soft_import('verl.tools.base_tool') if _schemas is not None else None
_verl_base: Any = getattr(_base_mod, 'BaseTool', None)
_trace_mod: Any = _soft_import('verl.utils.rollout_trace') if _verl_base is not None else None
_trace: Any = getattr(_trace_mod, 'rollout_trace_op', None)

HAVE_VERL: bool = _verl_base is not None
"""verl is importable (its ``BaseTool`` is our tools' base class)."""
LEGACY_VERL: bool = HAVE_VERL and not hasattr(_schemas, 'ToolResponse')
"""verl 0.4/0.5: ``create`` returns ``str`` and ``execute`` returns ``(str, float, dict)``."""

if TYPE_CHECKING:
    BaseToolBase = FallbackBaseTool
else:
    BaseToolBase = _verl_base if HAVE_VERL else FallbackBaseTool

trace_op: Callable[[F], F] = _trace if _trace is not None else _identity
"""verl's ``rollout_trace_op`` when available (weave/mlflow traces), else a no-op decorator."""


def make_response(text: str | None) -> Any:
    """A tool response for the installed verl: ``ToolResponse``, ``str`` (0.4/0.5) or ``TextResponse``."""
    if LEGACY_VERL:
        return text or ''
    if HAVE_VERL:
        return _schemas.ToolResponse(text=text)
    return TextResponse(text=text)


def make_schema(schema: Any) -> Any:
    """Turn a schema dict into verl's ``OpenAIFunctionToolSchema`` when verl is installed."""
    if HAVE_VERL and isinstance(schema, dict):
        return _schemas.OpenAIFunctionToolSchema.model_validate(schema)
    return schema
