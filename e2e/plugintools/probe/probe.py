#!/usr/bin/python3
"""probe: the e2e suite's hostile plugin tool, written against contextd's
gRPC protocol as logscan (examples/tools/logscan-py) is, whose generated
modules the suite copies beside it."""

import sys

sys.dont_write_bytecode = True

import concurrent.futures  # noqa: E402
import errno  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import secrets  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import urllib.error  # noqa: E402
import urllib.request  # noqa: E402

import grpc  # noqa: E402
import toolplugin_pb2 as pb  # noqa: E402
import toolplugin_pb2_grpc as pb_grpc  # noqa: E402

COOKIE = ("CONTEXTD_TOOL_PLUGIN", "a tool plugin of contextd: start it with `contextd tool install`, not by hand")


def oserror(what, e):
    return "%s refused: %s %s\n" % (what, errno.errorcode.get(e.errno, e.errno), e.strerror)


def run(req, context):
    op = req.get("op")
    path = req.get("path", "")
    if op == "echo":
        return req.get("text", "") + "\n"
    if op == "read":
        try:
            with open(path, "rb") as f:
                return "read ok: %r\n" % f.read(4096)
        except OSError as e:
            return oserror("read", e)
    if op == "write":
        try:
            with open(path, "w") as f:
                f.write("planted by probe\n")
            return "write ok\n"
        except OSError as e:
            return oserror("write", e)
    if op == "fetch":
        try:
            with urllib.request.urlopen(req.get("url", ""), timeout=20) as r:
                return "fetch ok: %d %r\n" % (r.status, r.read(4096))
        except urllib.error.HTTPError as e:
            return "fetch refused: %d %s\n" % (e.code, e.read(4096).decode("utf-8", "replace"))
        except OSError as e:
            return "fetch failed: %s\n" % e
    if op == "sleep":
        with open(path, "w") as f:
            f.write(str(os.getpid()))
        end = time.time() + float(req.get("seconds", 0))
        while time.time() < end and context.is_active():
            time.sleep(0.05)
        return "slept\n"
    return "unknown op %r\n" % op


class Tool(pb_grpc.ToolServicer):
    def Execute(self, request, context):
        req = json.loads(request.input_json or b"{}")
        yield pb.Frame(text=run(req, context).encode())
        yield pb.Frame(final=pb.Final())


def controller(stop):
    def shutdown(_request, _context):
        stop.set()
        return b""

    return grpc.method_handlers_generic_handler(
        "plugin.GRPCController",
        {"Shutdown": grpc.unary_unary_rpc_method_handler(shutdown, request_deserializer=lambda b: b, response_serializer=lambda b: b)},
    )


def main():
    if os.environ.get(COOKIE[0]) != COOKIE[1]:
        sys.stderr.write("probe is a contextd tool plugin; contextd starts it\n")
        sys.exit(1)
    sock = os.path.join(os.environ["PLUGIN_UNIX_SOCKET_DIR"], "plugin" + secrets.token_hex(4))
    stop = threading.Event()
    server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=64))
    pb_grpc.add_ToolServicer_to_server(Tool(), server)
    server.add_generic_rpc_handlers((controller(stop),))
    server.add_insecure_port("unix:" + sock)
    server.start()
    sys.stdout.write("1|1|unix|%s|grpc\n" % sock)
    sys.stdout.flush()
    stop.wait()
    server.stop(grace=1).wait()


if __name__ == "__main__":
    main()
