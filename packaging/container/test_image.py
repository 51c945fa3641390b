"""Runs the container image that `go run ./packaging/release -image` built and drives it with
the official Python SDK (azure-data-tables from Debian's python3-azure), as a user would:

- the image runs as 65532:65532, exposes 10002, keeps /data in a volume;
- the server inside listens on 0.0.0.0:10002, reached through a port published on loopback;
- a table written through the SDK is still there after the container is replaced by a new one
  on the same volume (so the unprivileged user can write the volume);
- the container stops cleanly on SIGTERM.

Usage: /usr/bin/python3 packaging/container/test_image.py IMAGE
The container tool is $TABULA_CONTAINER_TOOL (default: podman with runc, cgroupfs and the
ulimits these machines need). Standard library and the Debian package only.
"""

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import unittest
import uuid

from azure.data.tables import TableServiceClient

TOOL = shlex.split(os.environ.get("TABULA_CONTAINER_TOOL", "podman --runtime runc --cgroup-manager cgroupfs"))
RUN_FLAGS = ["--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096"]
IMAGE = None


def tool(*args, check=True):
    return subprocess.run(TOOL + list(args), check=check, capture_output=True, text=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Image(unittest.TestCase):
    def setUp(self):
        self.volume = "tabula-test-" + uuid.uuid4().hex[:8]
        tool("volume", "create", self.volume)
        self.addCleanup(tool, "volume", "rm", "-f", self.volume, check=False)

    def start(self, *args):
        """Starts the image on the volume with the port published on loopback, with args
        for tabula serve; returns the name, the connection string for the published port,
        and the banner."""
        name = "tabula-test-" + uuid.uuid4().hex[:8]
        port = free_port()
        tool("run", "-d", "--name", name, *RUN_FLAGS, "-v", f"{self.volume}:/data",
             "-p", f"127.0.0.1:{port}:10002", IMAGE, *args)
        self.addCleanup(tool, "rm", "-f", name, check=False)
        deadline = time.monotonic() + 60
        while True:
            r = tool("logs", name)
            logs = r.stdout + r.stderr
            m = re.search(r"DefaultEndpointsProtocol=\S+", logs)
            if m:
                break
            if time.monotonic() > deadline:
                self.fail(f"no connection string in the container's banner: {logs!r}")
            time.sleep(0.1)
        # The banner names the port inside the container; the client uses the published one.
        conn = m.group(0).replace("127.0.0.1:10002", f"127.0.0.1:{port}")
        return name, conn, logs

    def test_config(self):
        cfg = json.loads(tool("image", "inspect", IMAGE).stdout)[0]["Config"]
        self.assertEqual(cfg["User"], "65532:65532")
        self.assertIn("/data", cfg["Volumes"])
        self.assertIn("10002/tcp", cfg["ExposedPorts"])
        self.assertEqual(cfg["Entrypoint"], ["/tabula", "serve", "--tableHost", "0.0.0.0"])
        self.assertEqual(cfg["WorkingDir"], "/data")

    def test_sdk_and_volume(self):
        name, conn, logs = self.start()
        self.assertRegex(logs, r"on (\[::\]|0\.0\.0\.0):10002 \(every interface\)")
        self.assertIn("Data: ./tabula-data", logs)  # in the volume: the working directory is /data
        with TableServiceClient.from_connection_string(conn) as svc:
            table = svc.create_table("Images")
            table.create_entity({"PartitionKey": "p", "RowKey": "r", "Size": 42})
            self.assertEqual(table.get_entity("p", "r")["Size"], 42)
        t0 = time.monotonic()
        tool("stop", "-t", "30", name)
        self.assertLess(time.monotonic() - t0, 25, "SIGTERM stops the server")
        self.assertIn("the database is closed", tool("logs", name).stdout)
        tool("rm", name)

        _, conn, _ = self.start()
        with TableServiceClient.from_connection_string(conn) as svc:
            table = svc.get_table_client("Images")
            self.assertEqual([e["Size"] for e in table.list_entities()], [42], "the volume kept the data")


    def test_azurite_command_line(self):
        """An Azurite container's arguments run unchanged after the image."""
        _, conn, logs = self.start("--inMemoryPersistence", "--loose", "--skipApiVersionCheck", "--disableTelemetry",
                                   "--silent", "--blobHost", "0.0.0.0", "--queueHost", "0.0.0.0")
        self.assertIn("Data: in memory", logs)
        self.assertIn("--blobHost is ignored", logs)
        with TableServiceClient.from_connection_string(conn) as svc:
            svc.create_table("FromAzurite")
            self.assertEqual([t.name for t in svc.list_tables()], ["FromAzurite"])


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    IMAGE = sys.argv.pop()
    unittest.main(verbosity=2)
