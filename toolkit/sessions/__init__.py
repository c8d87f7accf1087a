"""Live Python sessions from the client side: the async API (`client`: ``Sessions``, ``Session``,
``CellResult``), its blocking facade (`sync`: ``SyncSessions``) and one notebook per trajectory for
the tools, live or replayed (`notebooks`: ``Notebooks``).  docs/sessions.md describes the service."""

from toolkit.sessions.client import CellResult, Session, Sessions, cell_text
from toolkit.sessions.notebooks import MODES, Notebooks
from toolkit.sessions.sync import SyncSession, SyncSessions

__all__ = ['MODES', 'CellResult', 'Notebooks', 'Session', 'Sessions', 'SyncSession', 'SyncSessions', 'cell_text']
