"""The fixture builder's own parsing: per-packet delays from a crafted link log."""

from __future__ import annotations

import make_fixture


def test_log_delays_adds_propagation_and_handles_units(tmp_path):
    log = tmp_path / "down.log"
    log.write_text(
        "# mahimahi mm-link (downlink) [t] > down.log\n"
        "# alcc propagation delay us: 10000\n"
        "# base timestamp: 0\n"
        "100 + 1500\n"
        "102 # 1500\n"
        "102 - 1500 2\n"
        "103 d 1 1500\n"
        "1600 - 1500 5\n"
    )
    out = tmp_path / "delays.csv"
    assert make_fixture.log_delays(log, out) == 2
    assert out.read_text().splitlines() == ["t_s,delay_ms", "0.000000,12.000", "1.498000,15.000"]
    log.write_text("# alcc time unit: us\n2000 - 1500 1500\n4000 - 1500 250\n")
    assert make_fixture.log_delays(log, out) == 2
    assert out.read_text().splitlines() == ["t_s,delay_ms", "0.000000,1.500", "0.002000,0.250"]


def test_scheme_names():
    s = make_fixture.Scheme("alcc-copa:delta=0.1@reno")
    assert (s.family, s.cc, s.underlay, s.mode) == ("alcc", "copa:delta=0.1", "reno", "kernel")
    assert (make_fixture.Scheme("alcc-verus").underlay, make_fixture.Scheme("tcp-bbr").underlay) == (
        "cubic",
        "bbr",
    )
    n = make_fixture.Scheme("native-sprout")
    assert (n.family, n.cc, n.underlay, n.mode) == ("native", "sprout", "", "udp")
