"""OpenAI function schemas of the two tools the judge serves (plain dicts, no framework import).

``python_code_with_standard_io(code, input)`` and ``jupyter_code(code)`` keep rStar2-Agent's tool
names and argument names, so prompts and datasets written for rStar2 / RLinf work unchanged.
"""

from __future__ import annotations

from typing import Any

__all__ = ['JUPYTER_SCHEMA', 'JUPYTER_TOOL', 'PYTHON_SCHEMA', 'PYTHON_TOOL', 'TOOL_SCHEMAS']

PYTHON_TOOL = 'python_code_with_standard_io'
JUPYTER_TOOL = 'jupyter_code'

PYTHON_SCHEMA: dict[str, Any] = {
    'type': 'function',
    'function': {
        'name': PYTHON_TOOL,
        'description': 'Run a Python program with the given standard input; returns its stdout and stderr.',
        'parameters': {
            'type': 'object',
            'properties': {
                'code': {'type': 'string', 'description': 'Python source code to run.'},
                'input': {'type': 'string', 'description': 'Text fed to standard input (may be empty).'},
            },
            'required': ['code', 'input'],
        },
    },
}
JUPYTER_SCHEMA: dict[str, Any] = {
    'type': 'function',
    'function': {
        'name': JUPYTER_TOOL,
        'description': 'Run a notebook cell; variables from earlier cells of this conversation are kept.',
        'parameters': {
            'type': 'object',
            'properties': {'code': {'type': 'string', 'description': 'Python code of the cell.'}},
            'required': ['code'],
        },
    },
}
TOOL_SCHEMAS: dict[str, dict[str, Any]] = {PYTHON_TOOL: PYTHON_SCHEMA, JUPYTER_TOOL: JUPYTER_SCHEMA}
"""Schema of each tool, by tool name."""
