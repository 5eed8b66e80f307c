#!/usr/bin/env python3
# Runs every framing case (cases.py) against Boost.Beast's parser and a
# libmicrohttpd server, and prints a table: refused, or accepted (and, for the
# server, whether the request that followed was served: smuggled).
import socket, subprocess, sys, time
from cases import CASES

bins = sys.argv[1] if len(sys.argv) > 1 else sys.path[0]  # where beast_probe and mhd_probe are
beast = subprocess.run([f"{bins}/beast_probe"], input=b"".join(
    n.encode() + b"\0" + c + b"\0" for n, c in CASES.items()), capture_output=True, check=True)
beast_says = dict(line.split("\t", 1) for line in beast.stdout.decode().splitlines())

mhd = subprocess.Popen([f"{bins}/mhd_probe"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
port = int(mhd.stdout.readline())


def mhd_answer(data):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(2)
    s.sendall(data)
    got = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
    except socket.timeout:
        pass
    s.close()
    statuses = [l.split(b" ")[1].decode() for l in got.split(b"\r\n") if l.startswith(b"HTTP/1.")]
    smuggled = b"GET /inner" in got
    return " ".join(statuses) + (" SMUGGLED" if smuggled else "") if statuses else "no answer"


print("| case | Boost.Beast 1.81 parser | libmicrohttpd 0.9.75 (strict) |")
print("| --- | --- | --- |")
try:
    for name, data in CASES.items():
        print(f"| {name} | {beast_says[name]} | {mhd_answer(data)} |")
finally:
    mhd.kill()
