"""Compatible doors: other services' APIs, each a thin translation into the same judge.

One module per door (`sandboxfusion`; its models in `sandboxfusion_models`); `common` holds what
they share.  Their submitting routes are in the route table (`api.table.door_routes`), with the
lane each uses; every request goes through `api.submit.submit`, like the native routes.
"""
