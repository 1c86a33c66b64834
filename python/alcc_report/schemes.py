"""The families of scheme in ``results.csv`` and how the report compares them.

The harness (``crates/alcc-cli/src/experiment/scheme/``) writes each run's ``family``; this module
is the report's side of that contract. A new kind of scheme that brings a new family adds it to
:data:`FAMILIES`; a new comparison of one family against another (the fidelity tables) is one
entry of :data:`COMPARISONS`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Family:
    """One value of the ``family`` column."""

    #: The value in ``results.csv``.
    key: str
    #: The scheme-name prefix of the family (``udp-`` for ``udp-copa``).
    prefix: str
    #: What a scheme of this family is, for the report's legend.
    title: str


#: Every family the harness writes, by key.
FAMILIES: dict[str, Family] = {
    f.key: f
    for f in (
        Family("tcp", "tcp-", "plain kernel TCP with the named congestion control"),
        Family("alcc", "alcc-", "alcc's controller deciding what enters a kernel TCP socket"),
        Family(
            "udp",
            "udp-",
            "alcc's own implementation of the controller over UDP (not the algorithm's authors' program)",
        ),
        Family(
            "ref",
            "ref-",
            "the algorithm's authors' own program (make refs), run as a black box over UDP",
        ),
        Family(
            "rx",
            "rx-",
            "the client governs its advertised receive window (DRWA, or a static buffer) "
            "against the named tcp-X or alcc-X server",
        ),
        Family(
            "unmodified",
            "nginx-",
            "Debian's nginx, unmodified: nginx-tcp-X plain, nginx-shim-X under libalcc_preload.so "
            "with alcc's controller X (nginx-hls-...: an HLS stream read by ffmpeg; vsftpd-...: "
            "Debian's vsftpd to curl's FTP client)",
        ),
        Family(
            "java",
            "java-",
            "the Java library's sender (alcc-upload.jar, as a phone app sends) with the named "
            "controller, framed mode",
        ),
    )
}

#: Families of results written before a rename, and what they are now: ``native-X`` became
#: ``udp-X`` (it is our own X over UDP, not X as its authors built it).
RENAMED_FAMILIES: dict[str, str] = {"native": "udp"}


@dataclass(frozen=True)
class Comparison:
    """A fidelity table: every scheme of family ``subject`` against the scheme of family
    ``reference`` with the same controller (``cc``) on the same trace."""

    #: Section identifier in the report.
    key: str
    #: Family of the schemes compared.
    subject: str
    #: Family they are compared against.
    reference: str
    #: Section heading.
    title: str
    #: The paragraph under the heading: what is compared and what it does not show.
    text: str
    #: Short names of both sides for column headings.
    subject_short: str
    reference_short: str

    def reference_name(self, cc: str) -> str:
        """The reference scheme's name for controller ``cc`` (``udp-copa``)."""
        return f"{FAMILIES[self.reference].prefix}{cc}"


#: The fidelity comparisons the report makes, in order: the paper's claim (ALCC-X against the
#: authors' X) and our implementation's faithfulness (our UDP X against the authors' X) when the
#: authors' programs ran, then ALCC-X against our own UDP X.
COMPARISONS: list[Comparison] = [
    Comparison(
        key="paper-claim",
        subject="alcc",
        reference="ref",
        title="The paper's claim: ALCC-X against the authors' X",
        text=(
            "ref-X is X as its authors built it (their program, built by make refs and run as a black "
            "box over UDP, the way the ALCC paper ran it). The paper claims ALCC-X performs within "
            "3-10 % of X."
        ),
        subject_short="alcc",
        reference_short="authors'",
    ),
    Comparison(
        key="faithfulness",
        subject="udp",
        reference="ref",
        title="Faithfulness: our UDP X against the authors' X",
        text=(
            "udp-X is our implementation of X over UDP, ref-X the authors' program on the same trace: "
            "how closely our implementation of the algorithm behaves like theirs."
        ),
        subject_short="our UDP",
        reference_short="authors'",
    ),
    Comparison(
        key="fidelity",
        subject="alcc",
        reference="udp",
        title="Fidelity: ALCC-X against our own UDP X",
        text=(
            "udp-X is alcc's own implementation of X sending UDP datagrams: the same controller code "
            "without kernel TCP under it, not X's authors' program. This table shows what running "
            "above kernel TCP changes; it is not the paper's comparison with the authors' X."
        ),
        subject_short="alcc",
        reference_short="our UDP",
    ),
]


def comparison(key: str) -> Comparison:
    """The comparison with section identifier ``key``."""
    return next(c for c in COMPARISONS if c.key == key)
