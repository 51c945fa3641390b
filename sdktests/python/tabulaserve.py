"""Builds tabula and starts `tabula serve` for the suites that drive it from outside Go (the
Python SDK suite here, the az CLI suite in sdktests/azcli), and reads the connection strings
its banner prints. Standard library only.
"""

import os
import queue
import re
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

BANNER_TIMEOUT = 60  # seconds; a server that prints no connection string by then fails the suite

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

_CONNECTION_STRING = re.compile(r"DefaultEndpointsProtocol=\S+")


class Server:
    """A running `tabula serve`: endpoint is its base URL (http://127.0.0.1:port, no account)
    and connection_strings the banner's connection string for each account, by name."""

    def __init__(self, endpoint, connection_strings):
        self.endpoint = endpoint
        self.connection_strings = connection_strings


def start(accounts, prefix="tabula-"):
    """Builds tabula into a temporary directory and starts `tabula serve` in memory on a free
    port of 127.0.0.1 with accounts, a list of (name, base64 key) pairs. Call it from
    setUpModule: the server and the directory are stopped and removed by module cleanups,
    registered as they are made, so that a server that fails to start (or to print its
    banner) is stopped too."""
    workdir = tempfile.mkdtemp(prefix=prefix)
    unittest.addModuleCleanup(shutil.rmtree, workdir, ignore_errors=True)
    binary = os.path.join(workdir, "tabula")
    subprocess.run(["go", "build", "-o", binary, "./cmd/tabula"], cwd=REPO, check=True)
    proc = subprocess.Popen(
        [binary, "serve", "--addr", "127.0.0.1:0", "--in-memory",
         "--accounts", ";".join(f"{name}:{key}" for name, key in accounts)],
        stdout=subprocess.PIPE, stderr=None, text=True,
    )
    unittest.addModuleCleanup(_stop, proc)
    strings = _read_banner(proc, [name for name, _ in accounts])
    # The endpoint is the first account's TableEndpoint less the account.
    first = accounts[0][0]
    table_endpoint = _field(strings[first], "TableEndpoint").rstrip("/")
    suffix = "/" + first
    if not table_endpoint.endswith(suffix):
        raise RuntimeError(f"TableEndpoint {table_endpoint!r} does not end in the account {first!r}")
    return Server(table_endpoint[:-len(suffix)], strings)


def _read_banner(proc, names):
    """Reads the banner until it has printed a connection string for each of names. A reader
    thread feeds the lines to a queue so that the wait has a deadline even when the server
    prints nothing."""
    lines = queue.Queue()

    def pump():
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    strings = {}
    seen = ""
    deadline = time.monotonic() + BANNER_TIMEOUT
    while any(name not in strings for name in names):
        try:
            line = lines.get(timeout=max(deadline - time.monotonic(), 0.01))
        except queue.Empty:
            raise RuntimeError(f"no connection strings in tabula's banner within {BANNER_TIMEOUT}s: {seen!r}")
        if line is None:
            raise RuntimeError(f"tabula exited with {proc.wait()}: {seen!r}")
        seen += line
        for m in _CONNECTION_STRING.finditer(line):
            strings[_field(m.group(0), "AccountName")] = m.group(0)
    return strings


def _field(connection_string, key):
    for part in connection_string.split(";"):
        k, sep, v = part.partition("=")
        if sep and k == key:
            return v
    raise RuntimeError(f"no {key} in the connection string {connection_string!r}")


def _stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    proc.stdout.close()
