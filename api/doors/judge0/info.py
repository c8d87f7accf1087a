"""Judge0's reading routes that need no submission: ``/languages``, ``/languages/{id}``, ``/statuses``,
``/about`` and ``/config_info`` (the configuration keys from the judge's settings: the limits are the
judge's own, the features the judge does not have are off: callbacks, network, compiler options,
submission delete)."""

from __future__ import annotations

from typing import Any

from fastapi import Response

from api.deps import GatewayDep
from api.doors.common import json_answer, toolchains
from api.doors.judge0.models import LANGUAGES, STATUSES, VERSION, error
from api.doors.judge0.render import name_of
from judge.settings import Settings

MAX_BATCH = 100
"""Most submissions in a batch (Judge0: 20): its tokens must fit the URL of ``GET /submissions/batch``."""


def max_batch(settings: Settings) -> int:
    """Most submissions in a batch: `MAX_BATCH`, or ``JUDGE_MAX_BATCH_SIZE`` when smaller."""
    return min(MAX_BATCH, settings.max_batch_size)


async def languages(gateway: GatewayDep) -> Response:
    """``GET /languages``: the judge's languages with Judge0 CE's ids."""
    await toolchains.refresh(gateway)
    return json_answer([{'id': i, 'name': name_of(i)} for i in sorted(LANGUAGES)])


async def language(language_id: int, gateway: GatewayDep) -> Response:
    """``GET /languages/{id}``."""
    if language_id not in LANGUAGES:
        return error('not found', 404)
    await toolchains.refresh(gateway)
    lang = LANGUAGES[language_id]
    return json_answer(
        {
            'id': lang.id,
            'name': name_of(lang.id),
            'is_archived': False,
            'source_file': lang.source_file,
            'compile_cmd': lang.compile_cmd,
            'run_cmd': lang.run_cmd,
        }
    )


async def statuses() -> Response:
    """``GET /statuses``."""
    return json_answer([{'id': i, 'description': d} for i, d in STATUSES.items()])


async def about() -> Response:
    """``GET /about``: the Judge0 version whose ids the door follows."""
    return json_answer({'version': VERSION, 'homepage': None, 'source_code': None, 'maintainer': 'celery-code-judge'})


async def config_info(gateway: GatewayDep) -> Response:
    """``GET /config_info``: Judge0's configuration keys, from the judge's settings."""
    return json_answer(config(gateway.settings))


def config(settings: Settings) -> dict[str, Any]:
    """Every key Judge0 CE 1.13.1 reports (the SDK requires them all)."""
    seconds = settings.max_execution_time
    memory_kb = settings.max_memory * 1024
    return {
        'maintenance_mode': False,
        'enable_wait_result': True,
        'enable_compiler_options': False,
        'allowed_languages_for_compile_options': [],
        'enable_command_line_arguments': True,
        'enable_submission_delete': False,
        'enable_callbacks': False,
        'callbacks_max_tries': 0,
        'callbacks_timeout': 0.0,
        'enable_additional_files': True,
        'max_queue_size': settings.max_in_flight,
        'cpu_time_limit': seconds,
        'max_cpu_time_limit': seconds,
        'cpu_extra_time': 0.0,
        'max_cpu_extra_time': seconds,
        'wall_time_limit': seconds,
        'max_wall_time_limit': seconds,
        'memory_limit': memory_kb,
        'max_memory_limit': memory_kb,
        'stack_limit': 64000,
        'max_stack_limit': 64000,
        'max_processes_and_or_threads': settings.pids_limit,
        'max_max_processes_and_or_threads': settings.pids_limit,
        'enable_per_process_and_thread_time_limit': False,
        'allow_enable_per_process_and_thread_time_limit': False,
        'enable_per_process_and_thread_memory_limit': False,
        'allow_enable_per_process_and_thread_memory_limit': False,
        'max_file_size': settings.file_size_limit_mb * 1024,
        'max_max_file_size': settings.file_size_limit_mb * 1024,
        'number_of_runs': 1,
        'max_number_of_runs': 1,
        'redirect_stderr_to_stdout': False,
        'max_extract_size': 10240,
        'enable_batched_submissions': True,
        'max_submission_batch_size': max_batch(settings),
        'submission_cache_duration': 0.0,
        'use_docs_as_homepage': False,
        'allow_enable_network': False,
        'enable_network': False,
    }
