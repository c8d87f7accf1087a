"""What the test layers share: real services and stacks, HTTP helpers, slots, the attack kit, programs.

Modules here import only the standard library, pytest and the checkout (never a test module): the
client-only and framework venvs import some of them without the server's dependencies.
"""
