"""The Python SDK suite: builds tabula, starts `tabula serve` on a free port with two accounts,
and drives it with the official azure-data-tables client (Debian's python3-azure, which
bundles azure-data-tables 12.4.2) through the common flows and the service calls: tables,
entities of every EDM type the SDK writes, ETags, parameterised queries and paging past
1,000, transactions as the Python SDK frames them, service properties and CORS rules,
stats on the secondary, stored access policies and SAS, and account isolation.

Run with Debian's interpreter, which sees the package: `/usr/bin/python3 sdktests/python/suite.py`
(see .ci/run). Standard library and the Debian package (with requests, azure-core's
transport, which it brings) only.
"""

import base64
import sys
import unittest
import uuid
from datetime import datetime, timedelta, timezone
from unittest import mock

import requests

from azure.core import MatchConditions
from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential
from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceNotFoundError
from azure.core.pipeline.transport import RequestsTransport
from azure.data.tables import (
    AccountSasPermissions,
    EdmType,
    EntityProperty,
    ResourceTypes,
    TableAccessPolicy,
    TableAnalyticsLogging,
    TableClient,
    TableCorsRule,
    TableMetrics,
    TableRetentionPolicy,
    TableSasPermissions,
    TableServiceClient,
    TableTransactionError,
    UpdateMode,
    generate_account_sas,
    generate_table_sas,
)
from azure.data.tables._table_batch import TableBatchOperations

sys.dont_write_bytecode = True  # no __pycache__ left in the repository
import tabulaserve  # noqa: E402  (next to this file: builds and starts `tabula serve`)

DEV_NAME = "devstoreaccount1"
DEV_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
OTHER_NAME = "pyother"
OTHER_KEY = base64.b64encode(b"the other account's key, 32 byte").decode()
_server = {}


def setUpModule():
    server = tabulaserve.start([(DEV_NAME, DEV_KEY), (OTHER_NAME, OTHER_KEY)], prefix="tabula-py-")
    _server["endpoint"] = server.endpoint
    _server["connection_strings"] = server.connection_strings
    # Every client shares one requests session (azure-core's transport), closed at the end,
    # so that no client leaves its connections open.
    _server["session"] = requests.Session()
    unittest.addModuleCleanup(_server["session"].close)


def endpoint():
    return _server["endpoint"]


def dev_cred():
    return AzureNamedKeyCredential(DEV_NAME, DEV_KEY)


def transport():
    return RequestsTransport(session=_server["session"], session_owner=False)


def service_client(url, credential, **kwargs):
    return TableServiceClient(url, credential=credential, transport=transport(), **kwargs)


def table_client(url, name, credential):
    return TableClient(url, name, credential=credential, transport=transport())


def service(account=DEV_NAME, key=DEV_KEY):
    return service_client(f"{endpoint()}/{account}", AzureNamedKeyCredential(account, key))


def table(name, account=DEV_NAME, key=DEV_KEY):
    return table_client(f"{endpoint()}/{account}", name, AzureNamedKeyCredential(account, key))


def sas_table(name, sas, account=DEV_NAME):
    return table_client(f"{endpoint()}/{account}", name, AzureSasCredential(sas))


def in_an_hour():
    return datetime.now(timezone.utc) + timedelta(hours=1)


class Case(unittest.TestCase):
    def assertFails(self, call, error_type, status, code):
        """Runs call and checks it raises error_type with the HTTP status and service error code."""
        with self.assertRaises(error_type, msg=f"expected {status} {code}") as ctx:
            call()
        err = ctx.exception
        self.assertEqual(err.status_code, status, f"status of {err.message}")
        # The service's code is in x-ms-error-code (a transaction's is in its failing part, which
        # the SDK decodes into error_code). Where the SDK sets error_code (a TableErrorCode for
        # the codes it knows, else the string), it must agree.
        if not isinstance(err, TableTransactionError):
            self.assertEqual(err.response.headers.get("x-ms-error-code"), code, f"x-ms-error-code of {err.message}")
        sdk_code = getattr(err, "error_code", None)
        if sdk_code is not None or isinstance(err, TableTransactionError):
            self.assertEqual(getattr(sdk_code, "value", sdk_code), code, f"error code of {err.message}")
        return err


class TestTables(Case):
    def test_create_list_query_delete(self):
        svc = service()
        for name in ["PtAlpha", "PtBeta", "PtGamma", "PtDelta"]:
            self.assertEqual(svc.create_table(name).table_name, name)
        # Unlike the JavaScript SDK's createTable, the Python SDK surfaces TableAlreadyExists.
        self.assertFails(lambda: svc.create_table("PtAlpha"), ResourceExistsError, 409, "TableAlreadyExists")
        self.assertIn("PtGamma", [t.name for t in svc.list_tables()], "list_tables misses a table")

        params = {"lo": "Pt", "hi": "Pu"}
        names = [t.name for t in svc.query_tables("TableName ge @lo and TableName lt @hi", parameters=params)]
        self.assertEqual(names, ["PtAlpha", "PtBeta", "PtDelta", "PtGamma"], "tables in name order")
        # Past a filter, page by page: three tables a page, so the pager follows NextTableName.
        pages = [[t.name for t in page] for page in
                 svc.query_tables("TableName ge @lo and TableName lt @hi", parameters=params, results_per_page=3).by_page()]
        self.assertEqual(pages, [["PtAlpha", "PtBeta", "PtDelta"], ["PtGamma"]], "pages of tables")

        svc.delete_table("PtBeta")
        names = [t.name for t in svc.query_tables("TableName ge @lo and TableName lt @hi", parameters=params)]
        self.assertEqual(names, ["PtAlpha", "PtDelta", "PtGamma"], "the deleted table is still listed")
        self.assertFails(lambda: table("PtBeta").get_entity("p", "r"), ResourceNotFoundError, 404, "TableNotFound")
        self.assertFails(lambda: table("PtBeta").create_entity({"PartitionKey": "p", "RowKey": "r"}),
                         ResourceNotFoundError, 404, "TableNotFound")


class TestEntities(Case):
    @classmethod
    def setUpClass(cls):
        cls.t = table("PyEntities")
        cls.t.create_table()

    def test_every_edm_type_round_trips(self):
        when = datetime(2021, 7, 13, 1, 2, 3, 450123, tzinfo=timezone.utc)
        guid = uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833")
        entity = {
            "PartitionKey": "types",
            "RowKey": "all",
            "text": "Ann \u00e9\u6f22 'quoted'",
            "int32": 42,
            "int32neg": -(2 ** 31),
            "int32typed": EntityProperty(7, EdmType.INT32),
            "int64": EntityProperty(2 ** 62 + 1, EdmType.INT64),
            "int64min": EntityProperty(-(2 ** 63), EdmType.INT64),
            "double": 3.25,
            "whole": 2.0,
            "nan": float("nan"),
            "inf": float("inf"),
            "yes": True,
            "no": False,
            "when": when,
            "guid": guid,
            "blob": b"\x00\x01\xfe\xff binary",
            "empty": "",
        }
        created = self.t.create_entity(entity)
        self.assertTrue(created.get("etag"), "create_entity returns the ETag")
        e = self.t.get_entity("types", "all")

        self.assertEqual(e["text"], entity["text"])
        self.assertIs(type(e["text"]), str)
        self.assertEqual((e["int32"], e["int32neg"], e["int32typed"]), (42, -(2 ** 31), 7))
        for name in ["int32", "int32neg", "int32typed"]:
            self.assertIs(type(e[name]), int, f"{name} reads back as an int")
        self.assertEqual(e["int64"], EntityProperty(2 ** 62 + 1, EdmType.INT64), "Int64 keeps its value and type")
        self.assertEqual(e["int64min"], EntityProperty(-(2 ** 63), EdmType.INT64))
        self.assertEqual(e["double"], 3.25)
        self.assertIs(type(e["double"]), float)
        self.assertEqual(e["whole"], 2.0)
        self.assertIs(type(e["whole"]), float, "a whole Double must not come back as an Int32")
        self.assertNotEqual(e["nan"], e["nan"], "NaN reads back as NaN")
        self.assertEqual(e["inf"], float("inf"))
        self.assertIs(e["yes"], True)
        self.assertIs(e["no"], False)
        self.assertEqual(e["when"], when, "DateTime keeps its microseconds and UTC")
        self.assertEqual(e["when"].tzinfo.utcoffset(None), timedelta(0))
        self.assertEqual(e["guid"], guid)
        self.assertIsInstance(e["guid"], uuid.UUID)
        self.assertEqual(e["blob"], entity["blob"])
        self.assertIs(type(e["blob"]), bytes)
        self.assertEqual(e["empty"], "")
        self.assertEqual(e.metadata["etag"], created["etag"], "the read ETag is the written one")
        self.assertIsInstance(e.metadata["timestamp"], datetime)
        self.assertLess(abs(e.metadata["timestamp"] - datetime.now(timezone.utc)), timedelta(minutes=5))
        self.assertEqual(set(e.keys()), set(entity.keys()), "no property lost or added")

    def test_datetime_keeps_its_ticks_through_read_modify_write(self):
        # The service keeps 7 fractional digits; the SDK reads 6 into the datetime and keeps
        # the service's text, which it writes back unchanged.
        t = self.t
        t.create_entity({"PartitionKey": "ticks", "RowKey": "r", "n": 1,
                         "d": EntityProperty("2021-07-13T01:02:03.4501234Z", EdmType.DATETIME)})
        e = t.get_entity("ticks", "r")
        self.assertEqual(e["d"].tables_service_value, "2021-07-13T01:02:03.4501234Z")
        e["n"] = 2
        t.update_entity(e, mode=UpdateMode.REPLACE)
        e = t.get_entity("ticks", "r")
        self.assertEqual((e["n"], e["d"].tables_service_value), (2, "2021-07-13T01:02:03.4501234Z"))
        got = list(t.query_entities("d eq datetime'2021-07-13T01:02:03.4501234Z'"))
        self.assertEqual([x["RowKey"] for x in got], ["r"], "a filter matches to the tick")
        self.assertEqual(list(t.query_entities("d eq datetime'2021-07-13T01:02:03.4501235Z'")), [])

    def test_crud_upserts_and_etags(self):
        t = self.t
        created = t.create_entity({"PartitionKey": "p", "RowKey": "r", "name": "Ann", "age": 42})
        self.assertFails(lambda: t.create_entity({"PartitionKey": "p", "RowKey": "r"}),
                         ResourceExistsError, 409, "EntityAlreadyExists")

        merged = t.update_entity({"PartitionKey": "p", "RowKey": "r", "age": 43}, mode=UpdateMode.MERGE,
                                 etag=created["etag"], match_condition=MatchConditions.IfNotModified)
        self.assertNotEqual(merged["etag"], created["etag"], "an update changes the ETag")
        e = t.get_entity("p", "r")
        self.assertEqual((e["name"], e["age"]), ("Ann", 43), "merge keeps the other properties")

        # The first ETag is stale now: updates and deletes conditioned on it fail.
        err = self.assertFails(
            lambda: t.update_entity({"PartitionKey": "p", "RowKey": "r", "age": 1}, mode=UpdateMode.REPLACE,
                                    etag=created["etag"], match_condition=MatchConditions.IfNotModified),
            HttpResponseError, 412, "UpdateConditionNotSatisfied")
        self.assertEqual(err.response.headers.get("x-ms-error-code"), "UpdateConditionNotSatisfied")
        self.assertFails(
            lambda: t.delete_entity("p", "r", etag=created["etag"], match_condition=MatchConditions.IfNotModified),
            HttpResponseError, 412, "UpdateConditionNotSatisfied")
        self.assertEqual(t.get_entity("p", "r")["age"], 43, "a failed conditional update changed the entity")

        replaced = t.update_entity({"PartitionKey": "p", "RowKey": "r", "only": True}, mode=UpdateMode.REPLACE,
                                   etag=merged["etag"], match_condition=MatchConditions.IfNotModified)
        e = t.get_entity("p", "r")
        self.assertNotIn("name", e, "replace drops the properties it does not name")
        self.assertIs(e["only"], True)
        self.assertEqual(e.metadata["etag"], replaced["etag"])

        t.upsert_entity({"PartitionKey": "p", "RowKey": "u", "n": 1, "s": "x"}, mode=UpdateMode.REPLACE)
        t.upsert_entity({"PartitionKey": "p", "RowKey": "u", "m": 2}, mode=UpdateMode.MERGE)
        e = t.get_entity("p", "u")
        self.assertEqual((e["n"], e["m"], e["s"]), (1, 2, "x"), "upsert merge keeps the other properties")
        t.upsert_entity({"PartitionKey": "p", "RowKey": "u", "k": 3}, mode=UpdateMode.REPLACE)
        e = t.get_entity("p", "u")
        self.assertEqual(dict(e), {"PartitionKey": "p", "RowKey": "u", "k": 3}, "upsert replace drops the rest")

        # Update (not upsert) of a missing entity fails rather than creating it.
        self.assertFails(lambda: t.update_entity({"PartitionKey": "p", "RowKey": "none", "a": 1}, mode=UpdateMode.MERGE),
                         ResourceNotFoundError, 404, "ResourceNotFound")
        t.delete_entity("p", "u")
        self.assertFails(lambda: t.get_entity("p", "u"), ResourceNotFoundError, 404, "ResourceNotFound")


class TestQueries(Case):
    @classmethod
    def setUpClass(cls):
        cls.t = table("PyPaging")
        cls.t.create_table()
        # 1,200 entities over two partitions, written partition "b" first and each partition's
        # batches in reverse, so that key order is the server's doing, not the insertion order.
        cls.expected = []
        for pk in ["a", "b"]:
            for n in range(600):
                cls.expected.append((pk, f"{n:05d}"))
        for pk in ["b", "a"]:
            for start in reversed(range(0, 600, 100)):
                ops = [("create", {"PartitionKey": pk, "RowKey": f"{n:05d}", "n": n, "even": n % 2 == 0, "pk": pk})
                       for n in range(start, start + 100)]
                cls.t.submit_transaction(ops)

    def test_paging_past_1000(self):
        keys = [(e["PartitionKey"], e["RowKey"]) for e in self.t.list_entities()]
        self.assertEqual(len(keys), 1200, "every entity, past the server's 1,000 a page")
        self.assertEqual(keys, self.expected, "once each, in PartitionKey/RowKey order")

        pages = list(self.t.list_entities(results_per_page=250).by_page())
        sizes = [len(list(p)) for p in pages]
        self.assertEqual(sizes, [250] * 4 + [200], "pages of results_per_page")

        paged = [(e["PartitionKey"], e["RowKey"]) for e in self.t.list_entities(results_per_page=1000)]
        self.assertEqual(paged, self.expected, "pages of 1,000 cross the partition boundary")
        # A page is at most 1,000 entities ($top; REST docs: "Query Entities").
        self.assertFails(lambda: list(self.t.list_entities(results_per_page=1001)), HttpResponseError, 400, "InvalidInput")

    def test_parameterised_filter_and_select(self):
        got = list(self.t.query_entities("pk eq @pk and n ge @lo and even eq @even",
                                         parameters={"pk": "b", "lo": 590, "even": True},
                                         select=["n", "RowKey"]))
        self.assertEqual([e["n"] for e in got], [590, 592, 594, 596, 598])
        for e in got:
            self.assertEqual(set(e.keys()), {"n", "RowKey"}, "select returns only the named properties")

        # A filter spanning both partitions, with paging, still comes back in key order.
        got = list(self.t.query_entities("n lt @n", parameters={"n": 300}, results_per_page=7, select="n"))
        self.assertEqual(len(got), 600)
        self.assertEqual([e["n"] for e in got], list(range(300)) * 2)

    def test_parameter_quoting(self):
        t = table("PyQuoting")
        t.create_table()
        when = datetime(2022, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
        guid = uuid.uuid4()
        t.create_entity({"PartitionKey": "it's", "RowKey": "1", "when": when, "guid": guid,
                         "big": EntityProperty(2 ** 40, EdmType.INT64), "blob": b"\x01\x02"})
        t.create_entity({"PartitionKey": "its", "RowKey": "2"})
        got = list(t.query_entities("PartitionKey eq @pk and when eq @when and guid eq @guid and big eq @big and blob eq @blob",
                                    parameters={"pk": "it's", "when": when, "guid": guid, "big": 2 ** 40, "blob": b"\x01\x02"}))
        self.assertEqual([e["RowKey"] for e in got], ["1"], "each parameter type matches its property")
        self.assertEqual(list(t.query_entities("PartitionKey eq @pk", parameters={"pk": "it"})), [])
        # A selected property that an entity lacks comes back as null (REST docs: "Query
        # Entities", $select).
        got = list(t.query_entities("RowKey eq @rk", parameters={"rk": "2"}, select=["big", "PartitionKey"]))
        self.assertEqual([dict(e) for e in got], [{"big": None, "PartitionKey": "its"}])


class TestTransactions(Case):
    @classmethod
    def setUpClass(cls):
        cls.t = table("PyBatches")
        cls.t.create_table()

    def keys(self):
        return [(e["PartitionKey"], e["RowKey"]) for e in self.t.list_entities()]

    def test_mixed_change_set(self):
        t = self.t
        t.create_entity({"PartitionKey": "ok", "RowKey": "exists", "n": 0, "keep": "yes"})
        t.create_entity({"PartitionKey": "ok", "RowKey": "merged", "n": 0, "keep": "yes"})
        t.create_entity({"PartitionKey": "ok", "RowKey": "gone"})
        result = t.submit_transaction([
            ("create", {"PartitionKey": "ok", "RowKey": "b", "n": 1, "blob": b"\x00\xff", "when": datetime(2020, 1, 1, tzinfo=timezone.utc)}),
            ("upsert", {"PartitionKey": "ok", "RowKey": "c", "n": 2}, {"mode": UpdateMode.MERGE}),
            ("update", {"PartitionKey": "ok", "RowKey": "exists", "n": 3}, {"mode": UpdateMode.REPLACE}),
            ("update", {"PartitionKey": "ok", "RowKey": "merged", "n": 4}, {"mode": UpdateMode.MERGE}),
            ("delete", {"PartitionKey": "ok", "RowKey": "gone"}),
            ("upsert", {"PartitionKey": "ok", "RowKey": "d", "s": "\u00e9"}, {"mode": UpdateMode.REPLACE}),
        ])
        self.assertEqual(len(result), 6, "one result per operation")
        for i, r in enumerate(result):
            if i != 4:
                self.assertTrue(r.get("etag"), f"operation {i} returns an ETag: {r}")
        self.assertEqual(t.get_entity("ok", "b")["blob"], b"\x00\xff")
        self.assertEqual(t.get_entity("ok", "b")["when"], datetime(2020, 1, 1, tzinfo=timezone.utc))
        self.assertEqual(t.get_entity("ok", "b").metadata["etag"], result[0]["etag"])
        self.assertEqual(t.get_entity("ok", "c")["n"], 2)
        self.assertEqual(dict(t.get_entity("ok", "exists")), {"PartitionKey": "ok", "RowKey": "exists", "n": 3})
        self.assertEqual(t.get_entity("ok", "merged")["keep"], "yes")
        self.assertEqual(t.get_entity("ok", "merged")["n"], 4)
        self.assertEqual(t.get_entity("ok", "d")["s"], "\u00e9")
        self.assertFails(lambda: t.get_entity("ok", "gone"), ResourceNotFoundError, 404, "ResourceNotFound")

    def test_failing_insert_names_its_index(self):
        t = self.t
        t.create_entity({"PartitionKey": "fail", "RowKey": "exists", "n": 0})
        before = self.keys()
        err = self.assertFails(lambda: t.submit_transaction([
            ("create", {"PartitionKey": "fail", "RowKey": "a"}),
            ("upsert", {"PartitionKey": "fail", "RowKey": "b"}),
            ("create", {"PartitionKey": "fail", "RowKey": "exists"}),
            ("create", {"PartitionKey": "fail", "RowKey": "c"}),
        ]), TableTransactionError, 409, "EntityAlreadyExists")
        self.assertEqual(err.index, 2, f"the failing operation's index: {err.message}")
        self.assertEqual(self.keys(), before, "a failed transaction wrote nothing")
        self.assertEqual(t.get_entity("fail", "exists")["n"], 0)

    def test_failing_update_of_missing_entity(self):
        before = self.keys()
        err = self.assertFails(lambda: self.t.submit_transaction([
            ("upsert", {"PartitionKey": "miss", "RowKey": "a"}),
            ("update", {"PartitionKey": "miss", "RowKey": "none", "n": 1}),
        ]), TableTransactionError, 404, "ResourceNotFound")
        self.assertEqual(err.index, 1, f"the failing operation's index: {err.message}")
        self.assertEqual(self.keys(), before, "a failed transaction wrote nothing")

    def test_failing_stale_etag(self):
        t = self.t
        first = t.create_entity({"PartitionKey": "stale", "RowKey": "r", "n": 0})
        t.update_entity({"PartitionKey": "stale", "RowKey": "r", "n": 1})
        before = self.keys()
        err = self.assertFails(lambda: t.submit_transaction([
            ("create", {"PartitionKey": "stale", "RowKey": "new"}),
            ("update", {"PartitionKey": "stale", "RowKey": "r", "n": 2},
             {"mode": UpdateMode.REPLACE, "etag": first["etag"], "match_condition": MatchConditions.IfNotModified}),
        ]), TableTransactionError, 412, "UpdateConditionNotSatisfied")
        self.assertEqual(err.index, 1, f"the failing operation's index: {err.message}")
        self.assertEqual(self.keys(), before, "a failed transaction wrote nothing")
        self.assertEqual(t.get_entity("stale", "r")["n"], 1)

    def test_failing_over_100_operations(self):
        before = self.keys()
        err = self.assertFails(lambda: self.t.submit_transaction(
            [("upsert", {"PartitionKey": "many", "RowKey": f"{i:03d}"}) for i in range(101)]),
            TableTransactionError, 400, "InvalidInput")
        # The service names index 99 for the 101st operation (its message: "99:The batch
        # request operation exceeds the maximum 100 changes per change set.").
        self.assertEqual(err.index, 99, err.message)
        self.assertEqual(self.keys(), before, "a failed transaction wrote nothing")

    def test_missing_table(self):
        err = self.assertFails(lambda: table("PyNoSuchTable").submit_transaction(
            [("create", {"PartitionKey": "p", "RowKey": "r"})]), TableTransactionError, 404, "TableNotFound")
        self.assertEqual(err.index, 0, err.message)

    def test_keys_and_values_that_need_escaping(self):
        # Keys travel in each part's request line (quoted, doubled quotes, percent-encoded),
        # values in each part's body; neither may confuse the multipart reader.
        t = self.t
        keys = ["it's 100% \u00e9", "a b+c&d=e", "quote''two", "\u6f22\u5b57", "semi;colon,comma", "paren(1)", "star*$@~!"]
        tricky = "line1\r\n--batch_x\r\n--changeset_y--\r\n\r\nContent-Length: 0\r\nline2"
        for k in keys:
            t.create_entity({"PartitionKey": k, "RowKey": k, "n": 0})
            t.create_entity({"PartitionKey": k, "RowKey": k + "-gone"})
            t.submit_transaction([
                ("upsert", {"PartitionKey": k, "RowKey": k + "-new", "s": tricky}),
                ("update", {"PartitionKey": k, "RowKey": k, "n": 1}, {"mode": UpdateMode.MERGE}),
                ("delete", {"PartitionKey": k, "RowKey": k + "-gone"}),
            ])
            got = {e["RowKey"]: e for e in t.query_entities("PartitionKey eq @k", parameters={"k": k})}
            self.assertEqual(sorted(got), sorted([k, k + "-new"]), f"rows of partition {k!r}")
            self.assertEqual(got[k]["n"], 1, f"merge of {k!r}")
            self.assertEqual(got[k + "-new"]["s"], tricky, f"value written in the batch for {k!r}")
            self.assertEqual(t.get_entity(k, k)["n"], 1)

    def test_two_partitions(self):
        ops = [("create", {"PartitionKey": "one", "RowKey": "a"}), ("create", {"PartitionKey": "two", "RowKey": "b"})]
        before = self.keys()
        # The SDK refuses before sending anything...
        with self.assertRaises(ValueError):
            self.t.submit_transaction(ops)
        # ...so, to see what the server does with the same multipart body, the SDK's check is
        # switched off for this one call.
        with mock.patch.object(TableBatchOperations, "_verify_partition_key", lambda self, entity: None):
            err = self.assertFails(lambda: self.t.submit_transaction(ops), TableTransactionError, 400,
                                   "CommandsInBatchActOnDifferentPartitions")
        self.assertEqual(err.index, 1, f"the operation in the second partition: {err.message}")
        self.assertEqual(self.keys(), before, "a failed transaction wrote nothing")


class TestService(Case):
    def test_properties_and_cors(self):
        svc = service()
        self.assertEqual(svc.get_service_properties()["cors"], [], "no CORS rules at first")
        rule = TableCorsRule(["https://app.example", "https://other.example"], ["GET", "PUT", "POST"],
                             allowed_headers=["x-ms-*", "content-type"], exposed_headers=["x-ms-*"],
                             max_age_in_seconds=600)
        svc.set_service_properties(
            analytics_logging=TableAnalyticsLogging(read=True, write=True, delete=False,
                                                    retention_policy=TableRetentionPolicy(enabled=True, days=3)),
            hour_metrics=TableMetrics(enabled=True, include_apis=True,
                                      retention_policy=TableRetentionPolicy(enabled=True, days=7)),
            minute_metrics=TableMetrics(enabled=False),
            cors=[rule],
        )
        props = svc.get_service_properties()
        self.assertEqual(len(props["cors"]), 1)
        got = props["cors"][0]
        self.assertEqual(got.allowed_origins, ["https://app.example", "https://other.example"])
        self.assertEqual(got.allowed_methods, ["GET", "PUT", "POST"])
        # Exact names first, then prefixes, as the service keeps them (its recorded test_set_cors).
        self.assertEqual(got.allowed_headers, ["content-type", "x-ms-*"])
        self.assertEqual(got.exposed_headers, ["x-ms-*"])
        self.assertEqual(got.max_age_in_seconds, 600)
        logging = props["analytics_logging"]
        self.assertEqual((logging.read, logging.write, logging.delete), (True, True, False))
        self.assertEqual((logging.retention_policy.enabled, logging.retention_policy.days), (True, 3))
        hour = props["hour_metrics"]
        self.assertEqual((hour.enabled, hour.include_apis, hour.retention_policy.days), (True, True, 7))
        self.assertFalse(props["minute_metrics"].enabled)

        # The rules set through the SDK govern preflights.
        url = f"{endpoint()}/{DEV_NAME}/PyCors()"
        ok = _server["session"].options(url, headers={
            "Origin": "https://other.example", "Access-Control-Request-Method": "PUT",
            "Access-Control-Request-Headers": "x-ms-version,content-type"})
        self.assertEqual(ok.status_code, 200, ok.text)
        self.assertEqual(ok.headers.get("Access-Control-Allow-Origin"), "https://other.example")
        self.assertEqual(ok.headers.get("Access-Control-Max-Age"), "600")
        refused = _server["session"].options(url, headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "PUT"})
        self.assertEqual(refused.status_code, 403)
        self.assertEqual(refused.headers.get("x-ms-error-code"), "CorsPreflightFailure")

        # Retention is at most 365 days.
        self.assertFails(lambda: svc.set_service_properties(analytics_logging=TableAnalyticsLogging(
            read=True, retention_policy=TableRetentionPolicy(enabled=True, days=366))),
            HttpResponseError, 400, "InvalidXmlDocument")
        # The service allows five CORS rules at most.
        six = [TableCorsRule(["*"], ["GET"]) for _ in range(6)]
        self.assertFails(lambda: svc.set_service_properties(cors=six), HttpResponseError, 400, "InvalidXmlDocument")
        self.assertEqual(len(svc.get_service_properties()["cors"]), 1, "a refused update changed the properties")
        # Setting only the CORS rules leaves logging and metrics as they were.
        svc.set_service_properties(cors=[])
        props = svc.get_service_properties()
        self.assertEqual(props["cors"], [])
        self.assertTrue(props["hour_metrics"].enabled, "an omitted element must stay unchanged")

    def test_stats_on_the_secondary(self):
        # The SDK's own call, from the connection string tabula serve prints: it reaches the
        # secondary of a path-style endpoint by putting "127.0.0.1:port/devstoreaccount1-secondary"
        # in front of the primary URL it signed (azure-data-tables 12.4.2 _policies.StorageHosts),
        # so the request is /devstoreaccount1-secondary/devstoreaccount1/?restype=service&comp=stats
        # with a signature for the primary.
        svc = TableServiceClient.from_connection_string(_server["connection_strings"][DEV_NAME], transport=transport())
        stats = svc.get_service_stats()
        self.assertEqual(stats["geo_replication"]["status"], "live")
        self.assertIsInstance(stats["geo_replication"]["last_sync_time"], datetime)
        # A client made for the secondary URL itself signs that URL: served too.
        host = endpoint()[len("http://"):]
        secondary = service_client(f"{endpoint()}/{DEV_NAME}-secondary", dev_cred(), secondary_hostname=host)
        self.assertEqual(secondary.get_service_stats()["geo_replication"]["status"], "live")

        # On the primary, stats are refused.
        primary_only = service_client(f"{endpoint()}/{DEV_NAME}", dev_cred(), secondary_hostname=host)
        self.assertFails(primary_only.get_service_stats, HttpResponseError, 400, "InvalidQueryParameterValue")

        # The secondary reads but does not write.
        t = table("PyGeo")
        t.create_table()
        t.create_entity({"PartitionKey": "p", "RowKey": "r"})
        geo = table_client(f"{endpoint()}/{DEV_NAME}-secondary", "PyGeo", dev_cred())
        self.assertEqual(geo.get_entity("p", "r")["RowKey"], "r")
        self.assertFails(lambda: geo.create_entity({"PartitionKey": "p", "RowKey": "s"}),
                         HttpResponseError, 403, "AuthorizationFailure")

    # Get Table ACL lists an identifier stored without start, expiry or permission with no
    # AccessPolicy element, as the service does (the live recording in Azure/azure-sdk-for-js,
    # sdk/tables/data-tables/recordings/node/access_policy_operations/
    # recording_should_send_a_null_ap.js, answers <SignedIdentifier><Id>null</Id></SignedIdentifier>),
    # so this SDK reads None for it rather than a policy of Nones.
    def test_identifier_without_policy(self):
        t = table("PyNullPolicy")
        t.create_table()
        t.set_table_access_policy({
            "null": None,
            "empty": TableAccessPolicy(),
            "partial": TableAccessPolicy(permission="r"),
        })
        acl = t.get_table_access_policy()
        self.assertEqual(sorted(acl), ["empty", "null", "partial"])
        self.assertEqual(acl["partial"].permission, "r")
        self.assertIsNone(acl["partial"].start)
        self.assertIsNone(acl["null"], "an identifier set without a policy reads back without one")
        self.assertIsNone(acl["empty"], "an identifier set with an empty policy reads back without one")

    def test_access_policies_and_sas(self):
        t = table("PyShared")
        t.create_table()
        t.create_entity({"PartitionKey": "p", "RowKey": "r"})
        self.assertEqual(t.get_table_access_policy(), {}, "no stored policies at first")
        start = datetime(2020, 1, 1, tzinfo=timezone.utc)
        expiry = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(hours=1)
        t.set_table_access_policy({
            "readers": TableAccessPolicy(permission=TableSasPermissions(read=True), start=start, expiry=expiry),
            "writers": TableAccessPolicy(permission="raud", expiry=expiry),
        })
        acl = t.get_table_access_policy()
        self.assertEqual(sorted(acl), ["readers", "writers"])
        self.assertEqual(acl["readers"].permission, "r")
        self.assertEqual(acl["readers"].start, start)
        self.assertEqual(acl["readers"].expiry, expiry)
        self.assertEqual(acl["writers"].permission, "raud")

        # A SAS under the stored policy (si=readers) reads but cannot write.
        sas = generate_table_sas(dev_cred(), "PyShared", policy_id="readers")
        self.assertIn("si=readers", sas)
        reader = sas_table("PyShared", sas)
        self.assertEqual(reader.get_entity("p", "r")["RowKey"], "r")
        self.assertEqual(len(list(reader.list_entities())), 1)
        self.assertFails(lambda: reader.create_entity({"PartitionKey": "p", "RowKey": "x"}),
                         HttpResponseError, 403, "AuthorizationPermissionMismatch")
        self.assertFails(lambda: reader.delete_entity("p", "r"), HttpResponseError, 403, "AuthorizationPermissionMismatch")
        self.assertEqual([e["RowKey"] for e in t.list_entities()], ["r"], "the reader wrote")

        writer = sas_table("PyShared", generate_table_sas(dev_cred(), "PyShared", policy_id="writers"))
        writer.create_entity({"PartitionKey": "p", "RowKey": "w"})
        self.assertEqual(t.get_entity("p", "w")["RowKey"], "w")
        writer.submit_transaction([("upsert", {"PartitionKey": "p", "RowKey": "b1"}), ("create", {"PartitionKey": "p", "RowKey": "b2"})])
        # A signature that may not write cannot write through a transaction either.
        self.assertFails(lambda: reader.submit_transaction([("upsert", {"PartitionKey": "p", "RowKey": "b3"})]),
                         HttpResponseError, 403, "AuthorizationPermissionMismatch")
        self.assertEqual([e["RowKey"] for e in t.list_entities()], ["b1", "b2", "r", "w"])

        # Removing the policy ends its signatures.
        t.set_table_access_policy({"writers": acl["writers"]})
        acl = t.get_table_access_policy()
        self.assertEqual(sorted(acl), ["writers"])
        self.assertIsNone(acl["writers"].start, "a policy set without a start has none")
        self.assertFails(lambda: reader.get_entity("p", "r"), HttpResponseError, 403, "AuthenticationFailed")

        # Ad hoc table and account signatures.
        query_only = sas_table("PyShared", generate_table_sas(dev_cred(), "PyShared",
                                                              permission=TableSasPermissions(read=True), expiry=in_an_hour()))
        self.assertEqual(query_only.get_entity("p", "w")["RowKey"], "w")
        self.assertFails(lambda: query_only.upsert_entity({"PartitionKey": "p", "RowKey": "y"}),
                         HttpResponseError, 403, "AuthorizationPermissionMismatch")
        # Query Tables is a container-level operation for an account SAS (REST docs: "Create an
        # account SAS", Table service: Query Tables needs resource type Container and List).
        # This SDK's ResourceTypes has no container flag (its docstring files List Tables under
        # service), so "so" is refused and "sco" must come from ResourceTypes.from_string.
        perms = AccountSasPermissions(read=True, list=True)
        so = generate_account_sas(dev_cred(), ResourceTypes(service=True, object=True), perms, in_an_hour())
        self.assertIn("srt=so", so)
        acct = service_client(f"{endpoint()}/{DEV_NAME}", AzureSasCredential(so))
        self.assertFails(lambda: list(acct.list_tables()), HttpResponseError, 403, "AuthorizationResourceTypeMismatch")
        self.assertEqual(sas_table("PyShared", so).get_entity("p", "w")["RowKey"], "w", "srt=o reads entities")
        sco = generate_account_sas(dev_cred(), ResourceTypes.from_string("sco"), perms, in_an_hour())
        acct = service_client(f"{endpoint()}/{DEV_NAME}", AzureSasCredential(sco))
        self.assertIn("PyShared", [x.name for x in acct.list_tables()])
        self.assertFails(lambda: acct.create_table("PyBySas"), HttpResponseError, 403, "AuthorizationPermissionMismatch")
        self.assertNotIn("PyBySas", [x.name for x in service().list_tables()])


class TestAccounts(Case):
    def test_accounts_are_separate(self):
        mine = table("PyPrivate")
        mine.create_table()
        mine.create_entity({"PartitionKey": "p", "RowKey": "dev"})
        other = service(OTHER_NAME, OTHER_KEY)
        names = [x.name for x in other.list_tables()]
        self.assertNotIn("PyPrivate", names, f"the other account lists {names}")
        theirs = table("PyPrivate", OTHER_NAME, OTHER_KEY)
        self.assertFails(lambda: theirs.get_entity("p", "dev"), ResourceNotFoundError, 404, "TableNotFound")
        self.assertFails(lambda: list(theirs.list_entities()), ResourceNotFoundError, 404, "TableNotFound")
        self.assertFails(lambda: theirs.create_entity({"PartitionKey": "p", "RowKey": "x"}),
                         ResourceNotFoundError, 404, "TableNotFound")
        # The other account may create a table of the same name: its own.
        theirs.create_table()
        theirs.create_entity({"PartitionKey": "p", "RowKey": "other"})
        self.assertEqual([e["RowKey"] for e in mine.list_entities()], ["dev"])
        self.assertEqual([e["RowKey"] for e in theirs.list_entities()], ["other"])
        # A key of one account does not sign for the other, nor does its SAS.
        impostor = table("PyPrivate", OTHER_NAME, DEV_KEY)
        self.assertFails(lambda: impostor.get_entity("p", "other"), HttpResponseError, 403, "AuthenticationFailed")
        sas = generate_table_sas(dev_cred(), "PyPrivate", permission="r", expiry=in_an_hour())
        wrong = sas_table("PyPrivate", sas, account=OTHER_NAME)
        self.assertFails(lambda: wrong.get_entity("p", "other"), HttpResponseError, 403, "AuthenticationFailed")


if __name__ == "__main__":
    unittest.main(verbosity=2)
