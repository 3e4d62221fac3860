"""Reading a hung guest's vCPUs: QEMU's register dump, symbols, the
summary a hung run's reason carries."""
import json
import socket
import threading

from lab.run import hangdump

# `info registers -a` of a 64-bit guest as QEMU 7.2 prints it (trimmed)
DUMP = """CPU#0
RAX=0000000000000000 RBX=0000000000000001 RCX=0000000000000000 RDX=0
RSI=0000000000000000 RDI=0000000000000000 RBP=0000000000000000 RSP=ffffc90000083e90
R8 =0000000000000000 R9 =0000000000000000 R10=0000000000000000 R11=0
RIP=ffffffff81001050 RFL=00000246 [---Z-P-] CPL=0 II=0 A20=1 SMM=0 HLT=0
ES =0000 0000000000000000 00000000 00000000
XMM00=0000000000000000 0000000000000000 XMM01=0000000000000000 0
CPU#1
RAX=0000000000000000 RBX=0000000000000001 RCX=0000000000000000 RDX=0
RSI=0000000000000000 RDI=0000000000000000 RBP=0000000000000000 RSP=00007ffd8e1c2b40
RIP=0000000000401136 RFL=00000202 [-------] CPL=3 II=0 A20=1 SMM=0 HLT=0
"""

MAP = ("ffffffff81000000 T _stext\nffffffff81001000 T do_idle\n"
       "ffffffff81002000 t handle_softirqs\nffffffff82000000 D jiffies\n"
       "ffffffff81003000 T _etext\n")


def test_registers_say_where_each_vcpu_is():
    regs = hangdump.parse_registers(DUMP)
    assert regs[0] == {"rip": 0xffffffff81001050, "rsp": 0xffffc90000083e90,
                       "cpl": 0, "halted": False}
    assert regs[1]["cpl"] == 3
    symbols = hangdump.Symbols(None)
    assert hangdump.where(regs[1], symbols) == "user mode"
    assert hangdump.where({**regs[0], "halted": True}, symbols) == \
        "halted (idle)"
    assert hangdump.where(regs[0], symbols) == "kernel"


def test_kernel_addresses_are_named_from_system_map(tmp_path):
    (tmp_path / "System.map").write_text(MAP)
    s = hangdump.Symbols(tmp_path / "System.map")
    assert s.name(0xffffffff81002010) == "handle_softirqs+0x10"
    assert s.name(0xffffffff81001050, offset=False) == "do_idle"
    assert not s.is_text(0xffffffff82000000)       # data, not text
    assert s.name(0x401136) == "401136"
    words = hangdump.parse_words(
        "ffffc90000083e90: 0xffffffff81002010 0x0000000000000001\n"
        "ffffc90000083ea0: 0xffffffff81001000 0xffffc90000083f00\n")
    assert [w for w in words if s.is_text(w)] == [0xffffffff81002010,
                                                  0xffffffff81001000]


def fake_qemu_monitor(path, dump):
    """A QMP server answering like QEMU, with an event in between."""
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(1)

    def serve():
        conn, _ = server.accept()
        f = conn.makefile("rwb")
        f.write(b'{"QMP": {"version": {}}}\n')
        f.flush()
        for line in f:
            cmd = json.loads(line)
            if cmd["execute"] == "stop":
                f.write(b'{"event": "STOP"}\n')
            ret = ""
            if cmd["execute"] == "human-monitor-command":
                line = cmd["arguments"]["command-line"]
                ret = dump if line.startswith("info") else \
                    "ffffc90000083e90: 0xffffffff81002010 0x0\n"
                ret = ret.replace("\n", "\r\n")      # as QEMU sends it
            f.write(json.dumps({"return": ret}).encode() + b"\n")
            f.flush()
        conn.close()
    threading.Thread(target=serve, daemon=True).start()
    return server


def test_capture_samples_the_guest_and_writes_what_it_saw(tmp_path):
    (tmp_path / "System.map").write_text(MAP)
    server = fake_qemu_monitor(tmp_path / "qmp.sock", DUMP)
    try:
        summary = hangdump.capture(tmp_path / "qmp.sock",
                                   tmp_path / "hang-cpus.txt",
                                   tmp_path / "System.map", samples=3)
    finally:
        server.close()
    assert summary == ("vCPUs when the watchdog fired: 0: kernel do_idle "
                       "3/3; 1: user mode 3/3")
    text = (tmp_path / "hang-cpus.txt").read_text()
    assert "? handle_softirqs+0x10" in text
    assert "RIP=ffffffff81001050" in text and "XMM00" not in text


def test_capture_without_a_monitor_says_so(tmp_path):
    summary = hangdump.capture(tmp_path / "none.sock",
                               tmp_path / "hang-cpus.txt")
    assert summary.startswith("vCPU state not read:")
    assert not (tmp_path / "hang-cpus.txt").exists()


# `info registers -a` of an arm64 guest as QEMU 7.2 prints it (trimmed)
ARM64_DUMP = """CPU#0
 PC=ffff800008012345 X00=0000000000000000 X01=0000000000000001
X29=ffff80000a003e70 X30=ffff800008011111  SP=ffff80000a003e70
PSTATE=60000005 -ZC- EL1h    FPCR=00000000 FPSR=00000000
CPU#1
 PC=0000aaaacafe0000 X00=0000000000000000 X01=0000000000000001
X29=0000ffffc0de0000 X30=0000aaaacafe1000  SP=0000ffffc0de0000
PSTATE=80000000 N--- EL0t    FPCR=00000000 FPSR=00000000
"""


def test_an_arm64_guests_registers_say_where_each_vcpu_is():
    regs = hangdump.parse_registers(ARM64_DUMP)
    assert regs[0] == {"rip": 0xffff800008012345, "rsp": 0xffff80000a003e70,
                       "cpl": 0, "halted": False}
    assert regs[1]["cpl"] == 3              # EL0: user mode


def test_memory_the_monitor_cannot_read_gives_no_words():
    """A stack pointer into unmapped memory: QEMU's `x` says so in words,
    which once ended the whole read ("invalid literal for int()")."""
    assert hangdump.parse_words(
        "ffff800000000000: Cannot access memory at address 0x0\n") == []
