"""The elastic thread pool: real threads, real waits (short timeouts keep the tests quick)."""

from __future__ import annotations

import linecache
import logging
import threading
import time
from collections.abc import Callable

import pytest
from helpers import current_frames

from mcp_sync.runtime.workers import ElasticPool, PoolClosed, stay_on_this_thread

TIMEOUT = 10.0
NAME = "mcp-sync-test-pool"


def wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)
    assert condition()


def test_a_task_never_waits_for_a_busy_thread() -> None:
    """Tasks that depend on each other cannot deadlock: each gets a thread while the others block."""
    pool = ElasticPool(NAME)
    count = 5
    arrived = threading.Barrier(count, timeout=TIMEOUT)  # passes only with every task running at once
    names: list[str] = []
    done = threading.Semaphore(0)

    def task() -> None:
        arrived.wait()
        names.append(threading.current_thread().name)
        done.release()

    for _ in range(count):
        pool.submit(task)
    for _ in range(count):
        assert done.acquire(timeout=TIMEOUT)
    assert names == [NAME] * count and len(pool.threads) == count
    pool.close(TIMEOUT)
    assert pool.threads == [] and pool.closed


def test_an_idle_thread_is_reused_then_ends() -> None:
    pool = ElasticPool(NAME, idle_timeout=0.2)
    ran: list[threading.Thread] = []
    done = threading.Semaphore(0)

    def task() -> None:
        ran.append(threading.current_thread())
        done.release()

    pool.submit(task)
    assert done.acquire(timeout=TIMEOUT)
    wait_until(lambda: pool.idle == 1)
    pool.submit(task)  # the waiting thread takes it: no new one
    assert done.acquire(timeout=TIMEOUT)
    first, second = ran
    assert first is second
    first.join(TIMEOUT)  # idle for 0.2 s: it ends
    assert not first.is_alive() and pool.threads == [] and pool.idle == 0
    pool.close()


def waits_for_the_lock_after_its_wait(thread: threading.Thread) -> bool:
    """Whether ``thread`` is in ``ElasticPool._next``, its wait for a task run out, blocked taking the pool's lock."""
    frame = current_frames().get(thread.ident or -1)
    if frame is None or frame.f_code.co_name != "_next":
        return False
    return linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip() == "with self._lock:"


def test_a_waiting_thread_whose_time_runs_out_as_a_task_comes_takes_it() -> None:
    """A task handed to a waiting thread is never lost, even when its idle time is up by then."""
    pool = ElasticPool(NAME, idle_timeout=0.1)
    done = threading.Semaphore(0)
    pool.submit(done.release)
    assert done.acquire(timeout=TIMEOUT)
    wait_until(lambda: pool.idle == 1)
    [thread] = pool.threads
    with pool._lock:  # the thread's wait runs out, and it cannot give up before the task is promised
        wait_until(lambda: waits_for_the_lock_after_its_wait(thread))
        pool.submit(done.release)
    assert done.acquire(timeout=TIMEOUT)
    assert pool.threads == [thread]
    pool.close(TIMEOUT)
    assert not thread.is_alive()


def test_close_ends_idle_threads_at_once_and_busy_ones_after_their_task() -> None:
    pool = ElasticPool(NAME, idle_timeout=60.0)
    started, release = threading.Event(), threading.Event()
    busy_thread: list[threading.Thread] = []

    def busy() -> None:
        busy_thread.append(threading.current_thread())
        started.set()
        release.wait(TIMEOUT)

    pool.submit(busy)
    assert started.wait(TIMEOUT)
    done = threading.Event()
    pool.submit(done.set)  # the busy thread cannot take it: a second thread, which then waits
    assert done.wait(TIMEOUT)
    wait_until(lambda: pool.idle == 1)
    [waiting] = [thread for thread in pool.threads if thread not in busy_thread]
    closer = threading.Thread(target=pool.close, kwargs={"timeout": TIMEOUT}, name="test-closer")
    closer.start()
    waiting.join(TIMEOUT)  # it ends without waiting out its idle minute
    assert not waiting.is_alive() and pool.threads == busy_thread and closer.is_alive()
    release.set()  # the busy one ends after its task, and close() waited for it
    closer.join(TIMEOUT)
    assert not closer.is_alive() and pool.threads == [] and not busy_thread[0].is_alive()


def test_a_closed_pool_refuses_tasks() -> None:
    pool = ElasticPool(NAME)
    pool.close()
    with pytest.raises(PoolClosed, match=NAME):
        pool.submit(stay_on_this_thread)
    assert pool.threads == []


def test_a_pool_that_runs_late_tasks_gives_each_a_thread_that_ends_with_it() -> None:
    pool = ElasticPool(NAME, idle_timeout=60.0, run_after_close=True)
    pool.close()
    ran = threading.Event()
    pool.submit(ran.set)
    assert ran.wait(TIMEOUT)
    wait_until(lambda: pool.threads == [])  # it does not wait out its idle minute
    pool.close()


def test_a_failing_task_is_logged_and_its_thread_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    pool = ElasticPool(NAME)

    def broken() -> None:
        raise ValueError("boom")

    with caplog.at_level(logging.ERROR, logger="mcp_sync.runtime.workers"):
        pool.submit(broken)
        wait_until(lambda: pool.idle == 1)
    assert "boom" in caplog.text
    [thread] = pool.threads
    ran: list[threading.Thread] = []
    done = threading.Event()

    def record() -> None:
        ran.append(threading.current_thread())
        done.set()

    pool.submit(record)
    assert done.wait(TIMEOUT) and ran == [thread]
    pool.close(TIMEOUT)


def test_a_task_may_close_its_own_pool() -> None:
    """close() from one of the pool's threads does not wait for that thread (it would wait for itself)."""
    pool = ElasticPool(NAME)
    closed = threading.Event()

    def close_it() -> None:
        pool.close(TIMEOUT)
        closed.set()

    started = time.monotonic()
    pool.submit(close_it)
    assert closed.wait(TIMEOUT)
    assert time.monotonic() - started < TIMEOUT / 2
    wait_until(lambda: pool.threads == [])


def test_a_bounded_pool_runs_tasks_in_line_on_its_threads() -> None:
    """With max_threads, tasks past the bound wait for a busy thread to take them."""
    pool = ElasticPool(NAME, max_threads=2)
    release = threading.Event()
    ran: list[int] = []
    done = threading.Semaphore(0)

    def task(n: int) -> None:
        release.wait(TIMEOUT)
        ran.append(n)
        done.release()

    for n in range(5):
        pool.submit(lambda n=n: task(n))  # type: ignore[misc]
    assert len(pool.threads) == 2 and pool.idle == 0  # three wait in line, no third thread
    release.set()
    for _ in range(5):
        assert done.acquire(timeout=TIMEOUT)
    assert sorted(ran) == [0, 1, 2, 3, 4] and len(pool.threads) == 2
    wait_until(lambda: pool.idle == 2)  # both went idle once the line was empty
    pool.submit(lambda: task(5))  # an idle thread takes it: no line
    assert done.acquire(timeout=TIMEOUT) and ran[-1] == 5
    pool.close(TIMEOUT)
    assert pool.threads == []


def test_closing_a_bounded_pool_drops_what_waits_in_line() -> None:
    pool = ElasticPool(NAME, max_threads=1)
    started, release = threading.Event(), threading.Event()
    ran: list[str] = []

    def busy() -> None:
        started.set()
        release.wait(TIMEOUT)
        ran.append("busy")

    pool.submit(busy)
    assert started.wait(TIMEOUT)
    pool.submit(lambda: ran.append("in line"))
    closer = threading.Thread(target=pool.close, args=(TIMEOUT,))
    closer.start()
    wait_until(lambda: pool.closed)
    release.set()
    closer.join(TIMEOUT)
    assert not closer.is_alive() and pool.threads == []
    assert ran == ["busy"]  # the task in line never ran


def test_a_bound_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="max_threads"):
        ElasticPool(NAME, max_threads=0)
