"""mbarrier phase and transaction-count semantics (PTX ISA), misuse errors and deadlock reports."""

import pytest

from warpsim.ptx.mbarrier import MAX_TX, MBarrier, MBarrierError


def test_phase_completes_on_arrivals_and_tx_zero():
    b = MBarrier(0x400)
    b.init(2)
    t0 = b.arrive_expect_tx(4096)            # producer: one arrival + 4096 bytes expected
    assert not b.test_wait(t0) and not b.test_wait(parity=0)
    b.complete_tx(4000)
    b.arrive()                               # second arrival: bytes still missing -> phase 0 open
    assert b.phase == 0 and b.tx_count == 96
    b.complete_tx(96)
    assert b.phase == 1 and b.test_wait(t0) and b.try_wait(parity=0) and not b.test_wait(parity=1)
    assert b.pending == 2 and b.tx_count == 0


def test_bytes_may_land_before_expect_tx():
    b = MBarrier()
    b.init(1)
    b.complete_tx(128)                       # tx-count -128: no completion yet
    assert b.tx_count == -128 and b.phase == 0
    b.arrive_expect_tx(128)
    assert b.phase == 1


def test_arrive_drop_lowers_later_phases_and_pending_count():
    b = MBarrier()
    b.init(3)
    tok = b.arrive()
    assert MBarrier.pending_count(tok) == 3
    assert MBarrier.pending_count(b.arrive_drop()) == 2
    b.arrive()
    assert b.phase == 1 and b.pending == 2
    with pytest.raises(MBarrierError, match="noComplete would complete"):
        b.arrive(2, no_complete=True)


def test_misuse_errors():
    b = MBarrier(0x80)
    with pytest.raises(MBarrierError, match="0x80 is not initialised"):
        b.arrive()
    with pytest.raises(MBarrierError, match=r"init count 0 is out of range; allowed 1 \.\. 1048575"):
        b.init(0)
    with pytest.raises(MBarrierError, match="out of range"):
        b.init(1 << 20)
    b.init(1)
    with pytest.raises(MBarrierError, match="only 1 arrivals are pending"):
        b.arrive(2)
    b.expect_tx(MAX_TX)
    with pytest.raises(MBarrierError, match="tx-count overflow"):
        b.expect_tx(1)
    b.complete_tx(MAX_TX)
    b.complete_tx(MAX_TX)
    with pytest.raises(MBarrierError, match="tx-count underflow"):
        b.complete_tx(1)
    with pytest.raises(ValueError, match="parity must be 0 or 1"):
        b.test_wait(parity=2)
    b.inval()
    with pytest.raises(MBarrierError, match="not initialised"):
        b.test_wait(parity=0)


def test_deadlock_report_names_barrier_phase_and_warps():
    b = MBarrier(0x1F0)
    b.init(1)
    b.arrive_expect_tx(1024)
    b.complete_tx(512)                       # a box of 512 bytes landed, 1024 were expected
    b.add_waiter("warp 4", parity=0)
    b.add_waiter("warp 5", parity=0)
    assert b.can_complete(more_arrivals_possible=True)
    assert b.can_complete(in_flight_bytes=512)
    assert not b.can_complete()
    msg = b.deadlock_message()
    assert msg == ("barrier at shared address 0x1f0, phase 0, expected 1 arrivals, got 1, tx-count 512; "
                   "waiting warps: warp 4, warp 5")
    b.remove_waiter("warp 4")
    assert list(b.waiters) == ["warp 5"]
