"""The helpers' path through the fresh-account API, against a stand-in that speaks only its
contract (packaging/testdata/accounts-api-server.mjs, run as TABULA_BINARY): the fixture
asks the session's server for an account with the admin key it gave the server, and drops it
when the test ends. Needs no install:
PYTHONPATH=packaging/python python3 -m pytest -p tabuladb.pytest_plugin packaging/python/tests/test_contract.py
"""

import base64
import json
import os
import re
import urllib.request

import pytest

STAND_IN = os.path.join(os.path.dirname(__file__), "..", "..", "testdata", "accounts-api-server.mjs")
os.environ["TABULA_BINARY"] = os.path.abspath(STAND_IN)

import tabuladb  # noqa: E402


def calls(endpoint):
    with urllib.request.urlopen(endpoint + "/_contract/calls") as r:
        return [c for c in json.load(r) if c["url"].startswith("/_tabula/")]


def test_fixture_takes_an_account(tabula, tabula_server):
    assert re.search(f"AccountName={tabula.account_name};AccountKey={re.escape(tabula.account_key)};", tabula.connection_string)
    post = calls(tabula_server.endpoint)[-1]
    assert (post["method"], post["url"]) == ("POST", "/_tabula/api/accounts")
    user, _, key = base64.b64decode(post["authorization"][len("Basic "):]).decode().partition(":")
    assert (user, key) == ("_tabula", tabula_server.admin_key)


def test_previous_fake_was_dropped(tabula_server):
    seen = [(c["method"], c["url"]) for c in calls(tabula_server.endpoint)]
    assert seen[0][0] == "POST"
    assert ("DELETE", "/_tabula/api/accounts/acct1") in seen  # the stand-in names them acct1, acct2, …


def test_fake_outside_pytest():
    with tabuladb.fake() as f:
        assert f.account_name.startswith("acct")
    with tabuladb.start(admin_key="k") as srv:
        acct = srv.create_account("named")
        assert acct.account_name == "named"
        acct.stop()
        assert [(c["method"], c["url"]) for c in calls(srv.endpoint)] == [
            ("POST", "/_tabula/api/accounts"), ("DELETE", "/_tabula/api/accounts/named")]
