"""Run by .ci/run with the built wheel installed into a fresh virtual environment (Debian's
python3-azure and python3-pytest beside it): each test gets its own fake through the
plugin's fixtures, and the fakes do not see each other's tables."""

import os
import subprocess
import sys

import pytest
from azure.data.tables import TableServiceClient

import tabuladb


def table_names(connection_string):
    with TableServiceClient.from_connection_string(connection_string) as svc:
        return sorted(t.name for t in svc.list_tables())


@pytest.mark.parametrize("who", ["first", "second"])
def test_each_test_has_a_fake_of_its_own(tabula_connection_string, who):
    assert table_names(tabula_connection_string) == [], "a fresh fake is empty"
    with TableServiceClient.from_connection_string(tabula_connection_string) as svc:
        orders = svc.create_table("Orders")
        orders.create_entity({"PartitionKey": who, "RowKey": "1", "Total": 42})
        assert orders.get_entity(who, "1")["Total"] == 42
    assert table_names(tabula_connection_string) == ["Orders"]


def test_fakes_side_by_side_are_isolated(tabula):
    with tabuladb.fake() as other:
        with TableServiceClient.from_connection_string(tabula.connection_string) as svc:
            svc.create_table("OnlyHere")
        assert table_names(tabula.connection_string) == ["OnlyHere"]
        assert table_names(other.connection_string) == []


def test_session_server(tabula_server):
    assert tabula_server.endpoint.startswith("http://127.0.0.1:")
    assert tabula_server.process.poll() is None


@pytest.mark.skipif(bool(os.environ.get("TABULA_BINARY")), reason="$TABULA_BINARY names another binary")
def test_binary_is_the_wheels():
    assert tabuladb.binary_path().startswith(os.path.dirname(tabuladb.__file__))
    out = subprocess.run([os.path.join(os.path.dirname(sys.executable), "tabula"), "version"],
                         check=True, capture_output=True, text=True).stdout
    assert out.startswith("tabula ")


def test_fixtures_say_what_they_are(tmp_path):
    """pytest --fixtures shows each of the plugin's fixtures with its docstring."""
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--fixtures", str(tmp_path)],
                         capture_output=True, text=True, cwd=tmp_path).stdout
    lines = out.splitlines()
    for name in ("tabula", "tabula_connection_string", "tabula_server"):
        at = [i for i, line in enumerate(lines) if line.split(" ")[0] == name]
        assert at, f"{name} is not listed:\n{out}"
        assert "no docstring available" not in lines[at[0] + 1], out
