"""The compatible doors (SandboxFusion, Piston, Judge0) over HTTP against a real stack."""
