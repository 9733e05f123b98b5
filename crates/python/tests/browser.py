"""Headless Chromium (Debian's ``chromium``, which scripts/install-chromium.sh
installs) driven over the DevTools protocol on a pipe, with the standard
library only: ``--remote-debugging-pipe`` reads requests on the browser's
fd 3 and writes replies and events on its fd 4, each message JSON ended by
a NUL byte."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from typing import Any, Dict, List, Optional

#: Offline and quiet: no network of its own, no GPU, a fresh profile.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--remote-debugging-pipe"]


def chromium() -> Optional[str]:
    """The browser's path, or None where it is not installed."""
    if os.access("/usr/bin/chromium", os.X_OK):
        return "/usr/bin/chromium"
    return shutil.which("chromium")


def _above_four(fd: int) -> int:
    """`fd` moved to a descriptor numbered 5 or more."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, 5)
    os.close(fd)
    return moved


class Browser:
    """One headless browser with one page (``width`` × ``height`` CSS
    pixels); collects the page's console errors and uncaught exceptions."""

    def __init__(self, binary: str, width: int = 1280, height: int = 800,
                 timeout: float = 60.0) -> None:
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="modelbin-chromium-")
        requests_read, self._requests = os.pipe()
        self._replies, replies_write = os.pipe()
        # Moved above 4, so that placing one end cannot overwrite the other.
        requests_read, replies_write = (_above_four(fd) for fd in (requests_read, replies_write))
        # bash (which, unlike dash, takes descriptors above 9) puts the pipe
        # ends on fds 3 and 4, where the browser
        # looks for them.
        script = f'exec "$0" "$@" 3<&{requests_read} 4>&{replies_write}'
        self.process = subprocess.Popen(
            ["bash", "-c", script, binary, *FLAGS, f"--user-data-dir={self.profile}"],
            pass_fds=(requests_read, replies_write), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(requests_read)
        os.close(replies_write)
        self._buffer = b""
        self._next_id = 0
        self.events: List[Dict[str, Any]] = []
        self.session: Optional[str] = None
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target,
                                 flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def _message(self, deadline: float) -> Dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._replies], [], [], max(0.0, left))
            if not ready:
                raise TimeoutError("the browser did not answer")
            chunk = os.read(self._replies, 1 << 20)
            if not chunk:
                raise ConnectionError("the browser closed the pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, **params: Any) -> Dict[str, Any]:
        """Sends one command (to the page once attached) and returns its
        result; an error reply raises."""
        self._next_id += 1
        request: Dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if self.session is not None and not method.startswith(("Target.", "Browser.")):
            request["sessionId"] = self.session
        os.write(self._requests, json.dumps(request).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            message = self._message(deadline)
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, event: str) -> Dict[str, Any]:
        """Waits for the next `event` not yet seen."""
        deadline = time.monotonic() + self.timeout
        while True:
            for i, seen in enumerate(self.events):
                if seen.get("method") == event:
                    return self.events.pop(i)
            self.events.append(self._message(deadline))

    def open(self, url: str) -> float:
        """Loads `url` and returns the seconds until its load event."""
        self.events = [e for e in self.events if e.get("method") != "Page.loadEventFired"]
        start = time.monotonic()
        self.call("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")
        return time.monotonic() - start

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises
        awaited); an exception raises."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: "str | os.PathLike[str]") -> None:
        """Saves what the page shows as a PNG."""
        data = self.call("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def errors(self) -> List[Dict[str, Any]]:
        """The console errors and uncaught exceptions seen so far."""
        return [e for e in self.events
                if e.get("method") == "Runtime.exceptionThrown"
                or (e.get("method") == "Runtime.consoleAPICalled"
                    and e["params"].get("type") == "error")
                or (e.get("method") == "Log.entryAdded"
                    and e["params"]["entry"].get("level") == "error")]

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (ConnectionError, TimeoutError, RuntimeError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._requests)
        os.close(self._replies)
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
