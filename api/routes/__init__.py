"""The gateway's own routes: the route table (`table`) and the one way a route submits work
(`submit`); the upstream-compatible routes (`upstream`), ``/judge/tests`` (`judge_tests`), ``/status``
(`status`) and the session routes (`sessions`).  Other services' APIs are in `api.doors`."""
