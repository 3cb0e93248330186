"""A loopback TCP proxy the cluster test controls: a network partition.

usage: tcp_proxy.py LISTEN_PORT TARGET_PORT

Forwards 127.0.0.1:LISTEN_PORT to 127.0.0.1:TARGET_PORT. SIGUSR1 cuts:
every connection is closed and new ones are closed at once (the node sees
its server gone and cannot reconnect); SIGUSR2 mends. Prints "ready" once
listening.
"""

import selectors
import signal
import socket
import sys


def main() -> int:
    listen_port, target_port = int(sys.argv[1]), int(sys.argv[2])
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", listen_port))
    server.listen(64)
    server.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(server, selectors.EVENT_READ, None)
    peers: dict = {}  # socket -> its other end
    state = {"cut": False, "changed": False}

    def cut(_sig, _frame):
        state["cut"], state["changed"] = True, True

    def mend(_sig, _frame):
        state["cut"], state["changed"] = False, True

    signal.signal(signal.SIGUSR1, cut)
    signal.signal(signal.SIGUSR2, mend)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))

    def close(s):
        other = peers.pop(s, None)
        for x in (s, other):
            if x is None:
                continue
            peers.pop(x, None)
            try:
                sel.unregister(x)
            except (KeyError, ValueError):
                pass
            x.close()

    print("ready", flush=True)
    while True:
        if state["changed"]:
            state["changed"] = False
            if state["cut"]:
                for s in list(peers):
                    close(s)
        for key, _ in sel.select(timeout=0.05):
            s = key.fileobj
            if s is server:
                try:
                    client, _ = server.accept()
                except BlockingIOError:
                    continue
                if state["cut"]:
                    client.close()
                    continue
                upstream = socket.create_connection(("127.0.0.1", target_port), timeout=2)
                for x in (client, upstream):
                    x.settimeout(5)  # select says readable; sendall may wait a little
                    sel.register(x, selectors.EVENT_READ, None)
                peers[client], peers[upstream] = upstream, client
                continue
            if s not in peers:
                continue
            try:
                data = s.recv(65536)
            except (OSError):
                data = b""
            if not data:
                close(s)
                continue
            try:
                peers[s].sendall(data)
            except (OSError, KeyError):
                close(s)


if __name__ == "__main__":
    sys.exit(main())
