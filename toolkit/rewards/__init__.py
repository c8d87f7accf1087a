"""Judge-side rewards: pass rates of solutions against their tests (`passrate`), and final math
answers graded against references inside the sandbox (`answers`)."""

from toolkit.rewards.answers import DEFAULT_SCORER, MATH_POLICY, MathScore, grader_source, math_scores
from toolkit.rewards.passrate import REWARD_POLICY, PassRate, TestCase, pass_rates, pass_rates_sync

__all__ = [
    'DEFAULT_SCORER',
    'MATH_POLICY',
    'REWARD_POLICY',
    'MathScore',
    'PassRate',
    'TestCase',
    'grader_source',
    'math_scores',
    'pass_rates',
    'pass_rates_sync',
]
