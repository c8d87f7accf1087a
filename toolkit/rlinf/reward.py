"""``CodeJudgeReward``: an RLinf rule-based reward class scored on the judge (no rlinf import here).

Registered as ``reward_type: codejudge`` by :func:`toolkit.rlinf.ext.register`.  RLinf's reward
worker calls ``get_reward(responses, references)``: each response's last fenced code block (the
whole text when there is none) runs against the tests of its reference, and the reward is the pass
rate (``all_or_nothing: true`` gives 1.0 only when every test passes), times ``reward_scale``.

A reference is JSON (or a list whose first item is JSON, as RLinf's datasets pass answers):
``{"inputs": [...], "outputs": [...]}`` or ``[{"input": ..., "output": ...}, ...]``.  A sample
whose tests did not all get a real verdict (judge down, deadline) scores
``default_score_on_infra_error`` and is counted in ``last_infra_errors``.

Config (``cfg.reward``): ``codejudge.base_url`` or ``codejudge.host_addr``/``host_port``,
``codejudge.deadline_s``, ``reward_scale``, ``all_or_nothing``, ``default_score_on_infra_error``.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from toolkit.policy import policy_from_config
from toolkit.rewards.passrate import REWARD_POLICY, TestCase, pass_rates_sync
from toolkit.rlinf import codejudge_config
from toolkit.sync import SyncJudgeClient

__all__ = ['CodeJudgeReward', 'extract_code', 'parse_tests']

logger = logging.getLogger('toolkit.rlinf.reward')

_FENCE = re.compile(r'```[a-zA-Z0-9_+-]*\n(.*?)```', re.DOTALL)


def extract_code(response: str) -> str:
    """The last fenced code block of a response, or the whole response when it has none."""
    blocks = _FENCE.findall(response)
    return blocks[-1] if blocks else response


def parse_tests(reference: Any) -> list[TestCase]:
    """Test cases from one reference (see the module doc); ``[]`` when it holds none."""
    if isinstance(reference, list | tuple) and reference and isinstance(reference[0], str):
        reference = reference[0]
    if isinstance(reference, str):
        try:
            reference = json.loads(reference)
        except ValueError:
            return []
    if isinstance(reference, dict) and isinstance(reference.get('inputs'), list):
        return [
            TestCase(str(i), str(o)) for i, o in zip(reference['inputs'], reference.get('outputs') or [], strict=False)
        ]
    if isinstance(reference, list):
        return [
            TestCase(str(t.get('input', '')), str(t['output']))
            for t in reference
            if isinstance(t, dict) and 'output' in t
        ]
    return []


def _get(cfg: Any, key: str, default: Any) -> Any:
    value = cfg.get(key, default) if hasattr(cfg, 'get') else getattr(cfg, key, default)
    return default if value is None else value


class CodeJudgeReward:
    """RLinf reward class (``get_reward(response, reference) -> list[float]``) backed by the judge."""

    def __init__(self, config: Any) -> None:
        section = codejudge_config({'tools': {'codejudge': _get(config, 'codejudge', {})}})
        base_url, policy = policy_from_config(section)
        self.deadline_s = float(section.get('deadline_s', 120.0))
        self.scale = float(_get(config, 'reward_scale', 1.0))
        self.all_or_nothing = bool(_get(config, 'all_or_nothing', False))
        self.infra_score = float(_get(config, 'default_score_on_infra_error', 0.0))
        self.last_infra_errors = 0
        self._client = SyncJudgeClient(base_url, REWARD_POLICY)
        del policy  # rewards use the /judge route's policy; only the URL and deadline come from the config
        self.base_url = base_url

    def close(self) -> None:
        """Stop the client's background loop (RLinf never calls this; the thread is a daemon)."""
        self._client.close()

    def get_reward(self, response: list[str], reference: list[Any], **kwargs: Any) -> list[float]:
        """One reward per response (see the module doc)."""
        pairs = [(extract_code(str(resp)), parse_tests(ref)) for resp, ref in zip(response, reference, strict=True)]
        rates = pass_rates_sync(pairs, client=self._client, deadline_s=self.deadline_s)
        self.last_infra_errors = sum(1 for r in rates if not r.reliable)
        if self.last_infra_errors:
            logger.warning(
                '%d of %d rewards had no real verdict (judge unavailable)', self.last_infra_errors, len(rates)
            )
        scores = []
        for rate in rates:
            if not rate.reliable:
                scores.append(self.infra_score)
            elif self.all_or_nothing:
                scores.append(float(rate.total > 0 and rate.passed == rate.total) * self.scale)
            else:
                scores.append(rate.rate * self.scale)
        return scores
