"""verl tools backed by the judge (`PythonTool`, `JupyterTool`) and their YAML configs."""
