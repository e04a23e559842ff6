"""One API process of a bench: the production ASGI app under uvicorn (httptools +
uvloop, as ``uvicorn --factory tether.asgi:create`` picks them), on a loopback port that
the bench's other API processes listen on too.

    python _api_process.py PORT

Each process binds its own socket with ``SO_REUSEPORT``, so the kernel spreads new
connections over the processes by a hash of their addresses, as a load balancer in front
of one process per container does. ``uvicorn --workers N`` instead shares one accept
queue, and whichever process is idle first takes a burst of connections: 32 keep-alive
connections opened at once split 32/0, 27/5, 6/26, 25/7 and 8/24 (decision 0029).
"""

from __future__ import annotations

import socket
import sys

import uvicorn


def main() -> None:
    port = int(sys.argv[1])
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    listener.bind(("127.0.0.1", port))
    # uvicorn starts the app (lifespan) before it listens: a listening socket is ready.
    # uvicorn's defaults (INFO, an access log line per request), as `tether serve` runs it.
    config = uvicorn.Config("tether.asgi:create", factory=True, log_config=None)
    uvicorn.Server(config).run(sockets=[listener])


if __name__ == "__main__":
    main()
