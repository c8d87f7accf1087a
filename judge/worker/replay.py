"""What the worker records for replay: each cell's seed, and why its replay might not repeat it.

A session's cells are replayed on another node when it is lost (`judge.worker.sessionservice`).  Each
cell runs with a recorded seed (`judge.sandbox.zygote.cell.seed_cell` puts it into every generator a
cell draws from without asking): derived from the session's ``seed`` when it has one, else fresh.
What a seed cannot make repeat is noted per cell: the runtime's audit hook tells what the cell did
(files written earlier and read now, network, processes, threads, sleeping, an interrupt), and
`static_reasons` what its source reads (the clock, the system's entropy).
"""

from __future__ import annotations

import hashlib
import os
import re

_CLOCK = re.compile(
    r'\b(time\s*\.\s*(time|time_ns|monotonic|monotonic_ns|perf_counter|perf_counter_ns|process_time|localtime|gmtime|ctime|asctime|strftime)'
    r'|datetime\s*\.\s*(now|today|utcnow)|date\s*\.\s*today|from\s+time\s+import|from\s+datetime\s+import)\b'
)
_ENTROPY = re.compile(r'\b(urandom|SystemRandom|secrets|uuid1|uuid4|getrandom|token_bytes|token_hex)\b|\bRandom\(\s*\)')
_ADDRESS = re.compile(r'\bid\s*\(|object\s+at\s+0x')


def derive_seed(session_seed: object, index: int) -> int:
    """Cell ``index``'s seed: from the session's seed (the same cells then repeat everywhere), else fresh."""
    if isinstance(session_seed, int):
        digest = hashlib.sha256(f'{session_seed}:{index}'.encode()).digest()
        return int.from_bytes(digest[:8], 'big') >> 1
    return int.from_bytes(os.urandom(8), 'big') >> 1


def static_reasons(code: str) -> set[str]:
    """Why replaying ``code`` may differ, from its text: it reads the clock or the system's entropy, or
    shows object addresses (``id``), which differ in every process."""
    reasons = set()
    if _CLOCK.search(code):
        reasons.add('clock')
    if _ENTROPY.search(code):
        reasons.add('entropy')
    if _ADDRESS.search(code):
        reasons.add('address')
    return reasons
