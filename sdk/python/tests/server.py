"""A real `stint server` for the tests: built from this checkout (or STINT_BIN), on a
fresh SQLite file, on a free loopback port."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
import unittest
from typing import Any, Callable, Dict

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def stint_binary() -> str:
    """STINT_BIN, or cmd/stint built into a temp dir (once per process)."""
    if os.environ.get("STINT_BIN"):
        return os.environ["STINT_BIN"]
    out = os.path.join(tempfile.mkdtemp(prefix="stint-bin-"), "stint")
    subprocess.run(["go", "build", "-o", out, "./cmd/stint"], cwd=REPO, check=True)
    os.environ["STINT_BIN"] = out
    return out


class Server:
    """A stint server process with tokens of tenant acme."""

    def __init__(self) -> None:
        self.bin = stint_binary()
        self.dir = tempfile.mkdtemp(prefix="stint-py-")
        db = ["--db", os.path.join(self.dir, "stint.db")]
        self.tokens: Dict[str, str] = {}
        for role in ("client", "worker", "admin"):
            self.tokens[role] = subprocess.run(
                [self.bin, *db, "tokens", "create", "--tenant", "acme", "--role", role, "--name", f"py-{role}"],
                check=True, capture_output=True, text=True).stdout.strip()
        err = None if os.environ.get("STINT_TEST_VERBOSE") else subprocess.DEVNULL
        self.proc = subprocess.Popen([self.bin, *db, "server", "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE,
                                     stderr=err, text=True)
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("stint server listening on "):
                self.url = line.split()[-1]
                break
        else:
            raise RuntimeError(f"stint server exited ({self.proc.wait()}) before listening")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)
        if self.proc.stdout:
            self.proc.stdout.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class ServerTestCase(unittest.TestCase):
    """A test class with a server of its own (srv) and a client of role client (client)."""

    srv: Server
    client: Any

    @classmethod
    def setUpClass(cls) -> None:
        from stint import Client

        cls.srv = Server()
        cls.client = Client(cls.srv.url, cls.srv.tokens["client"])

    @classmethod
    def tearDownClass(cls) -> None:
        cls.client.close()
        cls.srv.stop()


def wait_for(what: str, fn: Callable[[], Any], timeout: float = 30.0) -> Any:
    """Polls fn until it returns something truthy, for at most timeout seconds."""
    until = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > until:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)
