"""The host end of the NIC scenarios."""
import json
import socket
import time

import pytest

from lab import nicload


def test_the_nic_frame_is_a_valid_ipv4_udp_frame():
    f = nicload.frame()
    assert len(f) == 60 and f[12:14] == b"\x08\x00"
    ip = f[14:34]
    # a header with its checksum sums to 0xffff: its checksum is 0
    assert nicload._ip_checksum(ip) == 0
    assert ip[9] == 17 and f[36:38] == nicload.SINK_PORT.to_bytes(2, "big")


@pytest.mark.parametrize("rate", [10000, 40000])
def test_the_sender_reaches_the_rate_asked(tmp_path, rate):
    """A sweep's point is only as good as its sender: paced, it hands
    the host's kernel the frames per second asked, within 5% (measured
    in the sweep: 10.0, 40.0 and 80.0 kpps asked 10, 40 and 80), and it
    records what it reached."""
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind(("127.0.0.1", 0))
    sink.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    record = tmp_path / "sent.json"
    sender = nicload.Sender(rate, record)
    sender.qemu_port = sink.getsockname()[1]
    with sender:
        time.sleep(1.5)
    sink.close()
    got = json.loads(record.read_text())
    assert got["rate"] == rate and got["seconds"] >= 1.0
    assert abs(got["sent"] / got["seconds"] - rate) <= 0.05 * rate, got
