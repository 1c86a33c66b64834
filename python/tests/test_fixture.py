"""The fixture builder's own parsing of scheme names (the harness's naming rules)."""

from __future__ import annotations

import make_fixture


def test_scheme_names():
    s = make_fixture.Scheme("alcc-copa:delta=0.1@reno")
    assert (s.family, s.cc, s.underlay, s.mode) == ("alcc", "copa:delta=0.1", "reno", "kernel")
    assert (make_fixture.Scheme("alcc-verus").underlay, make_fixture.Scheme("tcp-bbr").underlay) == (
        "cubic",
        "bbr",
    )
    n = make_fixture.Scheme("udp-sprout")
    assert (n.family, n.cc, n.underlay, n.mode) == ("udp", "sprout", "", "udp")
