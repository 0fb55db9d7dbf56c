#!/usr/bin/python3
"""logscan: a contextd tool plugin written in Python against the gRPC protocol.

It scans log files of the workspace for lines matching a pattern (errors by
default), streams the matching lines, and ends with counts per file and the
most frequent kinds of line (numbers, ids and timestamps folded together, so
that a thousand "timeout after 30s on conn 81" are one kind). With
follow_seconds it keeps watching the files for new lines, as `tail -f` does.

contextd starts it with go-plugin's protocol, which a plugin in any language
speaks this way:

1. Check the handshake's cookie (CONTEXTD_TOOL_PLUGIN) and the protocol
   versions the daemon offers (PLUGIN_PROTOCOL_VERSIONS).
2. Serve gRPC on a unix socket inside $PLUGIN_UNIX_SOCKET_DIR (the sandbox has
   no network the daemon could reach).
3. Print one line on stdout: CORE|APP|NETWORK|ADDRESS|PROTOCOL, here
   1|1|unix|<socket path>|grpc.
4. Serve contextd.toolplugin.v1.Tool/Execute, and go-plugin's
   plugin.GRPCController/Shutdown, after which the plugin exits.

It does not implement go-plugin's broker (plugin.GRPCBroker/StartStream), so
it cannot reach the daemon's ToolHost; see TOOL.md.
"""

import sys

# The tool's tree is read-only in the sandbox, and a checkout stays clean.
sys.dont_write_bytecode = True

import collections  # noqa: E402
import concurrent.futures  # noqa: E402
import glob  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import secrets  # noqa: E402
import signal  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

try:
    import grpc
    import toolplugin_pb2 as pb
    import toolplugin_pb2_grpc as pb_grpc
except ImportError as e:
    sys.stderr.write(
        "logscan: %s; it needs Python's grpc and protobuf modules "
        "(on Debian: apt-get install python3-grpcio python3-protobuf)\n" % e
    )
    sys.exit(1)

COOKIE_KEY = "CONTEXTD_TOOL_PLUGIN"
COOKIE_VALUE = (
    "a tool plugin of contextd: start it with `contextd tool install`, not by hand"
)
PROTOCOL_VERSION = 1

DEFAULT_PATTERN = r"(?i)\b(error|fatal|panic|exception|traceback|critical)\b"
DEFAULT_MAX_LINES = 500
DEFAULT_TOP = 10
MAX_LINE_CHARS = 2000
MAX_SHAPE_CHARS = 160
# How often a long scan looks whether its call is still wanted.
CHECK_EVERY = 2048
# Output is sent in frames of about this size, or at least this often.
FRAME_BYTES = 32 << 10
FRAME_SECONDS = 0.2
FOLLOW_POLL = 0.2
# Following ends this long before the call's deadline, so that its result
# still reaches the agent.
FOLLOW_MARGIN = 1.0
MAX_FOLLOW_SECONDS = 3600


def log(msg):
    """One line on stderr, which contextd keeps in its log of the plugin."""
    sys.stderr.write("logscan: %s\n" % msg)
    sys.stderr.flush()


class Cancelled(Exception):
    """The call was cancelled or reached its deadline."""

    def __init__(self, msg, code):
        super().__init__(msg)
        self.code = code


class InputError(Exception):
    """The input names something logscan cannot scan."""


# Pieces of a line that differ between occurrences of the same event.
_TIMESTAMP = re.compile(
    r"^\s*\[?(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
    r"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d)\]?\s*"
)
_VARIABLE = [
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"), "<uuid>"),
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), "<ip>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b|\b(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{6,}\b"), "<hex>"),
    (re.compile(r"\d+(?:\.\d+)?"), "<n>"),
]
_SPACES = re.compile(r"\s+")


def shape(line):
    """The line with what varies between occurrences folded away."""
    s = _TIMESTAMP.sub("", line, count=1)
    for rx, repl in _VARIABLE:
        s = rx.sub(repl, s)
    s = _SPACES.sub(" ", s).strip()
    return s[:MAX_SHAPE_CHARS]


class Scan:
    """One call's state: its input, its counts, and the output not yet sent."""

    def __init__(self, request, context):
        self.context = context
        self.call_id = request.call_id
        self.finished = False
        self.deadline_ns = request.deadline_unix_nano
        self.root = os.path.realpath(request.workspace or os.getcwd())
        try:
            params = json.loads(request.input_json or b"{}")
        except ValueError as e:
            raise InputError("the input is not JSON: %s" % e)
        if not isinstance(params, dict):
            raise InputError("the input must be a JSON object")
        self.path = params.get("path")
        if not isinstance(self.path, str) or not self.path:
            raise InputError('"path" is required: a file or glob relative to the workspace, such as "logs/*.log"')
        pattern = params.get("pattern") or DEFAULT_PATTERN
        try:
            self.regex = re.compile(pattern)
        except (re.error, TypeError) as e:
            raise InputError('"pattern" is not a Python regular expression: %s' % e)
        self.max_lines = _int(params, "max_lines", DEFAULT_MAX_LINES, 0, 100000)
        self.top = _int(params, "top", DEFAULT_TOP, 0, 100)
        self.follow = _int(params, "follow_seconds", 0, 0, MAX_FOLLOW_SECONDS)
        self.files = collections.OrderedDict()  # relative path -> counts
        self.shapes = collections.Counter()
        self.first_of = {}  # shape -> "path:line" of its first occurrence
        self.matches = 0
        self.shown = 0
        self.lines = 0
        self.pending = []
        self.pending_bytes = 0
        self.last_flush = time.monotonic()

    def resolve(self):
        """The files the path names, each inside the workspace."""
        if os.path.isabs(self.path):
            raise InputError('"path" must be relative to the workspace, not %r' % self.path)
        found = []
        for p in sorted(glob.glob(os.path.join(self.root, self.path), recursive=True)):
            real = os.path.realpath(p)
            if real != self.root and not real.startswith(self.root + os.sep):
                raise InputError("%r leaves the workspace" % os.path.relpath(p, self.root))
            if os.path.isfile(real):
                found.append((os.path.relpath(p, self.root), real))
        if not found:
            raise InputError("no file in the workspace matches %r" % self.path)
        return found

    def check(self):
        if not self.context.is_active():
            raise Cancelled("cancelled by the caller", grpc.StatusCode.CANCELLED)
        if self.deadline_ns and time.time_ns() >= self.deadline_ns:
            raise Cancelled("deadline reached", grpc.StatusCode.DEADLINE_EXCEEDED)

    def time_left(self):
        """Seconds until the call's deadline, or None without one."""
        left = self.context.time_remaining()
        if self.deadline_ns:
            mine = (self.deadline_ns - time.time_ns()) / 1e9
            left = mine if left is None else min(left, mine)
        return left

    def line(self, rel, n, text):
        """Counts one line; a matching one joins the output."""
        self.lines += 1
        counts = self.files[rel]
        counts["lines"] += 1
        if self.lines % CHECK_EVERY == 0:
            self.check()
        if not self.regex.search(text):
            return
        self.matches += 1
        counts["matches"] += 1
        s = shape(text)
        self.shapes[s] += 1
        self.first_of.setdefault(s, "%s:%d" % (rel, n))
        if self.shown < self.max_lines:
            self.shown += 1
            if len(text) > MAX_LINE_CHARS:
                text = text[:MAX_LINE_CHARS] + "…"
            out = "%s:%d: %s\n" % (rel, n, text)
            self.pending.append(out)
            self.pending_bytes += len(out)

    def frames(self, force=False):
        """The pending output as text frames, when enough of it waits."""
        now = time.monotonic()
        if not self.pending or not (
            force or self.pending_bytes >= FRAME_BYTES or now - self.last_flush >= FRAME_SECONDS
        ):
            return
        data = "".join(self.pending).encode("utf-8", "replace")
        self.pending, self.pending_bytes, self.last_flush = [], 0, now
        yield pb.Frame(text=data)

    def run(self, files):
        """Scans the files, then follows them; yields the text frames."""
        followers = []
        for rel, real in files:
            self.files[rel] = {"lines": 0, "matches": 0}
            n = 0
            with open(real, "rb") as f:
                for raw in f:
                    n += 1
                    self.line(rel, n, raw.decode("utf-8", "replace").rstrip("\r\n"))
                    yield from self.frames()
                followers.append(Follower(rel, real, f.tell(), n))
        yield from self.frames(force=True)
        end = time.monotonic() + self.follow
        left = self.time_left()
        if self.follow and left is not None:
            end = min(end, time.monotonic() + left - FOLLOW_MARGIN)
        while time.monotonic() < end:
            self.check()
            time.sleep(min(FOLLOW_POLL, max(0, end - time.monotonic())))
            for fo in followers:
                fo.read(self)
            yield from self.frames(force=True)
        self.check()

    def ended(self):
        """Called by gRPC when the call is over, however it ended."""
        if not self.finished:
            left = self.time_left()
            why = "deadline reached" if left is not None and left <= 0 else "cancelled by the caller"
            log("call %s: %s after %d lines" % (self.call_id, why, self.lines))

    def final(self):
        data = {
            "lines": self.lines,
            "matches": self.matches,
            "shown": self.shown,
            "files": [dict(path=p, **c) for p, c in self.files.items()],
            "top": [
                {"shape": s, "count": c, "first": self.first_of[s]}
                for s, c in self.shapes.most_common(self.top)
            ],
        }
        refs = [p for p, c in self.files.items() if c["matches"]]
        return pb.Frame(
            final=pb.Final(
                data_json=json.dumps(data).encode(),
                refs=refs,
                truncated=self.shown < self.matches,
            )
        )


def _int(params, key, default, lo, hi):
    v = params.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise InputError("%r must be a whole number from %d to %d" % (key, lo, hi))
    return v


class Follower:
    """Reads what is appended to one file after the first scan."""

    def __init__(self, rel, real, pos, lineno):
        self.rel, self.real, self.pos, self.lineno = rel, real, pos, lineno
        self.partial = b""

    def read(self, scan):
        try:
            size = os.stat(self.real).st_size
        except OSError:
            return
        if size < self.pos:  # truncated or replaced: start over
            self.pos, self.lineno, self.partial = 0, 0, b""
        if size == self.pos:
            return
        with open(self.real, "rb") as f:
            f.seek(self.pos)
            data = f.read(size - self.pos)
        self.pos += len(data)
        data = self.partial + data
        *complete, self.partial = data.split(b"\n")
        for raw in complete:
            self.lineno += 1
            scan.line(self.rel, self.lineno, raw.decode("utf-8", "replace").rstrip("\r"))


class Tool(pb_grpc.ToolServicer):
    def Execute(self, request, context):
        try:
            scan = Scan(request, context)
            files = scan.resolve()
        except InputError as e:
            yield pb.Frame(final=pb.Final(error=str(e), exit_code=2))
            return
        # gRPC stops drawing on this generator once the call has ended, so a
        # cancel between two frames is seen here and not in the loops.
        context.add_callback(scan.ended)
        try:
            yield from scan.run(files)
        except Cancelled as e:
            context.abort(e.code, str(e))
        except OSError as e:
            yield from scan.frames(force=True)
            scan.finished = True
            yield pb.Frame(final=pb.Final(error="reading %s: %s" % (e.filename, e.strerror), exit_code=1))
            return
        scan.finished = True
        yield scan.final()


def controller(stop):
    """go-plugin's plugin.GRPCController: Shutdown is how the daemon stops a
    plugin gracefully; its request and reply are empty messages."""

    def shutdown(_request, _context):
        log("shutdown requested")
        stop.set()
        return b""

    return grpc.method_handlers_generic_handler(
        "plugin.GRPCController",
        {
            "Shutdown": grpc.unary_unary_rpc_method_handler(
                shutdown,
                request_deserializer=lambda b: b,
                response_serializer=lambda b: b,
            )
        },
    )


def handshake():
    """Checks that contextd started the plugin; returns the socket's dir and
    whether logscan made it."""
    if os.environ.get(COOKIE_KEY) != COOKIE_VALUE:
        sys.stderr.write(
            "logscan is a contextd tool plugin: contextd starts it when an agent calls the tool.\n"
            "Install it with `contextd tool install <source>`; it does nothing run by hand.\n"
        )
        sys.exit(1)
    offered = os.environ.get("PLUGIN_PROTOCOL_VERSIONS", str(PROTOCOL_VERSION))
    if str(PROTOCOL_VERSION) not in [v.strip() for v in offered.split(",")]:
        sys.stderr.write(
            "logscan speaks contextd's tool protocol %d; this contextd offers %s\n"
            % (PROTOCOL_VERSION, offered)
        )
        sys.exit(1)
    d = os.environ.get("PLUGIN_UNIX_SOCKET_DIR")
    if d:
        return d, False
    return tempfile.mkdtemp(prefix="logscan-"), True


def main():
    sock_dir, own_dir = handshake()
    sock = os.path.join(sock_dir, "plugin" + secrets.token_hex(4))
    if len(sock.encode()) >= 108:
        log("socket path %s is too long for a unix socket (at most 107 bytes)" % sock)
        sys.exit(1)
    stop = threading.Event()
    server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=16))
    pb_grpc.add_ToolServicer_to_server(Tool(), server)
    server.add_generic_rpc_handlers((controller(stop),))
    if not server.add_insecure_port("unix:" + sock):
        log("cannot listen on %s" % sock)
        sys.exit(1)
    server.start()
    # A terminal's Ctrl-C reaches the whole process group; the daemon, not
    # the keyboard, stops its plugins.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    sys.stdout.write("1|%d|unix|%s|grpc\n" % (PROTOCOL_VERSION, sock))
    sys.stdout.flush()
    # A plugin whose parent has gone has no one left to serve.
    parent = os.getppid()
    while not stop.wait(1):
        if os.getppid() != parent:
            log("parent exited")
            break
    # Running calls get a moment to end; Execute sees them cancelled after it.
    server.stop(grace=1).wait()
    try:
        os.remove(sock)
        if own_dir:
            os.rmdir(sock_dir)
    except OSError:
        pass


if __name__ == "__main__":
    main()
