"""Judge0's ``/config_info`` from the judge's settings: the limits are the judge's own, the features
the judge does not have are off (callbacks, network, compiler options, submission delete)."""

from __future__ import annotations

from typing import Any

from judge.settings import Settings


def config_info(settings: Settings, max_batch: int) -> dict[str, Any]:
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
        'max_submission_batch_size': max_batch,
        'submission_cache_duration': 0.0,
        'use_docs_as_homepage': False,
        'allow_enable_network': False,
        'enable_network': False,
    }
