#!/usr/bin/env python3
"""hostile.py - a local user who is neither root nor in socket_group, at the
raw Varlink socket of a running cgpoold (run as root; drops to the test uid
itself where the part needs it).

  idle SOCK N READY       as nobody: hold N connections open and idle, write
                          how many the daemon kept to READY, then sleep
  pipeline SOCK KEY       2,000 pipelined Status requests on one connection
                          while another client Attaches (as root) to KEY:
                          print each Attach's reply time; fail past 50 ms
  pid-reuse SOCK KEY      as nobody: connect, fork, the parent exits and its
                          pid goes to a root process; the child Attaches the
                          parent's pid to KEY: refused, the root process stays
  streams SOCK N IDLE      as nobody: N List streams (more) read no further than
                          their first reply; one connection more is closed at
                          once (the streams count against nobody's share);
                          after IDLE s and a margin the daemon has closed them
                          (EOF after what the socket held, well short of the
                          whole List, which root reads first), then nobody is
                          served again
  call SOCK METHOD PARAMS one call as the caller is (PARAMS: JSON, where "self"
                          in a list of pids is this process's pid); the
                          reply on stdout
Exit: 0 pass, 1 fail, 77 skip."""
import json
import os
import socket
import sys
import threading
import time

NOBODY = 65534


def drop(uid=NOBODY):
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


def conn(path, timeout=5):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s


def recv_msg(s, buf):
    """(message, rest) from bytes buf plus what s sends; (None, b'') at EOF"""
    while b"\0" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            return None, b""
        buf += chunk
    msg, rest = buf.split(b"\0", 1)
    return json.loads(msg), rest


def call(s, method, params=None):
    msg = {"method": method, "parameters": params or {}}
    s.sendall(json.dumps(msg).encode() + b"\0")
    return recv_msg(s, b"")[0]


def idle(path, n, ready):
    out = open(ready, "w")  # in the test's directory, root's; one write
    drop()
    held = []
    for _ in range(n):
        try:
            held.append(conn(path, 1))
        except OSError:
            pass
    time.sleep(0.5)
    alive = 0
    for s in held:  # a refused connection is closed at once by the daemon
        s.settimeout(0.2)
        try:
            alive += s.recv(1) != b""
        except socket.timeout:
            alive += 1
        except OSError:
            pass
    out.write("%d\n" % alive)
    out.close()
    time.sleep(60)
    return 0


def pipeline(path, key):
    n = 2000
    heavy = conn(path, 30)
    req = b'{"method":"io.cgpool.Manager.Status","parameters":{}}\0' * n
    got = [0]

    def reader():
        buf = b""
        while got[0] < n:
            msg, buf = recv_msg(heavy, buf)
            if msg is None:
                return
            got[0] += 1

    t = threading.Thread(target=reader)
    t.start()
    sender = threading.Thread(target=heavy.sendall, args=(req,))
    sender.start()
    worst, samples = 0.0, 0
    with conn(path) as s:
        while got[0] < n * 3 // 4 and samples < 200:
            if got[0] == 0:
                time.sleep(0.001)
                continue
            t0 = time.monotonic()
            r = call(s, "io.cgpool.Manager.Attach", {"key": key, "pids": [os.getpid()]})
            dt = (time.monotonic() - t0) * 1000
            if "error" in r:
                print("FAIL: Attach while pipelined: %s" % r)
                return 1
            worst = max(worst, dt)
            samples += 1
    sender.join()
    t.join(30)
    heavy.close()
    print("%d Attach calls while %d of %d pipelined Status replies came; slowest %.1f ms" % (samples, got[0], n, worst))
    if got[0] != n:
        print("FAIL: %d of %d Status replies" % (got[0], n))
        return 1
    if samples == 0:
        print("FAIL: no Attach sampled while the pipeline ran")
        return 1
    return 0 if worst < 50 else 1


def in_slot(pid, key_cgroup):
    try:
        with open("/proc/%d/cgroup" % pid) as f:
            return key_cgroup in f.read()
    except OSError:
        return False


def pid_reuse_once(path, key):
    """True refused, False moved, None the pid could not be reused"""
    to_child_r, to_child_w = os.pipe()
    from_child_r, from_child_w = os.pipe()
    parent = os.fork()
    if parent == 0:  # the unprivileged caller that connects, then exits
        drop()
        s = conn(path)
        me = os.getpid()
        if os.fork() == 0:  # its child keeps the connection
            os.close(to_child_w)
            os.read(to_child_r, 1)
            try:
                r = call(s, "io.cgpool.Manager.Attach", {"key": key, "pids": [me]})
            except Exception as e:  # closed: refused as well
                r = {"error": str(e)}
            os.write(from_child_w, json.dumps(r).encode())
            os._exit(0)
        os._exit(0)
    os.waitpid(parent, 0)  # its pid is free now
    os.close(to_child_r)
    os.close(from_child_w)
    with open("/proc/sys/kernel/ns_last_pid", "w") as f:
        f.write(str(parent - 1))
    victim = os.fork()
    if victim == 0:
        os.execvp("sleep", ["sleep", "30"])
    try:
        if victim != parent:
            os.write(to_child_w, b"x")  # let the child go; nothing to judge
            os.read(from_child_r, 65536)
            return None
        os.write(to_child_w, b"x")
        r = json.loads(os.read(from_child_r, 65536) or b"{}")
        moved = in_slot(victim, "cgpool-hostile") or "error" not in r
        print("Attach of pid %d (now root's process) from a connection of its exited owner: %s" % (parent, r))
        return not moved
    finally:
        os.kill(victim, 9)
        os.waitpid(victim, 0)


def pid_reuse(path, key):
    for _ in range(5):
        r = pid_reuse_once(path, key)
        if r is not None:
            return 0 if r else 1
    print("SKIP: the pid of the exited caller could not be handed to another process")
    return 77


def stream_bytes(s, cap):
    """bytes read until EOF, None if the connection stays open 5 s or more than cap come"""
    total = 0
    s.settimeout(5)
    try:
        while total <= cap:
            chunk = s.recv(65536)
            if not chunk:
                return total
            total += len(chunk)
    except socket.timeout:
        return None
    except ConnectionResetError:
        return total
    return None


def streams(path, n, idle):
    with conn(path) as s:  # as root: how long the whole List is
        s.sendall(b'{"method": "io.cgpool.Manager.List", "more": true}\0')
        s.shutdown(socket.SHUT_WR)
        whole = stream_bytes(s, 1 << 30)
    drop()
    held, ok = [], True
    for _ in range(n):
        s = conn(path)
        s.sendall(b'{"method": "io.cgpool.Manager.List", "more": true}\0')
        if recv_msg(s, b"")[0] is None:
            print("FAIL: nobody's stream %d was refused" % (len(held) + 1))
            return 1
        held.append(s)
    extra = conn(path)
    closed = stream_bytes(extra, 0) == 0
    extra.close()
    print(("ok" if closed else "FAIL") + ": a connection beyond nobody's %d streams is closed at once" % n)
    ok &= closed
    time.sleep(idle + 1.5)
    for i, s in enumerate(held):
        got = stream_bytes(s, whole // 2)
        fine = got is not None
        print("%s: stream %d ended by the daemon after %s of %d bytes" % ("ok" if fine else "FAIL", i + 1, got, whole))
        ok &= fine
        s.close()
    with conn(path) as s:
        served = call(s, "org.varlink.service.GetInfo") is not None
    print(("ok" if served else "FAIL") + ": nobody is served again once its streams are closed")
    return 0 if ok and served else 1


def call_once(path, method, params):
    p = json.loads(params)
    if p.get("pids"):
        p["pids"] = [os.getpid() if v == "self" else v for v in p["pids"]]
    print(json.dumps(call(conn(path), "io.cgpool.Manager." + method, p)))
    return 0


def main():
    cmd = sys.argv[1]
    if cmd == "call":
        return call_once(sys.argv[2], sys.argv[3], sys.argv[4])
    if cmd == "idle":
        return idle(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    if cmd == "pipeline":
        return pipeline(sys.argv[2], sys.argv[3])
    if cmd == "streams":
        return streams(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    if cmd == "pid-reuse":
        return pid_reuse(sys.argv[2], sys.argv[3])
    print("unknown command " + cmd)
    return 99


sys.exit(main())
