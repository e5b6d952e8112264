#!/usr/bin/env python3
"""Runs a command on a pseudo-terminal (kubectl exec -t needs one) with scripted input.

usage: ttyrun.py [--expect TEXT] [--send TEXT] ... -- COMMAND...

Steps run in order: --expect waits (at most 20 s) until TEXT appeared in the output so far,
--send writes TEXT (Python escapes such as \\r are decoded). Then the output is read until the
command exits. Prints the output as a Python bytes literal on one line, then "exit N"."""
import os
import pty
import select
import sys
import time

steps, argv = [], sys.argv[1:]
while argv and argv[0] != "--":
    if argv[0] in ("--send", "--expect") and len(argv) > 1:
        steps.append((argv[0], argv[1].encode().decode("unicode_escape").encode("latin-1")))
        argv = argv[2:]
    else:
        sys.exit("usage: ttyrun.py [--expect TEXT] [--send TEXT] ... -- COMMAND...")
argv = argv[1:]
if not argv:
    sys.exit("ttyrun.py: no command")

pid, fd = pty.fork()
if pid == 0:
    os.execvp(argv[0], argv)
out = b""


def read(deadline):
    global out
    while time.time() < deadline:
        r, _, _ = select.select([fd], [], [], 0.05)
        if not r:
            continue
        try:
            data = os.read(fd, 4096)
        except OSError:
            return False
        if not data:
            return False
        out += data
        return True
    return True


alive = True
for kind, text in steps:
    if kind == "--send":
        os.write(fd, text)
        continue
    deadline = time.time() + 20
    while alive and text not in out and time.time() < deadline:
        alive = read(deadline)
    if text not in out:
        print(repr(out))
        sys.exit("ttyrun.py: %r did not appear" % text)
deadline = time.time() + 30
while alive and time.time() < deadline:
    alive = read(deadline)
_, status = os.waitpid(pid, 0)
print(repr(out))
print("exit", os.waitstatus_to_exitcode(status))
