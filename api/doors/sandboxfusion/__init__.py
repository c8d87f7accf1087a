"""SandboxFusion's API: ``/run_code`` and ``/run_jupyter`` (`routes`), their models and the notebook
driver (`jupyter`)."""
