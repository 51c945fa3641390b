"""The pytest plugin of tabuladb (registered by the wheel's pytest11 entry point).

Fixtures:
- ``tabula``: a fresh, isolated fake per test (a ``tabuladb.Fake``: connection_string,
  account_name, account_key), dropped with its data when the test ends;
- ``tabula_connection_string``: that fake's connection string;
- ``tabula_server``: the session-scoped ``tabula serve --in-memory`` behind them (a
  ``tabuladb.Server``), for tests that want its endpoint or admin key.
"""

import pytest

import tabuladb


@pytest.fixture(scope="session")
def tabula_server():
    """The session's ``tabula serve --in-memory`` (a ``tabuladb.Server``): its endpoint,
    admin key and connection string, for tests that want the server itself."""
    srv = tabuladb.start()
    yield srv
    srv.stop()


@pytest.fixture
def tabula(tabula_server):
    """A fresh, empty fake of Azure Table storage for this test (a ``tabuladb.Fake``:
    connection_string, account_name, account_key), dropped with its data when it ends."""
    try:
        f = tabula_server.create_account()
    except tabuladb.NoAccountAPI:
        own = tabuladb.start()  # a server without the account API: a server per test
        f = tabuladb.Fake(own.connection_string, own.account_name, own.account_key, own.stop)
    yield f
    f.stop()


@pytest.fixture
def tabula_connection_string(tabula):
    """The connection string of this test's fresh fake, for any Azure SDK."""
    return tabula.connection_string
