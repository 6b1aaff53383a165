"""A bundled server that answers its handshake and tool list before it has loaded the mcp SDK.

Every bundled server is an MCPServer of the mcp SDK, which costs ~1.2 s of CPU to import before the server
can answer `initialize`; a `miroctl list` of five of them on two cores waits for six seconds of imports.
`python -P -m miroctl.servers NAME` runs the server behind this front instead:

- The first time, it hands the conversation to the real server at once and notes the server's own answers to
  `server/discover`, `initialize` and the first `tools/list` in a snapshot (in the user's cache, one file per
  server, named by a key of everything the answers could depend on: the code of the bundled servers and of
  the miroctl parts they use, the Python version and the SDK's installed files, and the server's
  environment but for the markers of a run).
- Later starts with the same key answer those requests from the snapshot, byte for byte what the server said,
  without importing anything heavy. The first request the snapshot cannot answer (a call, a cursor, a
  resource, anything unknown) starts the real server in this process and hands it the conversation: the
  handshake it missed is replayed to it (its answers to the replay are dropped), then every byte of stdin
  goes to it and every byte it writes goes to stdout.

A client that follows tool-list changes (miroctl's library, the SDK's `listen`) opens a `subscriptions/listen`
stream for them: the front acknowledges it as the real server would and holds it (the server's tools change only
once it runs); a hand-over replays it to the real server, whose second acknowledgement is dropped, and a client's
cancel of it before then closes it here.

A `list` thus never loads the SDK at all, and a `call` loads it while the tool list is already known.
MIROCTL_SERVER_SNAPSHOTS=0 turns the front off; MIROCTL_SERVER_CACHE moves its files. Only snapshots this user
wrote are read: a file of another user's, or one in a directory a group or other users can write to, is not.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import runpy
import stat
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from miroctl.base import cachedir, stamps

# Servers whose start can fail for a reason outside code and environment (no browser installed): a snapshot
# would answer for a server that cannot start, so they always start for real.
DIRECT = frozenset({"browser"})
VOLATILE = ("MIROCTL_RUN", "MIROCTL_NESTING", "TASK_ID")  # differ from run to run, change no answer
SNAPSHOT_METHODS = ("server/discover", "initialize", "tools/list")
REPLAY_ID = "miroctl-quickstart-replay"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"
TOOL_CHANGES = {"toolsListChanged": True}  # the one listen filter the front holds (a tool-following client's)
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
OUTPUT_END_WAIT = 5.0  # seconds a front waits, once the server has returned, for the end of its output
SERVERS_ROOT = Path(__file__).resolve().parents[1]  # miroctl.servers (servers/ in a checkout)
MIROCTL_ROOT = Path(stamps.__file__).resolve().parents[1]  # the miroctl package, wherever servers/ lives


def cache_root(env: Mapping[str, str] | None = None) -> Path | None:
    """Where the snapshots are: MIROCTL_SERVER_CACHE, else the user's cache directory's miroctl/servers; None
    when the user has no cache directory (never the temporary directory, which every user shares)."""
    env = os.environ if env is None else env
    given = env.get("MIROCTL_SERVER_CACHE")
    if given:
        return Path(given)
    home = cachedir.cache_home(env)
    return home / "miroctl" / "servers" if home is not None else None


def snapshot_key(name: str) -> str:
    """What the server's first answers could depend on, hashed."""
    digest = hashlib.sha256()
    digest.update(f"{name}\0{sys.version}\0".encode())
    stamps.add_files(digest, sorted(SERVERS_ROOT.rglob("*.py")), SERVERS_ROOT.parent)
    for part in ("base", "policy", "__init__.py"):
        root = MIROCTL_ROOT / part
        stamps.add_files(digest, sorted(root.rglob("*.py")) if root.is_dir() else [root], MIROCTL_ROOT)
    stamps.add_files(digest, stamps.package_files(("mcp", "mcp_types")))  # the SDK's version, without importing it
    for key, value in sorted(os.environ.items()):
        if key not in VOLATILE:
            digest.update(f"{key}={value}\0".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()[:40]


def request_key(message: dict[str, Any], legacy_version: str | None) -> str | None:
    """The snapshot entry a request would be answered from: its method and protocol version; None for a
    request no snapshot answers (anything else, or a tools/list with a cursor)."""
    method, params = message.get("method"), message.get("params") or {}
    if method not in SNAPSHOT_METHODS or not isinstance(params, dict):
        return None
    meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
    version = meta.get(META_VERSION) if isinstance(meta, dict) else None
    if method == "initialize":
        version = params.get("protocolVersion")
    elif method == "tools/list":
        if params.get("cursor") is not None:
            return None
        version = version or legacy_version
    if not isinstance(version, str):
        return None
    return f"{method}|{version}"


class Front:
    """The server's stdin and stdout until (and unless) the real server takes them over."""

    def __init__(self, name: str) -> None:
        self.name = name
        root = cache_root()
        self.path = root / f"{name}-{snapshot_key(name)}.json" if root is not None else None
        self.own_directory = not os.environ.get("MIROCTL_SERVER_CACHE")  # miroctl's, which it may make private
        self.answers: dict[str, Any] = self._load()
        self.legacy_version: str | None = None  # negotiated by an initialize this front answered
        self.replay: list[dict[str, Any]] = []  # what the real server must hear first
        self.buffer = b""
        self.announces = False  # the discover answered here declares tool-list changes
        self.held: set[str] = set()  # the listen streams acknowledged here (their ids, as JSON)

    def _load(self) -> dict[str, Any]:
        """The snapshot, when this user wrote it: one another user could have put there (a file of someone
        else's, or any file in a directory others can write to) is not read, as its tool list would be served
        as this server's."""
        raw = cachedir.read_private(self.path) if self.path is not None else None
        if raw is None:
            return {}
        try:
            data = json.loads(raw)
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    def run(self) -> None:
        """Answer what the snapshot can; hand over at the first thing it cannot (or exit at EOF)."""
        while True:
            line = self._line()
            if line is None:
                return  # EOF before anything needed the real server
            try:
                message = json.loads(line)
            except ValueError:
                message = None
            if isinstance(message, dict) and self._answered(message):
                continue
            self.hand_over(line)
            return

    def _line(self) -> bytes | None:
        while b"\n" not in self.buffer:
            chunk = os.read(0, 65536)
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line + b"\n"

    def _answered(self, message: dict[str, Any]) -> bool:
        method, ident = message.get("method"), message.get("id")
        if method == "notifications/initialized" and "id" not in message:
            self.replay.append(message)
            return True
        if method == "subscriptions/listen" or (method == "notifications/cancelled" and "id" not in message):
            return self._listen(message)
        key = request_key(message, self.legacy_version)
        if key is None or key not in self.answers or "id" not in message:
            return False
        _write(1, {"jsonrpc": "2.0", "id": ident, "result": self.answers[key]})
        if method == "server/discover":
            tools = (self.answers[key].get("capabilities") or {}).get("tools")
            self.announces = isinstance(tools, dict) and tools.get("listChanged") is True
        if method == "initialize":
            self.legacy_version = self.answers[key].get("protocolVersion")
            self.replay.append({**message, "id": REPLAY_ID})
        return True

    def _listen(self, message: dict[str, Any]) -> bool:
        """A listen stream for tool changes acknowledged as the real server acknowledges it (then replayed to it at
        a hand-over), or the client's cancel of one held here; anything else is the real server's."""
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        ident = json.dumps(message.get("id"))
        if message.get("method") == "notifications/cancelled":
            cancelled = json.dumps(params.get("requestId"))
            if cancelled not in self.held:
                return False
            self.held.discard(cancelled)
            self.replay = [m for m in self.replay if json.dumps(m.get("id")) != cancelled]
            return True
        if not self.announces or not isinstance(message.get("id"), (str, int)) or ident in self.held:
            return False
        if params.get("notifications") != TOOL_CHANGES:
            return False
        ack = {"notifications": TOOL_CHANGES, "_meta": {META_SUBSCRIPTION: message["id"]}}
        _write(1, {"jsonrpc": "2.0", "method": ACKNOWLEDGED, "params": ack})
        self.held.add(ident)
        self.replay.append(message)
        return True

    def hand_over(self, pending: bytes) -> None:
        """Run the real server on a pipe that first says what it missed, then passes stdin on; its output goes
        to stdout but for its answers to the replay, with the snapshot's answers noted on the way."""
        replay = b"".join(json.dumps(m).encode() + b"\n" for m in self.replay)
        stdin, stdout = os.dup(0), os.dup(1)
        server_in, feed = os.pipe()
        drain, server_out = os.pipe()
        wire = os.fstat(server_out)
        os.dup2(server_in, 0)
        os.dup2(server_out, 1)
        os.close(server_in)
        os.close(server_out)
        noting = Notes(self) if not self.answers else None
        feeder = threading.Thread(target=_feed, args=(replay + pending + self.buffer, stdin, feed, noting), daemon=True)
        filtered = threading.Thread(target=_filter, args=(drain, stdout, noting, set(self.held)), daemon=True)
        feeder.start()
        filtered.start()
        try:
            _run_server(self.name)
        finally:
            sys.stdout.flush()
            _close_copies(wire)  # the filter sees the end of the server's output
            filtered.join(timeout=OUTPUT_END_WAIT)
            if filtered.is_alive():
                print(f"{self.name}: the server's output did not end (a copy of it left open)", file=sys.stderr)

    def save(self, answers: dict[str, Any]) -> None:
        """Write the snapshot atomically (a concurrent start reads the old one or the new one, never half)."""
        if self.path is None:
            return
        try:
            directory = self.path.parent
            directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            found = os.lstat(directory)
            if self.own_directory and found.st_uid == os.geteuid() and stat.S_IMODE(found.st_mode) & 0o077:
                os.chmod(directory, 0o700)  # made under a lax umask: the snapshots would not be read from it
                found = os.lstat(directory)
            if not cachedir.private_directory(found):
                return  # a snapshot written there would not be read (others could replace it)
            handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.name}-", suffix=".tmp")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(answers, out)
            os.replace(temporary, self.path)
            _prune(self.path.parent, self.name)
        except OSError:
            return  # a cache that cannot be written only means the next start is not quicker


KEEP = 16  # snapshots kept per server: other environments and code versions come and go


def _prune(directory: Path, name: str) -> None:
    """Only the KEEP most recently written snapshots of a server stay."""
    found = sorted(directory.glob(f"{name}-*.json"), key=lambda path: path.stat().st_mtime, reverse=True)
    for old in found[KEEP:]:
        with contextlib.suppress(OSError):
            old.unlink()


class Notes:
    """The real server's answers to the snapshot's requests, seen on their way (first start only)."""

    def __init__(self, front: Front) -> None:
        self.front = front
        self.asked: dict[Any, str] = {}
        self.answers: dict[str, Any] = {}
        self.lock = threading.Lock()
        self.legacy_version: str | None = None

    def request(self, line: bytes) -> None:
        if b'"method"' not in line:
            return
        try:
            message = json.loads(line)
        except ValueError:
            return
        if isinstance(message, dict) and "id" in message:
            key = request_key(message, self.legacy_version)
            if key is not None:
                with self.lock:
                    self.asked[json.dumps(message["id"])] = key

    def answer(self, line: bytes) -> None:
        if not self.asked or b'"result"' not in line:
            return
        try:
            message = json.loads(line)
        except ValueError:
            return
        if not isinstance(message, dict) or not isinstance(message.get("result"), dict):
            return
        with self.lock:
            key = self.asked.pop(json.dumps(message.get("id")), None)
        if key is None:
            return
        if key.startswith("initialize|"):
            self.legacy_version = message["result"].get("protocolVersion")
        if key.startswith("tools/list|") and message["result"].get("nextCursor"):
            return  # a listing of several pages is not kept: the next start asks the server
        self.answers[key] = message["result"]
        if any(k.startswith("tools/list|") for k in self.answers):
            self.front.save(self.answers)


def _close_copies(pipe: os.stat_result) -> None:
    """Close every write end this process holds of the pipe `pipe` describes: fd 1, and the private copy the SDK's
    stdio server keeps of it and never closes, which would otherwise hold the filter's read open (and the
    process's exit back) until the join's timeout."""
    try:
        fds = [int(name) for name in os.listdir("/dev/fd")]
    except OSError:
        fds = [1]
    for fd in fds:
        try:
            info = os.fstat(fd)
        except OSError:
            continue
        same = (info.st_dev, info.st_ino) == (pipe.st_dev, pipe.st_ino) and stat.S_ISFIFO(info.st_mode)
        if same and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY:  # not the filter's read end
            os.close(fd)


def _feed(first: bytes, stdin: int, feed: int, notes: Notes | None) -> None:
    """Everything the real server reads: the replay and what was read already, then stdin until its end."""
    try:
        if notes is None:  # nothing to note: bytes pass as they come
            _write_all(feed, first)
            while chunk := os.read(stdin, 65536):
                _write_all(feed, chunk)
            return
        for line in _lines(stdin, first):
            notes.request(line)
            _write_all(feed, line)
    except OSError:
        return
    finally:
        os.close(feed)


def _filter(drain: int, stdout: int, notes: Notes | None, held: set[str]) -> None:
    """The real server's output to stdout, without its answers to the replay (the acknowledgements of the listen
    streams `held` by the front included: the client has had one)."""
    replayed = REPLAY_ID.encode()
    try:
        for line in _lines(drain):
            if replayed in line and _is_replay_answer(line):
                continue
            if held and ACKNOWLEDGED.encode() in line and _acknowledges(line, held):
                continue
            if notes is not None:
                notes.answer(line)
            _write_all(stdout, line)
    except OSError:
        return


def _lines(fd: int, first: bytes = b"") -> Iterator[bytes]:
    """The lines read from `fd` (after `first`), each with its newline; a last one without, at the end.
    Each byte is scanned once, so a line of many megabytes costs no more than its size."""
    buffer = bytearray()
    chunk = first
    while True:
        start = len(buffer)
        buffer += chunk
        while (end := buffer.find(b"\n", start)) >= 0:
            yield bytes(buffer[: end + 1])
            del buffer[: end + 1]
            start = 0
        chunk = os.read(fd, 65536)
        if not chunk:
            if buffer:
                yield bytes(buffer)
            return


def _acknowledges(line: bytes, held: set[str]) -> bool:
    """Whether `line` acknowledges one of the `held` streams (each dropped once)."""
    try:
        message = json.loads(line)
    except ValueError:
        return False
    if not isinstance(message, dict) or message.get("method") != ACKNOWLEDGED:
        return False
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    ident = json.dumps(meta.get(META_SUBSCRIPTION)) if isinstance(meta, dict) else None
    if ident not in held:
        return False
    held.discard(ident)
    return True


def _is_replay_answer(line: bytes) -> bool:
    try:
        message = json.loads(line)
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("id") == REPLAY_ID and "method" not in message


def _run_server(name: str) -> None:
    """The bundled server as `python -m miroctl.servers.NAME` runs it."""
    sys.argv = [sys.argv[0]]
    runpy.run_module(f"miroctl.servers.{name}", run_name="__main__", alter_sys=True)


def _write(fd: int, message: dict[str, Any]) -> None:
    _write_all(fd, json.dumps(message, separators=(",", ":")).encode() + b"\n")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def main(argv: list[str]) -> None:
    """`python -P -m miroctl.servers NAME`."""
    if len(argv) != 1 or not argv[0].isidentifier() or not (Path(__file__).parents[1] / f"{argv[0]}.py").is_file():
        sys.exit("usage: python -P -m miroctl.servers NAME (a bundled server: miroctl/servers/NAME.py)")
    name = argv[0]
    if name in DIRECT or os.environ.get("MIROCTL_SERVER_SNAPSHOTS", "1") == "0":
        _run_server(name)
        return
    Front(name).run()
