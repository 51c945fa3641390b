"""Tabula, a fake of Azure Table storage, for Python tests.

The wheel carries the ``tabula`` binary of its platform. ``fake()`` gives a test a fresh,
isolated fake (a new account on a server the process shares, through Tabula's account API,
or a server of its own where that API is missing); ``start()`` starts ``tabula serve``. With
pytest, the plugin in this package gives the fixtures ``tabula`` (a fresh fake per test,
as a ``Fake``), ``tabula_connection_string`` (its connection string) and the session-scoped
``tabula_server`` behind them. Standard library only.
"""

import atexit
import base64
import json
import os
import queue
import re
import secrets
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

__all__ = ["binary_path", "start", "fake", "Server", "Fake", "NoAccountAPI"]

BANNER_TIMEOUT = 30  # seconds

_CONNECTION_STRING = re.compile(r"DefaultEndpointsProtocol=\S+")


def binary_path():
    """The tabula binary: $TABULA_BINARY, else the one this wheel carries."""
    if os.environ.get("TABULA_BINARY"):
        return os.environ["TABULA_BINARY"]
    exe = "tabula.exe" if sys.platform == "win32" else "tabula"
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", exe)
    if not os.path.exists(path):
        raise RuntimeError(f"tabuladb: no {path}: this wheel carries no binary for this platform (set TABULA_BINARY)")
    return path


def _field(connection_string, key):
    for part in connection_string.split(";"):
        k, sep, v = part.partition("=")
        if sep and k == key:
            return v
    return None


class NoAccountAPI(Exception):
    """The server has no account API (POST /_tabula/api/accounts)."""


class Fake:
    """A fresh, isolated fake: connection_string, account_name, account_key; stop() drops it."""

    def __init__(self, connection_string, account_name, account_key, stop):
        self.connection_string = connection_string
        self.account_name = account_name
        self.account_key = account_key
        self._stop = stop

    def stop(self):
        self._stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class Server:
    """A running ``tabula serve``: endpoint (http://127.0.0.1:PORT, no account),
    connection_string (of its own account), admin_key; create_account() and stop()."""

    def __init__(self, proc, connection_string, admin_key):
        self.process = proc
        self.connection_string = connection_string
        self.account_name = _field(connection_string, "AccountName")
        self.account_key = _field(connection_string, "AccountKey")
        table_endpoint = _field(connection_string, "TableEndpoint").rstrip("/")
        suffix = "/" + self.account_name
        self.endpoint = table_endpoint[: -len(suffix)] if table_endpoint.endswith(suffix) else table_endpoint
        self.admin_key = admin_key

    def _request(self, method, path, body=None):
        auth = base64.b64encode(f"_tabula:{self.admin_key}".encode()).decode()
        req = urllib.request.Request(self.endpoint + path, method=method, data=body,
                                     headers={"Authorization": "Basic " + auth, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def create_account(self, name=None):
        """A fresh, empty, isolated account on this server, as a Fake whose stop() drops it
        and all its data. Raises NoAccountAPI on a server without the account API."""
        status, body = self._request("POST", "/_tabula/api/accounts", json.dumps({"name": name} if name else {}).encode())
        # A server without the API answers 404 or 405, or 401 to a credential it does not
        # know (it ignored TABULA_ADMIN_KEY).
        if status in (401, 403, 404, 405):
            raise NoAccountAPI(f"POST /_tabula/api/accounts: {status} {body.decode(errors='replace').strip()}")
        if status != 201:
            raise RuntimeError(f"creating an account: {status} {body!r}")
        a = json.loads(body)

        def drop():
            status, body = self._request("DELETE", "/_tabula/api/accounts/" + urllib.request.quote(a["name"], safe=""))
            if status not in (204, 404):
                raise RuntimeError(f"deleting account {a['name']}: {status} {body!r}")

        return Fake(a["connectionString"], a["name"], a["key"], drop)

    def stop(self):
        """Stops the server (SIGTERM, then a kill after 10 s) and waits for it."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout:
            self.process.stdout.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def start(args=(), binary=None, admin_key=None):
    """Starts ``tabula serve --in-memory`` on a free port of 127.0.0.1 (no request log),
    with args after those flags, and returns the Server once it serves."""
    admin_key = admin_key or secrets.token_urlsafe(24)
    env = dict(os.environ, TABULA_ADMIN_KEY=admin_key)  # a server without the API ignores it
    proc = subprocess.Popen([binary or binary_path(), "serve", "--in-memory", "--addr", "127.0.0.1:0", "--silent", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, text=True)
    lines = queue.Queue()

    def pump():
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    seen, conn = "", None
    deadline = time.monotonic() + BANNER_TIMEOUT
    while True:
        try:
            line = lines.get(timeout=max(deadline - time.monotonic(), 0.01))
        except queue.Empty:
            proc.kill()
            raise RuntimeError(f"tabula printed no connection string within {BANNER_TIMEOUT}s: {seen!r}")
        if line is None:
            raise RuntimeError(f"tabula exited with {proc.wait()} before serving: {seen!r}")
        seen += line
        m = _CONNECTION_STRING.search(line)
        if m and conn is None:
            conn = m.group(0)
        if conn and line.startswith("Console"):  # the banner's last line
            return Server(proc, conn, admin_key)


_shared = None
_no_account_api = False
_lock = threading.Lock()


def shared_server():
    """The server this process shares among its fakes, started on first use and stopped
    when the process exits."""
    global _shared
    with _lock:
        if _shared is None or _shared.process.poll() is not None:
            _shared = start()
            atexit.register(_shared.stop)
        return _shared


def fake():
    """A fresh, isolated fake for one test (use it with ``with``, or call stop()): a new
    account on the shared server, or a server of its own where the account API is missing."""
    global _no_account_api
    if not _no_account_api:
        srv = shared_server()
        try:
            return srv.create_account()
        except NoAccountAPI:
            _no_account_api = True
    own = start()
    return Fake(own.connection_string, own.account_name, own.account_key, own.stop)
