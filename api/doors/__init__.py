"""Compatible doors: other services' APIs, each a thin translation into the same judge.

One sub-package per door (`sandboxfusion`, `piston`, `judge0`: its `routes`, its `models` and the rest);
`common` (with `answer`) holds what they share and `semver` the version numbers Piston and Judge0 show.
Their submitting routes are in the route table (`api.routes.table.door_routes`), with the lane each uses;
every request goes through `api.routes.submit.submit`, like the native routes.
"""
