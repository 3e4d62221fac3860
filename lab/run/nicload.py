"""The host end of the nic-rx scenarios: UDP frames into a guest's NIC.

QEMU's socket network backend (`-netdev socket,udp=A,localaddr=B`)
carries the guest NIC's Ethernet frames as UDP datagrams on the host's
loopback.  The sender writes whole frames (Ethernet, IPv4, UDP) to B,
addressed to the guest's MAC and 10.0.2.15:5201, so the guest's
virtio-net driver receives them in real NAPI polls (NET_RX), and nothing
leaves this machine: no tap device, no route, no host configuration.
Frames the guest sends go to the sender's own socket, which never reads.

The sender runs as its own process (`python3 -m lab.run.nicload`), so two
guests side by side do not share one interpreter's lock; it paces to a
rate in packets per second of host time, or floods, and on SIGTERM
writes how many frames it handed to the host's kernel.  Under icount the
guest's clock counts instructions, not host time, so the rate the guest
sees is measured in the guest (the plan's net-before/after counters),
not assumed from the sender's.
"""
import argparse
import json
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

from ..base import paths

GUEST_MAC = "52:54:00:12:34:56"
HOST_MAC = "52:54:00:12:34:02"
GUEST_IP = "10.0.2.15"
HOST_IP = "10.0.2.2"
SINK_PORT = 5201            # udpsink's port in the guest (lab-nicrx)
SOURCE_PORT = 9
# 18 bytes of payload make a minimum-size (60-byte) Ethernet frame: the
# packet rate, not the bytes, is what loads NET_RX (as in Jesper
# Brouer's UDP overload tests).
PAYLOAD = 18


def _ip_checksum(header: bytes) -> int:
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total >> 16:
        total = (total & 0xffff) + (total >> 16)
    return ~total & 0xffff


def frame(payload: int = PAYLOAD) -> bytes:
    """One Ethernet frame: HOST_IP:SOURCE_PORT -> GUEST_IP:SINK_PORT."""
    mac = lambda m: bytes.fromhex(m.replace(":", ""))   # noqa: E731
    udp = struct.pack("!HHHH", SOURCE_PORT, SINK_PORT, 8 + payload, 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp) + payload, 0,
                     0x4000, 64, socket.IPPROTO_UDP, 0,
                     socket.inet_aton(HOST_IP), socket.inet_aton(GUEST_IP))
    ip = ip[:10] + struct.pack("!H", _ip_checksum(ip)) + ip[12:]
    return (mac(GUEST_MAC) + mac(HOST_MAC) + b"\x08\x00" + ip + udp +
            bytes(payload))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Sender:
    """`with Sender(rate, record) as s:` QEMU gets s.qemu_args(); the
    sender runs until the block ends and its count lands in `record`
    (JSON: sent, seconds, rate)."""

    def __init__(self, rate: int, record: Path):
        self.rate = rate                # packets per second; 0: flood
        self.record = record
        self.proc = None
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.qemu_port = _free_port()

    def qemu_args(self) -> list:
        own = self.sock.getsockname()[1]
        return ["-netdev", f"socket,id=nic,udp=127.0.0.1:{own},"
                           f"localaddr=127.0.0.1:{self.qemu_port}",
                "-device", f"virtio-net-pci,netdev=nic,mac={GUEST_MAC}"]

    def __enter__(self) -> "Sender":
        fd = self.sock.fileno()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lab.run.nicload", "--fd", str(fd),
             "--port", str(self.qemu_port), "--rate", str(self.rate),
             "--record", str(self.record)],
            pass_fds=(fd,), cwd=paths.REPO)
        return self

    def __exit__(self, *exc) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.sock.close()


def send(sock: socket.socket, port: int, rate: int, record: Path) -> None:
    """Send frames to 127.0.0.1:port until SIGTERM, then write record."""
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    data, dest = frame(), ("127.0.0.1", port)
    sent, started = 0, time.monotonic()
    while not stop:
        due = (time.monotonic() - started) * rate if rate else sent + 64
        while sent < due and not stop:
            try:
                sock.sendto(data, dest)
                sent += 1
            except OSError:
                due -= 1                # the host's buffer full: not sent
        if rate:
            time.sleep(0.0005)
    seconds = time.monotonic() - started
    record.write_text(json.dumps({"sent": sent, "seconds": round(seconds, 2),
                                  "rate": rate}) + "\n")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python3 -m lab.run.nicload",
                                description="send UDP frames into a lab "
                                "guest's NIC (started by the lab)")
    p.add_argument("--fd", type=int, required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--rate", type=int, default=0)
    p.add_argument("--record", type=Path, required=True)
    a = p.parse_args(argv)
    send(socket.socket(fileno=a.fd), a.port, a.rate, a.record)


if __name__ == "__main__":
    main()
