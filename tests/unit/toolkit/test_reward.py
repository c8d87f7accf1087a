"""Pass-rate rewards (`toolkit.rewards.passrate`): per-sample rates in one batch, unreliable when infra failed."""

from __future__ import annotations

from tests.support.toolkit_fakes import fake_gateway, fast_policy, run
from toolkit import RequestProcessor


def test_reward_pass_rates() -> None:
    from toolkit.rewards.passrate import PassRate, TestCase, pass_rates

    async def main() -> None:
        async with fake_gateway() as gw:
            pairs = [('A', [TestCase(None, 'A'), TestCase('in', 'B')]), ('B', [(None, 'B')]), ('C', [])]
            rates = await pass_rates(pairs, base_url=gw.url)
            assert rates == [PassRate(1, 2), PassRate(1, 1), PassRate(0, 0)]
            assert [r.rate for r in rates] == [0.5, 1.0, 0.0]
            assert all(len(b) == 3 for b in gw.batches) and len(gw.batches) == 1
        async with fake_gateway(script=['queue_timeout'] * 20) as gw:
            proc = RequestProcessor(gw.url, fast_policy(route='/judge/long-batch', retry={'max_attempts': 1}))
            [rate] = await pass_rates([('A', [(None, 'A')])], processor=proc)
            assert (rate.rate, rate.reliable) == (0.0, False)
            await proc.close()

    run(main())
