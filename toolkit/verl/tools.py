"""verl tools backed by the judge: :class:`PythonTool` and the stateful :class:`JupyterTool`.

Use them from a verl tool YAML (``class_name: toolkit.PythonTool``; see ``toolkit/configs/``).
They keep rStar2-Agent's config keys, tool names and tool text, but send through the process-wide
batcher (:func:`toolkit.get_shared`), never hang (every call has a deadline) and flag infrastructure
failures in the metrics dict (``metrics['infra_error']``).  verl's ``ToolAgentLoop`` drops that dict,
so when verl passes ``agent_data`` the tools also count into ``agent_data.extra_fields``, which
verl copies into ``non_tensor_batch`` (see :data:`EXTRA_FIELDS`): a trainer masks a sample whose
``judge_infra_errors`` is non-zero.
"""

from __future__ import annotations

import json
import logging
import uuid
import weakref
from typing import Any

from toolkit.errors import ToolkitError
from toolkit.models import Result, Submission
from toolkit.policy import policy_from_config
from toolkit.schemas import JUPYTER_SCHEMA, PYTHON_SCHEMA
from toolkit.sessions.client import cell_text
from toolkit.sessions.notebooks import Notebooks
from toolkit.shared import get_shared
from toolkit.verl.compat import LEGACY_VERL, BaseToolBase, make_response, make_schema, trace_op
from toolkit.wrapper import format_error_text, format_tool_text, wrap_code

__all__ = ['EXTRA_FIELDS', 'JUPYTER_SCHEMA', 'PYTHON_SCHEMA', 'JupyterTool', 'PythonTool', 'record_call']

logger = logging.getLogger('toolkit.verl.tools')

EXTRA_FIELDS = ('judge_tool_calls', 'judge_infra_errors', 'judge_infra_reasons')
"""Keys the tools keep in ``agent_data.extra_fields`` per trajectory: calls made, calls the judge
could not answer (infrastructure, not the program), and those calls' ``reason`` strings."""


def record_call(kwargs: dict[str, Any], metrics: dict[str, Any]) -> None:
    """Count one call into ``kwargs['agent_data'].extra_fields`` (verl >= 0.7 passes ``agent_data``)."""
    fields = getattr(kwargs.get('agent_data'), 'extra_fields', None)
    if not isinstance(fields, dict):
        return
    fields['judge_tool_calls'] = int(fields.get('judge_tool_calls') or 0) + 1
    fields.setdefault('judge_infra_errors', 0)
    fields.setdefault('judge_infra_reasons', [])
    if metrics.get('infra_error'):
        fields['judge_infra_errors'] += 1
        fields['judge_infra_reasons'] = [*fields['judge_infra_reasons'], str(metrics.get('reason') or '')]


class PythonTool(BaseToolBase):
    """``python_code_with_standard_io(code, input)``: run a program, answer with rStar's tool text.

    :param config: the YAML ``config`` mapping (``host_addr``, ``host_port``,
        ``request_processor_batch_size``, ``request_processor_concurrency``, ... or ``base_url``).
    :param tool_schema: an OpenAI function schema; defaults to ``python_code_with_standard_io``.
    """

    default_schema: dict[str, Any] = PYTHON_SCHEMA

    def __init__(self, config: dict[str, Any] | None = None, tool_schema: Any = None) -> None:
        config = dict(config or {})
        self._schema = make_schema(tool_schema or self.default_schema)
        super().__init__(config, self._schema)
        self.base_url, self.policy = policy_from_config(config)
        self._instances: dict[str, list[str]] = {}

    def get_openai_tool_schema(self) -> Any:
        """The tool's schema (verl calls this while constructing the base class)."""
        return getattr(self, 'tool_schema', None) or self._schema

    async def create(self, instance_id: str | None = None, **kwargs: Any) -> Any:
        """Register an instance: returns ``(id, response)`` (verl >= 0.6) or ``id`` (verl 0.4/0.5)."""
        instance_id = instance_id or uuid.uuid4().hex
        self._instances[instance_id] = []
        return instance_id if LEGACY_VERL else (instance_id, make_response(None))

    def _program(self, instance_id: str, parameters: dict[str, Any], kwargs: dict[str, Any]) -> Submission:
        stdin = parameters.get('input')
        return Submission(wrap_code(parameters['code']), input=stdin if isinstance(stdin, str) else None)

    def _remember(self, instance_id: str, code: str, kwargs: dict[str, Any]) -> None:
        """Hook for stateful tools: called after a cell ran."""

    @trace_op
    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[Any, float, dict[str, Any]]:
        """Run one call; returns ``(response, 0.0, metrics)``; never raises for judge failures.

        ``metrics`` has ``infra_error`` (True: the judge, not the program, failed), ``reason``,
        ``attempts``, ``latency_s`` and, for results, ``cost_s``, ``success`` and ``verdict``.
        With ``agent_data`` (verl's ``ToolAgentLoop``), the call is also counted into
        ``agent_data.extra_fields`` (:func:`record_call`).
        """
        code = parameters.get('code') if isinstance(parameters, dict) else None
        if not isinstance(code, str):
            text = 'Tool call failure\nreason: invalid_input\nstderr: the "code" argument must be a string'
            invalid: dict[str, Any] = {'infra_error': False, 'invalid_call': True, 'reason': 'invalid_input'}
            record_call(kwargs, invalid)
            return make_response(text), 0.0, invalid
        try:
            result = await self._run(instance_id, parameters, kwargs)
        except ToolkitError as err:
            logger.warning('tool call failed without a result: %s', err)
            metrics: dict[str, Any] = {'infra_error': err.infra, 'reason': err.reason, 'error': str(err)}
            metrics['attempts'] = err.attempts
            record_call(kwargs, metrics)
            return make_response(format_error_text(err)), 0.0, metrics
        self._remember(instance_id, code, kwargs)
        metrics = _result_metrics(result)
        record_call(kwargs, metrics)
        return make_response(self._text(result)), 0.0, metrics

    async def _run(self, instance_id: str, parameters: dict[str, Any], kwargs: dict[str, Any]) -> Result:
        """One call's result, through the shared batcher."""
        return await get_shared(self.base_url, self.policy).submit(self._program(instance_id, parameters, kwargs))

    def _text(self, result: Result) -> str:
        return format_tool_text(result)

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """Tools give no reward of their own (verl never calls this)."""
        return 0.0

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """Forget the instance."""
        self._instances.pop(instance_id, None)


def _result_metrics(result: Result) -> dict[str, Any]:
    return {
        'infra_error': result.infra,
        'reason': result.reason,
        'success': result.ok,
        'verdict': result.verdict,
        'cost_s': result.cost,
        'attempts': result.attempts,
        'latency_s': result.latency_s,
        'batch_size': result.batch_size,
    }


def _history_cells(calls: Any) -> list[str]:
    """Code of earlier ``jupyter_code`` calls from rStar-style ``history_tool_calls``."""
    cells: list[str] = []
    for call in calls or ():
        if isinstance(call, str):
            cells.append(call)
            continue
        name = call.get('name') if isinstance(call, dict) else getattr(call, 'name', None)
        args = call.get('arguments') if isinstance(call, dict) else getattr(call, 'arguments', None)
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                continue
        if name == 'jupyter_code' and isinstance(args, dict) and isinstance(args.get('code'), str):
            cells.append(args['code'])
    return cells


class JupyterTool(PythonTool):
    """``jupyter_code(code)``: a notebook per trajectory (`toolkit.sessions.notebooks`).

    With verl's ``agent_data`` (verl >= 0.7 makes a tool instance per call) the notebook is the
    trajectory's (``agent_data.request_id``) and is closed when verl drops the trajectory's
    ``AgentData`` (the judge's idle TTL is the backstop); without it, the instance's, closed at
    ``release``.  Config: ``session_mode`` (``auto``: a live session, or replay when the judge has
    none; ``sessions``; ``replay``), ``session_kind`` (``scientific``/``lean``), ``session_ttl_s``,
    ``max_trajectories`` (histories kept, least recently used dropped).  rStar's
    ``create(history_tool_calls=[...])`` seeds the cells that come before.
    """

    default_schema = JUPYTER_SCHEMA

    def __init__(self, config: dict[str, Any] | None = None, tool_schema: Any = None) -> None:
        super().__init__(config, tool_schema)
        ttl = self.config.get('session_ttl_s')
        self.notebooks = Notebooks(
            self.base_url,
            self.policy,
            mode=str(self.config.get('session_mode', 'auto')),
            kind=str(self.config.get('session_kind', 'scientific')),
            ttl_s=float(ttl) if ttl else None,
            max_trajectories=int(self.config.get('max_trajectories', 4096)),
        )
        self._ends: dict[str, Any] = {}
        """Trajectory key -> the finalizer that closes its notebook (`weakref.finalize`)."""

    async def create(self, instance_id: str | None = None, **kwargs: Any) -> Any:
        """Register an instance, seeding its history from ``history_tool_calls`` if given."""
        out = await super().create(instance_id, **kwargs)
        iid = out if isinstance(out, str) else out[0]
        create_kwargs = kwargs.get('create_kwargs') or {}
        cells = _history_cells(kwargs.get('history_tool_calls') or create_kwargs.get('history_tool_calls'))
        if cells:
            self.notebooks.history[iid] = cells
        return out

    def _key(self, instance_id: str, kwargs: dict[str, Any]) -> str:
        agent = kwargs.get('agent_data')
        key = getattr(agent, 'request_id', None)
        if not isinstance(key, str):
            return instance_id
        if key not in self.notebooks.history and instance_id in self.notebooks.history:
            self.notebooks.history[key] = self.notebooks.history.pop(instance_id)
        if key not in self._ends or not self._ends[key].alive:
            self._ends = {k: f for k, f in self._ends.items() if f.alive}
            self._ends[key] = weakref.finalize(agent, self.notebooks.close_soon, key)  # the trajectory's end
        return key

    async def _run(self, instance_id: str, parameters: dict[str, Any], kwargs: dict[str, Any]) -> Result:
        return await self.notebooks.run(self._key(instance_id, kwargs), parameters['code'])

    def _text(self, result: Result) -> str:
        return cell_text(result)

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """Forget the instance; without a trajectory key (old verl), its notebook ends with it."""
        await super().release(instance_id, **kwargs)
        if instance_id in self.notebooks.history:
            await self.notebooks.close(instance_id)
