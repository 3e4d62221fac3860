"""The host end of the NIC scenarios."""
from lab.run import nicload


def test_the_nic_frame_is_a_valid_ipv4_udp_frame():
    f = nicload.frame()
    assert len(f) == 60 and f[12:14] == b"\x08\x00"
    ip = f[14:34]
    # a header with its checksum sums to 0xffff: its checksum is 0
    assert nicload._ip_checksum(ip) == 0
    assert ip[9] == 17 and f[36:38] == nicload.SINK_PORT.to_bytes(2, "big")
