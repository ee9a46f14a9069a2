"""``make serve``'s port check: prints nothing when 127.0.0.1:PORT is free, else one line saying what to do.

Run with the system Python before any setup, so a busy port fails at once instead of after the whole setup.
"""

from __future__ import annotations

import socket
import sys


def is_free(port: int) -> bool:
    """Whether a server could listen on 127.0.0.1:``port`` now (as ``mkdocs serve``, with SO_REUSEADDR)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def main(arg: str) -> str:
    """The one line to print for ``PORT=arg``, or ``""`` when it is free."""
    if not arg.isdigit() or not 0 < int(arg) < 65536:
        return f"PORT={arg} is not a port number: run make serve PORT=8000"
    port = int(arg)
    if is_free(port):
        return ""
    spare = next((p for p in range(port + 1, min(port + 100, 65536)) if is_free(p)), None)
    hint = f"run make serve PORT={spare}" if spare else "stop what listens there or pick another PORT"
    return f"port {port} is busy: {hint}"


if __name__ == "__main__":
    print(main(sys.argv[1] if len(sys.argv) > 1 else ""))
