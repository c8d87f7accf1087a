"""What the test layers share: `processes` (real services, stacks, slots and session hosts, and the
host's view of them), `attacks` (the attack suite's kit), HTTP and metrics helpers, programs.

Modules here import only the standard library, pytest and the checkout (never a test module): the
client-only and framework venvs import some of them without the server's dependencies.
"""
