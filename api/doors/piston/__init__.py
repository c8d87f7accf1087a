"""Piston's API (``/api/v2``): plain jobs (`routes`), open-r1's Codeforces and IOI packages (`codeforces`,
`ioi`), what they share (`stages`), the request and answer models and the runtimes offered."""
