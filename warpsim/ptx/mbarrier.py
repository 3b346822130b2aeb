"""The ``mbarrier`` object of the PTX ISA: phases, pending arrivals and a transaction count.

A barrier is initialised with an expected arrival count.  Each phase completes when its
pending arrival count has reached zero *and* its tx-count is zero; completion starts the next
phase (pending arrivals reset to the expected count, which ``arrive_drop`` lowers for good).
``expect_tx`` raises the tx-count by a byte count, ``complete_tx`` (what a TMA copy does when
its bytes land) lowers it; the tx-count may go negative transiently (bytes can land before the
``expect_tx``) within +-(2^20 - 1).  ``test_wait``/``try_wait`` take either the state token an
``arrive`` returned or a phase parity.

The state token is warpsim's own encoding (phase in the high word, pending count in the low
word); real tokens are opaque, PTX code only hands them back.  The scheduler-facing part
(``add_waiter``, ``can_complete``, ``deadlock_message``) lets an executor report a wait that
can never be satisfied instead of spinning.  Modelled from the PTX ISA text; not yet checked
against captures.
"""

from __future__ import annotations

#: largest arrival count and largest |tx-count| the PTX ISA allows (2^20 - 1)
MAX_COUNT = (1 << 20) - 1
MAX_TX = (1 << 20) - 1


class MBarrierError(RuntimeError):
    """Misuse of an mbarrier (undefined behaviour in PTX): the message says what and where."""


class DeadlockError(RuntimeError):
    """A wait on an mbarrier that can never complete."""


class MBarrier:
    """One mbarrier at a shared-memory address (the address is only used in messages)."""

    def __init__(self, address: int = 0):
        self.address = int(address)
        self.valid = False
        self.expected = 0
        self.pending = 0
        self.tx_count = 0
        self.phase = 0
        self._waiters: dict = {}

    # -- lifecycle -------------------------------------------------------------------------
    def init(self, count: int) -> None:
        """``mbarrier.init``: phase 0, ``count`` arrivals expected, tx-count 0."""
        count = self._count("init count", count)
        self.valid, self.expected, self.pending, self.tx_count, self.phase = True, count, count, 0, 0
        self._waiters.clear()

    def inval(self) -> None:
        """``mbarrier.inval``: the object may be reused as ordinary shared memory."""
        self._check()
        self.valid = False

    # -- arrivals and transactions ----------------------------------------------------------
    def arrive(self, count: int = 1, *, no_complete: bool = False) -> int:
        """``mbarrier.arrive`` (``count`` arrivals); returns the state token of the phase arrived on."""
        self._check()
        count = self._count("arrive count", count)
        token = self.token()
        if count > self.pending:
            raise MBarrierError(f"{self._where()}: arrive with count {count} but only {self.pending} arrivals "
                                f"are pending in phase {self.phase} (expected {self.expected})")
        if no_complete and count == self.pending and self.tx_count == 0:
            raise MBarrierError(f"{self._where()}: arrive.noComplete would complete phase {self.phase}")
        self.pending -= count
        self._maybe_complete()
        return token

    def arrive_drop(self, count: int = 1, *, no_complete: bool = False) -> int:
        """``mbarrier.arrive_drop``: arrive, and expect ``count`` fewer arrivals in every later phase."""
        self._check()
        count = self._count("arrive_drop count", count)
        if count > self.expected:
            raise MBarrierError(f"{self._where()}: arrive_drop of {count} exceeds the expected count {self.expected}")
        self.expected -= count
        return self.arrive(count, no_complete=no_complete)

    def expect_tx(self, nbytes: int) -> None:
        """``mbarrier.expect_tx``: the current phase also waits for ``nbytes`` more bytes."""
        self._check()
        self._tx(self._bytes("expect_tx", nbytes))

    def arrive_expect_tx(self, nbytes: int, count: int = 1) -> int:
        """``mbarrier.arrive.expect_tx``: expect_tx, then arrive; returns the state token."""
        self.expect_tx(nbytes)
        return self.arrive(count)

    def complete_tx(self, nbytes: int) -> None:
        """``mbarrier.complete_tx`` (and what a TMA copy's landing bytes do)."""
        self._check()
        self._tx(-self._bytes("complete_tx", nbytes))
        self._maybe_complete()

    # -- waiting ----------------------------------------------------------------------------
    def token(self) -> int:
        """The state token of the current phase (warpsim's encoding: phase << 32 | pending)."""
        return (self.phase << 32) | self.pending

    def test_wait(self, state: int | None = None, *, parity: int | None = None) -> bool:
        """``mbarrier.test_wait`` / ``try_wait``: has the phase named by ``state`` (or ``parity``) completed?

        ``parity`` p: true when the current phase's parity differs from p (the last phase of
        parity p is over).
        """
        self._check()
        if (state is None) == (parity is None):
            raise ValueError("test_wait needs exactly one of a state token or parity=0/1")
        if parity is not None:
            if parity not in (0, 1):
                raise ValueError(f"phase parity must be 0 or 1, got {parity!r}")
            return (self.phase & 1) != parity
        return self.phase > (int(state) >> 32)

    try_wait = test_wait

    @staticmethod
    def pending_count(state: int) -> int:
        """``mbarrier.pending_count``: pending arrivals recorded in a state token."""
        return int(state) & 0xFFFFFFFF

    # -- scheduler-facing -------------------------------------------------------------------
    def add_waiter(self, warp, *, state: int | None = None, parity: int | None = None) -> None:
        """Record that ``warp`` is blocked on this barrier (for deadlock reports)."""
        self._waiters[warp] = ("parity", parity) if parity is not None else ("phase", int(state) >> 32)

    def remove_waiter(self, warp) -> None:
        self._waiters.pop(warp, None)

    @property
    def waiters(self) -> dict:
        """{warp: ("parity", p) or ("phase", n)} of the warps recorded as blocked here."""
        return dict(self._waiters)

    def can_complete(self, in_flight_bytes: int = 0, more_arrivals_possible: bool = False) -> bool:
        """Could the current phase still complete?  ``in_flight_bytes``: bytes of copies already
        issued that will ``complete_tx`` on this barrier; ``more_arrivals_possible``: whether any
        thread that is not blocked might still arrive or expect bytes."""
        if more_arrivals_possible:
            return True
        return self.valid and self.pending == 0 and self.tx_count == in_flight_bytes

    def deadlock_message(self, waiting=None) -> str:
        w = self._waiters if waiting is None else waiting
        names = ", ".join(str(k) for k in w) or "none recorded"
        return (f"barrier at shared address {self.address:#x}, phase {self.phase}, expected {self.expected} "
                f"arrivals, got {self.expected - self.pending}, tx-count {self.tx_count}; waiting warps: {names}")

    # -- internals --------------------------------------------------------------------------
    def _where(self) -> str:
        return f"mbarrier at shared address {self.address:#x}"

    def _check(self) -> None:
        if not self.valid:
            raise MBarrierError(f"{self._where()} is not initialised (mbarrier.init first, or it was invalidated)")

    def _in_range(self, label, value, lo, hi) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{label} must be an integer, not {type(value).__name__}")
        if not lo <= value <= hi:
            raise MBarrierError(f"{self._where()}: {label} {value} is out of range; allowed {lo} .. {hi}")
        return value

    def _count(self, what, count) -> int:
        return self._in_range(what, count, 1, MAX_COUNT)

    def _bytes(self, what, nbytes) -> int:
        return self._in_range(f"{what} byte count", nbytes, 0, MAX_TX)

    def _tx(self, delta: int) -> None:
        new = self.tx_count + delta
        if not -MAX_TX <= new <= MAX_TX:
            kind = "overflow" if new > 0 else "underflow"
            raise MBarrierError(f"{self._where()}: tx-count {kind}: {self.tx_count} {delta:+d} leaves "
                                f"[-{MAX_TX}, {MAX_TX}] in phase {self.phase}")
        self.tx_count = new

    def _maybe_complete(self) -> None:
        if self.pending == 0 and self.tx_count == 0:
            self.phase += 1
            self.pending = self.expected
