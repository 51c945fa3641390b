"""README.md's Python, run by .ci/run in a fresh virtual environment where the README's
install line put the tabuladb wheel beside azure-data-tables."""

# snippet: fake
from azure.data.tables import TableServiceClient


def test_an_order_is_stored(tabula_connection_string):
    # tabula_connection_string: a fresh, empty account of its own on one shared tabula serve
    with TableServiceClient.from_connection_string(tabula_connection_string) as svc:
        orders = svc.create_table("Orders")
        orders.create_entity({"PartitionKey": "p1", "RowKey": "1", "Total": 42})
        assert orders.get_entity("p1", "1")["Total"] == 42
# end snippet


def test_first_use(tabula_connection_string, monkeypatch):
    monkeypatch.setenv("TABLES_CONNECTION_STRING", tabula_connection_string)
    # snippet: first-use
    import os
    from azure.data.tables import TableServiceClient

    # What tabula serve printed; on port 10002, "UseDevelopmentStorage=true" does too.
    svc = TableServiceClient.from_connection_string(os.environ["TABLES_CONNECTION_STRING"])
    svc.create_table("Orders")
    # end snippet
    assert [t.name for t in svc.list_tables()] == ["Orders"]
