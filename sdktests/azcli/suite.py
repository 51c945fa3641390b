"""The az CLI suite: builds tabula, starts `tabula serve` on a free port, and drives it with the
Azure CLI's table commands (Debian bookworm's azure-cli 2.45.0), as a user would from a
shell: tables (create, exists, list with paging, delete), entities (typed insert, show,
query with a filter, a projection and paging, merge, replace, delete, ETags), stored access
policies and a table SAS under one, and the table service's CORS rules, logging and metrics.

Every call runs `az ... --output json --debug`: stdout is the JSON az prints, and the debug
log on stderr names each HTTP request az made with the status the server answered, and the
service's error code, so that a test can tell what the server did from what az made of it.

Run with Debian's interpreter (az is itself a Debian Python program):
`/usr/bin/python3 sdktests/azcli/suite.py` (see .ci/run). Standard library only.

az is slow to start (about 1.5 s a call), so the tests make few calls; the suite prints how
many and how long they took.
"""

import base64
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.dont_write_bytecode = True  # no __pycache__ left in the repository
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import tabulaserve  # noqa: E402  (sdktests/python: builds and starts `tabula serve`)

DEV_NAME = "devstoreaccount1"
DEV_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
# The table-level tests list every table of their account, so they have one of their own.
LIST_NAME = "azlist"
LIST_KEY = base64.b64encode(b"the az suite's listing key, 32 b").decode()
AZ_TIMEOUT = 120  # seconds for one az call

_server = {}
_stats = {"calls": 0, "seconds": 0.0}

# A request line in az's --debug log (urllib3's), and the service's error code in it.
_REQUEST = re.compile(r'"(GET|PUT|POST|PATCH|MERGE|DELETE|HEAD|OPTIONS) (\S+) HTTP/1\.1" (\d{3})')
_CODE = re.compile(r'"odata\.error":\{"code":"(\w+)"|ErrorCode:(\w+)|<Code>(\w+)</Code>')


def setUpModule():
    server = tabulaserve.start([(DEV_NAME, DEV_KEY), (LIST_NAME, LIST_KEY)], prefix="tabula-az-")
    _server["server"] = server
    config = tempfile.mkdtemp(prefix="tabula-az-config-")
    unittest.addModuleCleanup(shutil.rmtree, config, ignore_errors=True)
    # A hermetic az: a throwaway configuration directory, no telemetry, no survey prompt, none
    # of the caller's AZURE_* settings (AZURE_STORAGE_CONNECTION_STRING and the like would
    # change what a command addresses), and no way out of the machine: plain HTTP to
    # 127.0.0.1 goes direct, anything else (az's version and connectivity checks) to a proxy
    # that refuses at once.
    env = {k: v for k, v in os.environ.items()
           if not k.upper().startswith("AZURE_") and k.lower() not in ("http_proxy", "https_proxy", "no_proxy", "all_proxy")}
    env.update({
        "AZURE_CONFIG_DIR": config,
        "AZURE_CORE_COLLECT_TELEMETRY": "false",
        "AZURE_CORE_SURVEY_MESSAGE": "false",
        "AZURE_CORE_NO_COLOR": "true",
        "HTTP_PROXY": "http://127.0.0.1:1",
        "HTTPS_PROXY": "http://127.0.0.1:1",
        "NO_PROXY": "127.0.0.1,localhost",
    })
    _server["env"] = env
    unittest.addModuleCleanup(
        lambda: print(f"\naz: {_stats['calls']} calls in {_stats['seconds']:.1f} s", file=sys.stderr))


def connection_string(account=DEV_NAME):
    return _server["server"].connection_strings[account]


def table_endpoint(account=DEV_NAME):
    return f"{_server['server'].endpoint}/{account}/"


class Call:
    """One az run: rc, out (the parsed JSON, None when az printed nothing), err (stderr),
    requests ((method, path, status) for each HTTP request az made) and codes (the service
    error codes in the log)."""

    def __init__(self, args, proc):
        self.args = args
        self.rc = proc.returncode
        self.err = proc.stderr
        self.out = json.loads(proc.stdout) if proc.stdout.strip() else None
        self.requests = [(m, p, int(s)) for m, p, s in _REQUEST.findall(proc.stderr)]
        self.codes = [next(g for g in groups if g) for groups in _CODE.findall(proc.stderr)]

    def writes(self):
        return [r for r in self.requests if r[0] != "GET"]

    def describe(self):
        errors = [line for line in self.err.splitlines() if line.startswith("ERROR")]
        return f"az {' '.join(self.args)}: rc {self.rc}, requests {self.requests}, codes {self.codes}, {errors[-3:]}"


def az(*args, account=DEV_NAME, sas=None):
    """Runs az with args and the account's connection string, or with sas, the account's name
    and its table endpoint."""
    if sas is None:
        auth = ["--connection-string", connection_string(account)]
    else:
        auth = ["--sas-token", sas, "--account-name", account, "--table-endpoint", table_endpoint(account)]
    full = ["az", *args, *auth, "--output", "json", "--debug"]
    start = time.monotonic()
    proc = subprocess.run(full, env=_server["env"], capture_output=True, text=True, timeout=AZ_TIMEOUT)
    _stats["calls"] += 1
    _stats["seconds"] += time.monotonic() - start
    return Call(list(args), proc)


def entity_args(**props):
    """The key=value words of az's --entity for props; a (value, type) pair adds the
    Name@odata.type=type word that types the value."""
    words = []
    for name, value in props.items():
        if isinstance(value, tuple):
            value, edm = value
            words.append(f"{name}@odata.type={edm}")
        words.append(f"{name}={value}")
    return ["--entity", *words]


class Case(unittest.TestCase):
    def ok(self, call, method=None, status=None):
        """Asserts the call succeeded (and, given method and status, that its last request
        with that method got that status) and returns its JSON."""
        self.assertEqual(call.rc, 0, call.describe())
        if method is not None:
            self.assertEqual(self.last(call, method)[2], status, call.describe())
        return call.out

    def refused(self, call, method, status, code):
        """Asserts the call failed because its last request with method got status and the
        service's error code code."""
        self.assertNotEqual(call.rc, 0, call.describe())
        self.assertEqual(self.last(call, method)[2], status, call.describe())
        self.assertIn(code, call.codes, call.describe())

    def says(self, call, *texts):
        """Asserts that the error az reports (from its first ERROR line on, less the debug log)
        holds each of texts."""
        lines = call.err.splitlines()
        first = next((i for i, line in enumerate(lines) if line.startswith("ERROR:")), len(lines))
        errors = "\n".join(line for line in lines[first:] if not line.startswith(("DEBUG", "INFO")))
        for text in texts:
            self.assertIn(text, errors, call.describe())

    def last(self, call, method):
        made = [r for r in call.requests if r[0] == method]
        self.assertTrue(made, f"no {method} request: {call.describe()}")
        return made[-1]


class TestTables(Case):
    def test_create_exists_list_delete(self):
        names = ["AzAlpha", "AzBeta", "AzGamma"]
        for name in names:
            self.assertEqual(self.ok(az("storage", "table", "create", "--name", name, account=LIST_NAME), "POST", 201),
                             {"created": True})

        # az's create is create-if-not-exists: on an existing table it still reports
        # created, though the server answered 409, which az (the SDK's
        # create_table_if_not_exists) swallowed without logging the body.
        again = az("storage", "table", "create", "--name", "AzAlpha", account=LIST_NAME)
        self.assertEqual(self.ok(again, "POST", 409), {"created": True})
        # With --fail-on-exist, az reports the server's refusal and its code. Table names are
        # case-insensitive ("Understanding the Table service data model"): AZALPHA is AzAlpha.
        refused = az("storage", "table", "create", "--name", "AZALPHA", "--fail-on-exist", account=LIST_NAME)
        self.refused(refused, "POST", 409, "TableAlreadyExists")
        self.says(refused, "The table specified already exists.", "ErrorCode:TableAlreadyExists")

        self.assertEqual(self.ok(az("storage", "table", "exists", "--name", "AzBeta", account=LIST_NAME)), {"exists": True})
        self.assertEqual(self.ok(az("storage", "table", "exists", "--name", "AzDelta", account=LIST_NAME)), {"exists": False})

        # Two a page: the first page and NextTableName as az's marker, then the rest from it.
        first = self.ok(az("storage", "table", "list", "--num-results", "2", "--show-next-marker", account=LIST_NAME),
                        "GET", 200)
        self.assertEqual(first[:2], [{"name": "AzAlpha"}, {"name": "AzBeta"}], "tables in name order")
        marker = first[2]["nextMarker"]
        self.assertTrue(marker, f"a continuation marker after the first page: {first}")
        rest = self.ok(az("storage", "table", "list", "--num-results", "2", "--marker", marker, "--show-next-marker",
                          account=LIST_NAME))
        self.assertEqual(rest, [{"name": "AzGamma"}, {"nextMarker": None}], "the second page, and no marker after it")

        deleted = az("storage", "table", "delete", "--name", "AzBeta", account=LIST_NAME)
        self.assertEqual(self.ok(deleted, "DELETE", 204), {"deleted": True})
        self.assertEqual(self.ok(az("storage", "table", "list", account=LIST_NAME)),
                         [{"name": "AzAlpha"}, {"name": "AzGamma"}], "the deleted table is still listed, or AZALPHA made")


# The entity every type test writes: az's --entity words (values az would otherwise cast to
# int, float or leave as text), and the service's EDM types named with @odata.type.
TYPED = {
    "PartitionKey": "types",
    "RowKey": "all",
    "Count": ("5", "Edm.Int64"),
    "Big": ("9007199254740993", "Edm.Int64"),  # 2**53 + 1: exact only as an Int64
    "Small": ("12", "Edm.Int32"),
    "Plain": "7",  # az casts an untyped number to an int: an Int32
    "Ratio": "2.5",  # ... or a float: a Double
    "Thousand": "1e3",  # ... any float Python reads
    "NotANumber": "NaN",  # ... NaN and the infinities too
    "Infinite": "Infinity",
    "NegInfinite": "-Infinity",
    "Max": ("9223372036854775807", "Edm.Int64"),
    "Whole": ("3", "Edm.Double"),
    "Flag": ("true", "Edm.Boolean"),
    "When": ("2021-07-13T01:02:03.4501234Z", "Edm.DateTime"),
    "Id": ("c9da6455-213d-42c9-9a79-3e9149a57833", "Edm.Guid"),
    "Digits": ("42", "Edm.String"),
    "Name": "Ann",
    # az hands the text to the SDK, which sends its UTF-8 bytes as the binary value.
    "Bin": ("AAH+/w==", "Edm.Binary"),
}


class TestEntities(Case):
    TABLE = "AzEntities"

    @classmethod
    def setUpClass(cls):
        call = az("storage", "table", "create", "--name", cls.TABLE)
        if call.rc != 0:
            raise RuntimeError(call.describe())

    def entity(self, *args, **kwargs):
        return az("storage", "entity", *args, "--table-name", self.TABLE, **kwargs)

    def test_typed_values_round_trip(self):
        # az inserts with a read (GET, 404 when absent) then an upsert (merge, PATCH).
        inserted = self.ok(self.entity("insert", *entity_args(**TYPED)), "PATCH", 204)
        self.assertTrue(inserted["etag"].startswith('W/"datetime'), inserted)

        e = self.ok(self.entity("show", "--partition-key", "types", "--row-key", "all"), "GET", 200)
        self.assertEqual(e["etag"], inserted["etag"], "the read ETag is the written one")
        self.assertEqual(e["Count"], {"edm_type": "Edm.Int64", "value": 5}, "an Int64 reads back as one")
        self.assertEqual(e["Big"], {"edm_type": "Edm.Int64", "value": 2 ** 53 + 1})
        for name, want in [("Small", 12), ("Plain", 7)]:
            self.assertEqual(e[name], want)
            self.assertIs(type(e[name]), int, f"{name} is an Int32")
        self.assertEqual(e["Max"], {"edm_type": "Edm.Int64", "value": 2 ** 63 - 1})
        for name, want in [("Ratio", 2.5), ("Whole", 3.0), ("Thousand", 1000.0),
                           ("Infinite", math.inf), ("NegInfinite", -math.inf)]:
            self.assertEqual(e[name], want)
            self.assertIs(type(e[name]), float, f"{name} is a Double, printed with its point")
        self.assertTrue(math.isnan(e["NotANumber"]), f"NaN reads back as {e['NotANumber']!r}")
        self.assertIs(e["Flag"], True)
        # az prints a DateTime to the microsecond (Python's datetime); the tick is checked by
        # the filter below.
        self.assertEqual(e["When"], "2021-07-13T01:02:03.450123+00:00")
        self.assertEqual(e["Id"], "c9da6455-213d-42c9-9a79-3e9149a57833")
        self.assertEqual(e["Digits"], "42")
        self.assertEqual(e["Name"], "Ann")
        self.assertEqual(base64.b64decode(e["Bin"]), b"AAH+/w==")
        self.assertEqual(set(e) - {"Timestamp", "etag"}, set(TYPED), "no property lost or added")

        # What az prints cannot tell a Guid from a string, nor shows the seventh digit of a
        # DateTime: a filter that compares each property with a literal of its type (and
        # only of its type) matches only if the server stored every type and value exactly.
        typed = ("Count eq 5L and Big eq 9007199254740993L and Max eq 9223372036854775807L and Small eq 12"
                 " and Plain eq 7 and Ratio eq 2.5 and Whole eq 3.0 and Thousand eq 1000.0 and Flag eq true and When eq datetime'2021-07-13T01:02:03.4501234Z'"
                 " and Id eq guid'c9da6455-213d-42c9-9a79-3e9149a57833' and Digits eq '42'"
                 f" and Bin eq X'{b'AAH+/w=='.hex()}'")
        got = self.ok(self.entity("query", "--filter", typed, "--select", "Count", "Name", "Missing"), "GET", 200)
        self.assertEqual(len(got["items"]), 1, f"the typed filter matched {got}")
        item = got["items"][0]
        self.assertEqual(item["Count"], {"edm_type": "Edm.Int64", "value": 5})
        self.assertEqual(item["Name"], "Ann")
        self.assertNotIn("RowKey", item, "--select returns only the properties it names")
        self.assertNotIn("Digits", item)
        # A selected property the entity lacks comes back as null, as the service answers it.
        self.assertIn("Missing", item)
        self.assertIsNone(item["Missing"])
        self.assertEqual(got["nextMarker"], {}, "one page, no marker")

        # A DateTime before 1601 is out of the service's range: the write is refused.
        self.refused(self.entity("insert", *entity_args(PartitionKey="types", RowKey="old",
                                                        When=("1600-12-31T00:00:00Z", "Edm.DateTime"))),
                     "PATCH", 400, "OutOfRangeInput")

        # A literal of another type matches nothing (the types are the stored ones), and the
        # refused entity is not there.
        other = ("Digits eq 42 or Id eq 'c9da6455-213d-42c9-9a79-3e9149a57833'"
                 " or When eq '2021-07-13T01:02:03.4501234Z' or Flag eq 'true' or RowKey eq 'old'")
        self.assertEqual(self.ok(self.entity("query", "--filter", other))["items"], [])

    def test_paging_with_a_marker(self):
        for i in range(3):
            self.ok(self.entity("insert", *entity_args(PartitionKey="page", RowKey=f"r{i}", N=str(i + 1))))
        first = self.ok(self.entity("query", "--filter", "PartitionKey eq 'page'", "--num-results", "2",
                                    "--select", "RowKey", "N"))
        self.assertEqual([(x["RowKey"], x["N"]) for x in first["items"]], [("r0", 1), ("r1", 2)])
        marker = first["nextMarker"]
        self.assertEqual(sorted(marker), ["nextpartitionkey", "nextrowkey"], f"az's marker: {first}")
        rest = self.ok(self.entity("query", "--filter", "PartitionKey eq 'page'", "--num-results", "2",
                                   "--select", "RowKey", "N", "--marker",
                                   f"nextpartitionkey={marker['nextpartitionkey']}", f"nextrowkey={marker['nextrowkey']}"))
        self.assertEqual([(x["RowKey"], x["N"]) for x in rest["items"]], [("r2", 3)], "the page after the marker")
        self.assertEqual(rest["nextMarker"], {}, "no marker after the last page")

    def test_updates_and_etags(self):
        key = ["--partition-key", "e", "--row-key", "r"]
        created = self.ok(self.entity("insert", *entity_args(PartitionKey="e", RowKey="r", Name="Ann", Age="42")))
        etag0 = created["etag"]

        # az refuses to insert over an entity itself: it reads the entity and writes nothing.
        again = self.entity("insert", *entity_args(PartitionKey="e", RowKey="r", Name="Bob"))
        self.assertNotEqual(again.rc, 0, again.describe())
        self.says(again, "The specified entity already exists.")
        self.assertEqual(again.writes(), [], "a refused insert sent a write")

        merged = self.ok(self.entity("merge", *entity_args(PartitionKey="e", RowKey="r", Age="43"), "--if-match", etag0),
                         "PATCH", 204)
        etag1 = merged["etag"]
        self.assertNotEqual(etag1, etag0, "an update changes the ETag")

        # etag0 is stale now: a replace and a delete conditioned on it are refused.
        self.refused(self.entity("replace", *entity_args(PartitionKey="e", RowKey="r", Only="x"), "--if-match", etag0),
                     "PUT", 412, "UpdateConditionNotSatisfied")
        self.refused(self.entity("delete", *key, "--if-match", etag0), "DELETE", 412, "UpdateConditionNotSatisfied")
        e = self.ok(self.entity("show", *key))
        self.assertEqual((e["Name"], e["Age"], e["etag"]), ("Ann", 43, etag1),
                         "merge kept the other properties; the refused calls changed nothing")
        self.assertNotIn("Only", e)

        replaced = self.ok(self.entity("replace", *entity_args(PartitionKey="e", RowKey="r", Only="x"), "--if-match", etag1),
                           "PUT", 204)
        e = self.ok(self.entity("show", *key))
        self.assertEqual(set(e) - {"Timestamp", "etag"}, {"PartitionKey", "RowKey", "Only"},
                         "replace drops the properties it does not name")
        self.assertEqual(e["etag"], replaced["etag"])

        self.assertEqual(self.ok(self.entity("delete", *key, "--if-match", replaced["etag"]), "DELETE", 204),
                         {"deleted": None})
        self.refused(self.entity("show", *key), "GET", 404, "ResourceNotFound")


class TestPoliciesAndSas(Case):
    TABLE = "AzShared"

    def test_policy_and_sas(self):
        self.ok(az("storage", "table", "create", "--name", self.TABLE))
        self.ok(az("storage", "entity", "insert", "--table-name", self.TABLE, *entity_args(PartitionKey="p", RowKey="r")))

        policy = ["storage", "table", "policy"]
        on = ["--table-name", self.TABLE]
        self.ok(az(*policy, "create", *on, "--name", "readers", "--permissions", "r",
                   "--start", "2020-01-01T00:00:00Z", "--expiry", "2099-01-01T00:00:00Z"), "PUT", 204)
        self.ok(az(*policy, "create", *on, "--name", "writers", "--permissions", "raud",
                   "--expiry", "2099-01-01T00:00:00Z"), "PUT", 204)
        listed = self.ok(az(*policy, "list", *on), "GET", 200)
        self.assertEqual(listed, {
            "readers": {"start": "2020-01-01T00:00:00+00:00", "expiry": "2099-01-01T00:00:00+00:00", "permission": "r"},
            "writers": {"start": None, "expiry": "2099-01-01T00:00:00+00:00", "permission": "raud"},
        })
        self.assertEqual(self.ok(az(*policy, "show", *on, "--name", "readers")), listed["readers"])

        sas = self.ok(az("storage", "table", "generate-sas", "--name", self.TABLE, "--policy-name", "readers"))
        self.assertIn("si=readers", sas)

        # The SAS reads but does not write: the insert's write is refused, and a query
        # through the same SAS still finds the one entity.
        entity = ["storage", "entity"]
        self.refused(az(*entity, "insert", *on, *entity_args(PartitionKey="p", RowKey="x"), sas=sas),
                     "PATCH", 403, "AuthorizationPermissionMismatch")
        got = self.ok(az(*entity, "query", *on, sas=sas), "GET", 200)
        self.assertEqual([(x["PartitionKey"], x["RowKey"]) for x in got["items"]], [("p", "r")],
                         "the refused insert wrote")

        # The stored policy governs the signature at each request. az's insert is an upsert
        # (Insert Or Merge), which needs both add and update permission ("Add and Update
        # permissions are required for upsert operations", TableSasPermissions in the
        # azure-data-tables reference): with "ra" it is still refused, with "rau" it writes.
        self.ok(az(*policy, "update", *on, "--name", "readers", "--permissions", "ra"), "PUT", 204)
        self.refused(az(*entity, "insert", *on, *entity_args(PartitionKey="p", RowKey="x"), sas=sas),
                     "PATCH", 403, "AuthorizationPermissionMismatch")
        self.ok(az(*policy, "update", *on, "--name", "readers", "--permissions", "rau"), "PUT", 204)
        self.ok(az(*entity, "insert", *on, *entity_args(PartitionKey="p", RowKey="y"), sas=sas), "PATCH", 204)

        # Deleting the policy ends its signatures.
        self.ok(az(*policy, "delete", *on, "--name", "readers"), "PUT", 204)
        self.assertEqual(sorted(self.ok(az(*policy, "list", *on))), ["writers"])
        self.refused(az(*entity, "query", *on, sas=sas), "GET", 403, "AuthenticationFailed")
        got = self.ok(az(*entity, "query", *on))
        self.assertEqual([(x["PartitionKey"], x["RowKey"]) for x in got["items"]], [("p", "r"), ("p", "y")],
                         "what the signatures wrote")

        # An ad hoc signature limited to a key range (spk/srk/epk/erk) reads inside it only:
        # a point read outside is refused, a query returns only what lies within.
        ranged = self.ok(az("storage", "table", "generate-sas", "--name", self.TABLE, "--permissions", "r",
                            "--expiry", "2099-01-01T00:00Z", "--start-pk", "p", "--start-rk", "a",
                            "--end-pk", "p", "--end-rk", "s"))
        self.assertIn("spk=p", ranged)
        self.refused(az(*entity, "show", *on, "--partition-key", "p", "--row-key", "y", sas=ranged),
                     "GET", 403, "AuthorizationFailure")
        got = self.ok(az(*entity, "query", *on, sas=ranged), "GET", 200)
        self.assertEqual([x["RowKey"] for x in got["items"]], ["r"], "a query through a key-range SAS")


class TestServiceProperties(Case):
    def test_cors_logging_metrics(self):
        self.assertEqual(self.ok(az("storage", "cors", "list", "--services", "t")), [], "no CORS rules at first")
        self.ok(az("storage", "cors", "add", "--services", "t", "--methods", "GET", "PUT",
                   "--origins", "https://app.example", "https://other.example",
                   "--allowed-headers", "x-ms-*", "--exposed-headers", "x-ms-meta-*", "--max-age", "600"), "PUT", 202)
        self.ok(az("storage", "logging", "update", "--services", "t", "--log", "rw", "--retention", "3"), "PUT", 202)
        self.ok(az("storage", "metrics", "update", "--services", "t", "--api", "true", "--hour", "true",
                   "--minute", "false", "--retention", "7"), "PUT", 202)
        # The service keeps logs 365 days at most: a longer retention is refused whole.
        self.refused(az("storage", "logging", "update", "--services", "t", "--log", "rwd", "--retention", "366"),
                     "PUT", 400, "InvalidXmlDocument")

        self.assertEqual(self.ok(az("storage", "cors", "list", "--services", "t")), [{
            "Service": "table", "Rule": 1, "AllowedOrigins": "https://app.example, https://other.example",
            "AllowedMethods": "GET, PUT", "AllowedHeaders": "x-ms-*", "ExposedHeaders": "x-ms-meta-*",
            "MaxAgeInSeconds": 600,
        }])
        logging = self.ok(az("storage", "logging", "show", "--services", "t"))["table"]
        self.assertEqual((logging["read"], logging["write"], logging["delete"]), (True, True, False),
                         "the refused update changed the logging")
        self.assertEqual(logging["retentionPolicy"], {"enabled": True, "days": 3})
        metrics = self.ok(az("storage", "metrics", "show", "--services", "t"))["table"]
        self.assertEqual((metrics["hour"]["enabled"], metrics["hour"]["includeApis"]), (True, True))
        self.assertEqual(metrics["hour"]["retentionPolicy"], {"enabled": True, "days": 7})
        self.assertFalse(metrics["minute"]["enabled"])

        self.ok(az("storage", "cors", "clear", "--services", "t"), "PUT", 202)
        self.assertEqual(self.ok(az("storage", "cors", "list", "--services", "t")), [], "clear removes the rules")

    def test_stats(self):
        # az reaches the secondary from the connection string tabula serve prints as the Python
        # SDK does, with /devstoreaccount1-secondary/devstoreaccount1/ and a signature for the
        # primary URL.
        call = az("storage", "table", "stats")
        stats = self.ok(call, "GET", 200)
        self.assertEqual(stats["geoReplication"]["status"], "live", call.describe())
        self.assertTrue(stats["geoReplication"]["lastSyncTime"], call.describe())
        self.assertIn(("GET", f"/{DEV_NAME}-secondary/{DEV_NAME}/?restype=service&comp=stats", 200), call.requests)


if __name__ == "__main__":
    unittest.main(verbosity=2)
