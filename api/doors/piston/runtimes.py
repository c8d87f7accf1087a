"""The runtimes the Piston door offers: each Piston language name and aliases, the judge language it
runs on, and its version; resolution of a request's ``language`` and ``version`` as Piston does it
(the runtimes whose name or alias matches and whose version satisfies the selector; the newest wins).

The plain languages report the judge's toolchain versions (`api.doors.common.toolchains`).  The
Codeforces package (version 1.0.0, open-r1's ``codeforces``) adds the Codeforces language names
(`api.doors.piston.codeforces`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from api.doors import semver
from api.doors.common import Version, toolchains

CODEFORCES = 'codeforces'
CMS_IOI = 'cms_ioi'
PACKAGE_VERSION = (1, 0, 0)


@dataclass(frozen=True)
class Runtime:
    """One Piston runtime."""

    language: str
    aliases: tuple[str, ...]
    judge: str
    """The judge's language (`judge.contracts.Language`)."""
    runtime: str | None = None
    """Piston's ``runtime`` (the package providing it), when it has one."""
    package: str = ''
    """A door package (`CODEFORCES`) whose behaviour the run follows, or '' for a plain run."""
    compiled: bool = False

    def listing(self, version: Version) -> dict[str, Any]:
        """Its entry in ``GET /api/v2/runtimes``."""
        entry: dict[str, Any] = {
            'language': self.language,
            'version': semver.show(version),
            'aliases': list(self.aliases),
        }
        if self.runtime:
            entry['runtime'] = self.runtime
        return entry


PLAIN = (
    Runtime('python', ('py', 'py3', 'python3'), 'python'),
    Runtime('c++', ('cpp', 'g++'), 'cpp', 'gcc', compiled=True),
    Runtime('c', ('gcc',), 'c', 'gcc', compiled=True),
    Runtime('java', (), 'java', compiled=True),
    Runtime('javascript', ('node-javascript', 'node-js', 'js'), 'javascript', 'node'),
    Runtime('go', ('golang',), 'go', compiled=True),
    Runtime('rust', ('rs',), 'rust', compiled=True),
    Runtime('bash', ('sh',), 'bash'),
)
_CF_CPP = {
    'c++': ('GNU C++', 'cf_c++'),
    'c++0x': ('GNU C++0x', 'cf_c++0x'),
    'c++11': ('GNU C++11', 'cf_c++11'),
    'c++14': ('C++14 (GCC 6-32)', 'cf_c++14'),
    'c++17': ('C++17 (GCC 7-32)', 'C++17 (GCC 9-64)', 'cf_c++17'),
    'c++20': ('C++20 (GCC 11-64)', 'C++20 (GCC 13-64)', 'cf_c++20'),
}
PACKAGED = (
    *(Runtime(name, aliases, 'cpp', CODEFORCES, CODEFORCES, True) for name, aliases in _CF_CPP.items()),
    Runtime('python3', ('Python 3', 'cf_python3'), 'python', CODEFORCES, CODEFORCES, True),
    Runtime('java', ('Java 17', 'cf_java'), 'java', CODEFORCES, CODEFORCES, True),
    Runtime('cms', ('cms_ioi',), 'cpp', CMS_IOI, CMS_IOI, True),
)
"""open-r1's Codeforces package (every C++ dialect compiles as the judge's C++, gnu++17; no Kotlin) and
its IOI package (``cms_ioi``, `api.doors.piston.ioi`)."""
PACKAGES = {CODEFORCES: PACKAGE_VERSION, CMS_IOI: PACKAGE_VERSION}


class Runtimes:
    """The door's runtimes with their versions (plain ones the judge's toolchains', `api.doors.common.toolchains`)."""

    def version(self, runtime: Runtime) -> Version:
        """The runtime's version (a package's, or the judge's toolchain; 0.0.0 before any worker reported)."""
        if runtime.package:
            return PACKAGES[runtime.package]
        return toolchains.version(runtime.judge)

    def listing(self) -> list[dict[str, Any]]:
        """``GET /api/v2/runtimes``."""
        return [rt.listing(self.version(rt)) for rt in (*PLAIN, *PACKAGED)]

    def resolve(self, language: str, selector: str) -> Runtime | None:
        """The newest runtime named or aliased ``language`` whose version satisfies ``selector``;
        `ValueError` for a selector that is not SemVer."""
        found = [
            rt
            for rt in (*PLAIN, *PACKAGED)
            if (rt.language == language or language in rt.aliases) and semver.satisfies(self.version(rt), selector)
        ]
        return max(found, key=self.version, default=None)
