"""Read a socket option of a TCP socket held by another process (Linux).

``pidfd_getfd(2)`` (Linux 5.6+) duplicates a file descriptor of a process we may
ptrace (a child of the test process is one) into ours; ``getsockopt`` on the
copy reads the option the other process set on that very socket. The tests use
it to see what a Jupyter server set on the server side of a kernel websocket.
"""

from __future__ import annotations

import ctypes
import os
import socket

_SYS_PIDFD_GETFD = 438  # the same number on every Linux architecture
_libc = ctypes.CDLL(None, use_errno=True)


def socket_option_of_peer(pid: int, peer: tuple[str, int], level: int, option: int) -> int:
    """The integer socket option ``level``/``option`` of the socket of process
    ``pid`` whose peer address is ``peer``.

    Args:
        pid: the process holding the socket (one the caller may ptrace).
        peer: ``(host, port)`` the socket is connected to (the caller's own end).
        level, option: as for :meth:`socket.socket.getsockopt`
            (``socket.IPPROTO_TCP``, ``socket.TCP_NODELAY``).

    Raises:
        LookupError: no socket of ``pid`` is connected to ``peer``.
        OSError: ``pidfd_getfd`` refused (no ptrace permission, kernel older than 5.6).
    """
    pidfd = os.pidfd_open(pid)
    try:
        for name in os.listdir(f"/proc/{pid}/fd"):
            try:
                if not os.readlink(f"/proc/{pid}/fd/{name}").startswith("socket:"):
                    continue
            except FileNotFoundError:  # closed meanwhile
                continue
            fd = _libc.syscall(_SYS_PIDFD_GETFD, pidfd, int(name), 0)
            if fd < 0:
                err = ctypes.get_errno()
                raise OSError(err, f"pidfd_getfd({pid}, {name}): {os.strerror(err)}")
            with socket.socket(fileno=fd) as sock:
                try:
                    if sock.getpeername()[:2] != peer:
                        continue
                except OSError:  # listening or unconnected
                    continue
                return sock.getsockopt(level, option)
    finally:
        os.close(pidfd)
    raise LookupError(f"process {pid} has no socket connected to {peer}")
