"""Inside a network namespace with only ``lo``: make every outside address local, and record who tries.

The runner (``drive.py``) runs in ``unshare --net``, so nothing can leave the machine.  To *see* an
attempt rather than have it fail silently, :func:`make_everything_local` routes every IPv4/IPv6
destination to ``lo`` (``ip route add local default dev lo``).  Then:

- a DNS query to the configured resolver reaches :class:`OutsideRecorder`'s UDP/TCP listener on
  port 53, which records the name and answers REFUSED;
- a connection to any address on ports 80 or 443 reaches its catch-all listener, which records the
  destination (the socket's local address is the one the client dialled) and closes;
- a connection to any other outside port is refused at once by the kernel (nothing listens).

A test fails when :attr:`OutsideRecorder.contacts` is not empty.
"""

from __future__ import annotations

import socket
import subprocess
import threading
from dataclasses import dataclass, field

CATCH_TCP_PORTS = (53, 80, 443)


def make_everything_local() -> None:
    """Bring ``lo`` up and route every destination to it (call only inside a fresh network namespace)."""
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    subprocess.run(["ip", "route", "add", "local", "0.0.0.0/0", "dev", "lo"], check=True)
    subprocess.run(["ip", "-6", "route", "add", "local", "::/0", "dev", "lo"], check=False,
                   stderr=subprocess.DEVNULL)  # fmt: skip


def only_loopback_interfaces() -> list[str]:
    """The namespace's interfaces (the runner checks it is only ``lo``)."""
    out = subprocess.run(["ip", "-o", "link", "show"], check=True, capture_output=True, text=True).stdout
    return [line.split(":")[1].strip() for line in out.splitlines() if ":" in line]


def _qname(packet: bytes) -> str:
    """The first question's name of a DNS query (best effort)."""
    labels: list[str] = []
    i = 12
    while i < len(packet):
        length = packet[i]
        if length == 0 or length & 0xC0:
            break
        labels.append(packet[i + 1:i + 1 + length].decode("ascii", "replace"))
        i += 1 + length
    return ".".join(labels)


def _refused(query: bytes) -> bytes:
    if len(query) < 12:
        return b""
    flags = 0x8000 | (query[2] & 0x79) << 8 | 0x0080 | 5  # response, opcode+RD kept, RA, RCODE=REFUSED
    return query[:2] + flags.to_bytes(2, "big") + query[4:6] + b"\x00\x00\x00\x00\x00\x00" + query[12:]


def _is_loopback(address: str) -> bool:
    return address.startswith("127.") or address in ("::1", "::ffff:127.0.0.1")


@dataclass
class OutsideRecorder:
    """Listeners that record every attempt to reach a non-loopback address or to resolve a name."""

    contacts: list[str] = field(default_factory=list)
    _sockets: list[socket.socket] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> OutsideRecorder:
        for family, any_addr in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
            try:
                udp = socket.socket(family, socket.SOCK_DGRAM)
                if family == socket.AF_INET6:
                    udp.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                udp.bind((any_addr, 53))
            except OSError:
                continue
            self._sockets.append(udp)
            threading.Thread(target=self._serve_dns, args=(udp,), daemon=True).start()
            for port in CATCH_TCP_PORTS:
                tcp = socket.socket(family, socket.SOCK_STREAM)
                tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    tcp.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                tcp.bind((any_addr, port))
                tcp.listen(64)
                self._sockets.append(tcp)
                threading.Thread(target=self._serve_tcp, args=(tcp, port), daemon=True).start()
        return self

    def _add(self, what: str) -> None:
        with self._lock:
            self.contacts.append(what)

    def _serve_dns(self, sock: socket.socket) -> None:
        while True:
            try:
                data, peer = sock.recvfrom(4096)
            except OSError:
                return
            self._add(f"dns query for {_qname(data)!r}")
            try:
                sock.sendto(_refused(data), peer)
            except OSError:
                pass

    def _serve_tcp(self, sock: socket.socket, port: int) -> None:
        while True:
            try:
                conn, _peer = sock.accept()
            except OSError:
                return
            dialled = conn.getsockname()[0]
            if not _is_loopback(dialled):
                self._add(f"tcp connection to {dialled}:{port}")
            conn.close()

    def stop(self) -> None:
        for s in self._sockets:
            try:
                s.close()
            except OSError:
                pass


__all__ = ["OutsideRecorder", "make_everything_local", "only_loopback_interfaces"]
