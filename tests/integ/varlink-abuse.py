#!/usr/bin/env python3
"""Raw Varlink abuse against a running cgpoold: every bad message gets an
error reply (or the connection closed), and the daemon keeps serving a
well-behaved client throughout, including while another client stalls
halfway through a message."""
import json
import socket
import sys

path = sys.argv[1]
failures = []


def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    return s


def recv_msg(s):
    buf = b""
    while not buf.endswith(b"\0"):
        chunk = s.recv(65536)
        if not chunk:
            return None
        buf += chunk
    return json.loads(buf[:-1])


def call(s, method, params=None):
    msg = {"method": method}
    if params is not None:
        msg["parameters"] = params
    s.sendall(json.dumps(msg).encode() + b"\0")
    return recv_msg(s)


def expect(what, cond):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def healthy():
    with conn() as s:
        r = call(s, "io.cgpool.Manager.List")
        return r is not None and "slots" in r.get("parameters", {})


# a slow client holds half a message while another one is served
slow = conn()
slow.sendall(b'{"method": "io.cgpool.Manager.Li')
expect("served while another client stalls mid-message", healthy())

with conn() as s:
    r = call(s, "org.varlink.service.GetInfo")
    expect("GetInfo lists io.cgpool.Manager", "io.cgpool.Manager" in r["parameters"]["interfaces"])
    r = call(s, "org.varlink.service.GetInterfaceDescription", {"interface": "io.cgpool.Manager"})
    expect("interface description names Attach", "method Attach(" in r["parameters"]["description"])
    r = call(s, "io.cgpool.Manager.Frobnicate")
    expect("unknown method -> MethodNotFound", r.get("error") == "org.varlink.service.MethodNotFound")
    r = call(s, "com.example.Nothing.Do")
    expect("unknown interface -> InterfaceNotFound", r.get("error") == "org.varlink.service.InterfaceNotFound")
    r = call(s, "io.cgpool.Manager.Attach", {"key": "web", "pids": "twelve"})
    expect("pids not an array -> InvalidParameter", r.get("error") == "org.varlink.service.InvalidParameter")
    r = call(s, "io.cgpool.Manager.Attach", {"key": "web", "pids": [-5]})
    expect("negative pid -> InvalidParameter", r.get("error") == "org.varlink.service.InvalidParameter")
    r = call(s, "io.cgpool.Manager.Attach", {"key": "a\u0000b", "pids": [1]})
    expect("NUL inside a key -> InvalidKey", r.get("error") == "io.cgpool.Manager.InvalidKey")
    r = call(s, "io.cgpool.Manager.Status", {"key": 42})
    expect("key not a string -> InvalidParameter", r.get("error") == "org.varlink.service.InvalidParameter")

for name, payload in [("not JSON", b"{this is not json\0"), ("not an object", b"[1,2,3]\0"),
                      ("no method", b'{"parameters": {}}\0'),
                      ("oversize message", b'{"method": "' + b"x" * (256 * 1024))]:
    with conn() as s:
        try:
            s.sendall(payload)
            r = recv_msg(s)
            expect(name + " -> error reply or close", r is None or "error" in r)
        except (BrokenPipeError, ConnectionResetError):
            expect(name + " -> connection closed", True)
    expect("still serving after " + name, healthy())

slow.sendall(b'st"}\0')
r = recv_msg(slow)
expect("the stalled client gets its answer when it finishes", r is not None and "slots" in r["parameters"])
slow.close()

print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
