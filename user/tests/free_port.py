#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR MIT
"""Print a TCP port on 127.0.0.1 that a server started next can bind.

Why not bind(0): the kernel hands out port 0 binds from the ephemeral
range (ip_local_port_range, 32768-60999 by default), the same range it
takes outgoing connections' local ports from.  A test that picks a port
that way and starts its server a moment later races every connection
made meanwhile on the machine (make check runs suites side by side): one
of them can take the port and the server's bind fails with "Address
already in use".  Ports below the ephemeral range are only ever taken by
an explicit bind, so a random free one there is only at risk from another
picker, one chance in ~12k.
"""
import random
import socket
import sys

LOW, HIGH = 20000, 32768


def ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return HIGH


def main():
    high = min(HIGH, ephemeral_low())
    rng = random.SystemRandom()
    for _ in range(1000):
        port = rng.randrange(LOW, high)
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
        finally:
            s.close()
        print(port)
        return 0
    print("free_port.py: no free port in %d-%d" % (LOW, high), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
