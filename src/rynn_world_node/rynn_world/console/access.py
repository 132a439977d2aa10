"""Who may command through the operator console.

The console drives a robot: whoever can reach its page can switch modes, record and calibrate.
So it serves on a loopback address only, unless an access token is configured
(``access_token_file``: a file only its owner can read, holding at least
``MIN_TOKEN_LENGTH`` characters, e.g. ``python -c 'import secrets; print(secrets.token_urlsafe(24))'``).
With a token, every control (Real / Digital, Start / Stop / Discard, the task, Calibrate,
the overlay) works only from a browser that entered the token on its own page; a control
from any other browser does nothing and that browser is told why.

Everything on the page is shared by every browser (viser's server-wide elements); the token
field and the lock line are per browser (client-scoped), so one operator unlocking the
controls never unlocks them for another browser. The page is plain HTTP: on a network, put
it behind TLS (a reverse proxy) or an SSH tunnel, or the token crosses the network in clear.
``AccessGate`` is the decision, free of viser and ROS; ``BrowserAccess`` puts it on the page.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import stat
import threading
from pathlib import Path

MIN_TOKEN_LENGTH = 16
LOCALHOST_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")


class AccessError(ValueError):
    """The console must not start with this host and token configuration."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine (127.0.0.0/8, ::1, localhost). The wildcard
    addresses (``0.0.0.0``, ``::``, ``""``) listen on every interface: not loopback."""
    host = host.strip().strip("[]")
    if host.lower() in LOCALHOST_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # another host name: it may resolve to any interface


def read_token_file(path: str) -> str:
    """The token in ``path`` (surrounding whitespace stripped); "" for no path. ``AccessError`` when
    the file is missing, readable by group or others, or the token is shorter than ``MIN_TOKEN_LENGTH``."""
    if not path:
        return ""
    file = Path(path).expanduser()
    try:
        mode = file.stat().st_mode
        token = file.read_text().strip()
    except OSError as error:
        raise AccessError(f"cannot read the console access token file {file}: {error}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise AccessError(f"the console access token file {file} is open to group or others "
                          f"(mode {stat.S_IMODE(mode):o}); chmod 600 it")
    if len(token) < MIN_TOKEN_LENGTH:
        raise AccessError(f"the console access token in {file} has {len(token)} characters; "
                          f"at least {MIN_TOKEN_LENGTH} are required")
    return token


def check_binding(host: str, token: str) -> None:
    """``AccessError`` when the console would listen beyond this machine without an access token."""
    if not token and not is_loopback(host):
        raise AccessError(
            f"refusing to serve the operator console on {host!r} without an access token: anyone who reaches "
            "that address could drive the robot. Serve on 127.0.0.1 (the default; an SSH tunnel reaches it "
            "from elsewhere) or set access_token_file to a file holding a token")


def write_token_file(path: Path, token: str) -> Path:
    """Write ``token`` to a new file only its owner can read (the format ``read_token_file`` reads)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(token + "\n")
    return Path(path)


class AccessGate:
    """Which browsers may use the controls: every one when no token is configured; else those that
    entered it. Browsers are viser client ids; ``None`` is the server itself (e.g. a value the
    console sets back), always allowed. Thread-safe: viser calls from its own threads."""

    def __init__(self, token: str = ""):
        self._token = token.encode()
        self._granted: set[int] = set()
        self._lock = threading.Lock()
        self.refused = 0  # controls used by a browser without the token
        self.granted_total = 0  # browsers that entered the token

    @property
    def required(self) -> bool:
        return bool(self._token)

    def enter(self, client_id: int, text: str) -> bool:
        """The browser typed ``text`` in its token field; True when that is the token (it is then
        allowed until it disconnects). A wrong entry takes a granted browser's access away."""
        matches = self.required and hmac.compare_digest(text.strip().encode(), self._token)
        with self._lock:
            if matches and client_id not in self._granted:
                self.granted_total += 1
            (self._granted.add if matches else self._granted.discard)(client_id)
        return matches

    def allowed(self, client_id: int | None) -> bool:
        if not self.required or client_id is None:
            return True
        with self._lock:
            return client_id in self._granted

    def refusal(self, client_id: int | None, control: str) -> str | None:
        """None when ``client_id`` may use ``control``; else why not (and the refusal is counted)."""
        if self.allowed(client_id):
            return None
        with self._lock:
            self.refused += 1
        return (f"{control}: refused, this browser has not entered the access token "
                "(Access, at the top of the controls)")

    def forget(self, client_id: int) -> None:
        """The browser left: a reconnecting one must enter the token again."""
        with self._lock:
            self._granted.discard(client_id)


LOCKED_TEXT = "**Controls locked** in this browser: enter the access token."
UNLOCKED_TEXT = "Controls unlocked in this browser."


class BrowserAccess:
    """The gate on a viser page: per browser, a token field and a line saying whether its controls
    are locked. ``allows(event, control)`` is what every control asks before it acts; a refused
    browser is told why in that line and in a notification."""

    def __init__(self, server, gate: AccessGate):
        self.gate = gate
        self._lines: dict[int, object] = {}
        self._lock = threading.Lock()
        if gate.required:
            server.on_client_connect(self._connected)
            server.on_client_disconnect(self._left)

    def _connected(self, client) -> None:
        gui = client.gui
        with gui.add_folder("Access", order=-1000.0):  # above the page's server-wide controls
            field = gui.add_text("Access token", initial_value="", hint="the console's access token")
            line = gui.add_markdown(LOCKED_TEXT)
        with self._lock:
            self._lines[client.client_id] = line

        def entered(event) -> None:
            if event.client_id is None or not field.value:
                return  # the server cleared the field
            if self.gate.enter(event.client_id, field.value):
                field.value = ""  # the token does not stay on the page
                line.content = UNLOCKED_TEXT
            else:
                line.content = LOCKED_TEXT

        field.on_update(entered)

    def _left(self, client) -> None:
        self.gate.forget(client.client_id)
        with self._lock:
            self._lines.pop(client.client_id, None)

    def allows(self, event, control: str) -> bool:
        reason = self.gate.refusal(event.client_id, control)
        if reason is None:
            return True
        with self._lock:
            line = self._lines.get(event.client_id)
        if line is not None:
            line.content = f"{LOCKED_TEXT}\n\n{reason}"
        if event.client is not None:
            event.client.add_notification("Control refused", reason, color="red", auto_close_seconds=10.0)
        return False
