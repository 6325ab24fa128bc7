"""Peer harness: huey SqliteHuey for the Gleaner job-queue benchmark.

    python bench.py <NORMAL|FULL> <workers:1|4> [n=100000] [--drain-only]

Prints one JSON line per measurement on stdout:
    {"peer":"huey","sync":..,"op":..,"workers":..,"n":..,"seconds":..,
     "per_sec":..,"peak_rss_mb":..}

Every measured operation runs in its own fresh interpreter (subprocess of
this script), so peak_rss_mb (getrusage ru_maxrss) belongs to that operation.

  enqueue_one    : call the no-op task N times -> huey.enqueue() -> one
                   SqliteStorage.enqueue() each, i.e. one BEGIN EXCLUSIVE ..
                   COMMIT per job.
  enqueue_batch  : huey has no batched enqueue: its only bulk API,
                   TaskWrapper.map(), is a list comprehension over
                   huey.enqueue(), and SqliteStorage.enqueue() always opens its
                   own BEGIN EXCLUSIVE, so it cannot be wrapped in an outer
                   transaction. This row is map() -- huey's bulk API, still one
                   transaction per job.
  enqueue_batch_1tx (extra, NOT a huey API): the same messages
                   (huey.serialize_task) inserted with huey's own INSERT
                   statement inside ONE transaction opened with huey's own
                   storage.db(commit=True) context. Shows what huey's schema
                   costs when batched; huey users cannot do this without
                   reaching into the storage.
  drain          : huey's real consumer (huey.consumer.Consumer, the engine
                   behind huey_consumer) with workers=W thread workers
                   (huey's default worker_type) in this process. Timed from
                   Consumer.start() until the SIGNAL_COMPLETE receiver has
                   counted N completions; then stop(graceful=True), and the
                   queue is checked empty with no SIGNAL_ERROR.

Durability: SqliteStorage sets journal_mode from its `journal_mode` argument
(default 'wal'), but its only synchronous knob is `fsync` (True -> 2 FULL,
False -> 0 OFF, None -> SQLite default); NORMAL cannot be asked for. So the
harness subclasses SqliteStorage and sets `pragma synchronous` on every
connection it creates, and reads both pragmas back.
"""
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from huey import SqliteHuey
from huey import signals as S
from huey.consumer import Consumer
from huey.storage import SqliteStorage

SYNC_CODE = {'OFF': 0, 'NORMAL': 1, 'FULL': 2, 'EXTRA': 3}


def make_huey(db_path, sync):
    class BenchSqliteStorage(SqliteStorage):
        def _create_connection(self):
            conn = super()._create_connection()
            conn.execute('pragma synchronous=%s' % sync)
            got = conn.execute('pragma synchronous').fetchone()[0]
            mode = conn.execute('pragma journal_mode').fetchone()[0]
            if got != SYNC_CODE[sync] or mode != 'wal':
                raise RuntimeError('pragma check failed: synchronous=%s '
                                   'journal_mode=%s' % (got, mode))
            return conn

    class BenchHuey(SqliteHuey):
        storage_class = BenchSqliteStorage

    huey = BenchHuey('bench', filename=db_path, journal_mode='wal')

    @huey.task()
    def noop():
        pass

    return huey, noop


def max_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB


# ------------------------------------------------------------ child roles

def child_enqueue(kind, db_path, sync, n):
    huey, noop = make_huey(db_path, sync)
    if kind == 'one':
        t0 = time.perf_counter()
        for _ in range(n):
            noop()
        seconds = time.perf_counter() - t0
    elif kind == 'map':
        args = [()] * n
        t0 = time.perf_counter()
        noop.map(args)
        seconds = time.perf_counter() - t0
    elif kind == '1tx':
        storage = huey.storage
        sql = 'insert into task (queue, data, priority) values (?, ?, ?)'
        t0 = time.perf_counter()
        with storage.db(commit=True) as curs:
            for _ in range(n):
                msg = huey.serialize_task(noop.s())
                curs.execute(sql, (storage.name, storage.to_blob(msg), 0))
        seconds = time.perf_counter() - t0
    else:
        raise ValueError(kind)
    size = huey.pending_count()
    if size != n:
        raise RuntimeError('expected %d queued tasks, found %d' % (n, size))
    huey.storage.close()
    return {'seconds': seconds, 'rss': max_rss_mb()}


def child_drain(db_path, sync, workers, n):
    huey, noop = make_huey(db_path, sync)
    if huey.pending_count() != n:
        raise RuntimeError('drain: db does not hold %d tasks' % n)
    lock = threading.Lock()
    state = {'done': 0, 'errors': 0, 't_end': None}
    finished = threading.Event()

    @huey.signal(S.SIGNAL_COMPLETE)
    def on_complete(signal, task):
        with lock:
            state['done'] += 1
            if state['done'] == n:
                state['t_end'] = time.perf_counter()
                finished.set()

    @huey.signal(S.SIGNAL_ERROR)
    def on_error(signal, task, exc=None):
        with lock:
            state['errors'] += 1

    consumer = Consumer(huey, workers=workers, periodic=False,
                        check_worker_health=False)
    t0 = time.perf_counter()
    consumer.start()
    # Wait for the N-th completion; give up only if progress stalls.
    last, last_change = -1, time.monotonic()
    while not finished.wait(timeout=1.0):
        if state['done'] + state['errors'] != last:
            last, last_change = state['done'] + state['errors'], time.monotonic()
        elif time.monotonic() - last_change > 120:
            consumer.stop()
            raise RuntimeError('drain: stalled after %d completions, %d errors'
                               % (state['done'], state['errors']))
    consumer.stop(graceful=True)
    left = huey.pending_count()
    if state['done'] != n or state['errors'] or left:
        raise RuntimeError('drain: %d completed, %d errors, %d left in queue'
                           % (state['done'], state['errors'], left))
    huey.storage.close()
    return {'seconds': state['t_end'] - t0, 'rss': max_rss_mb()}


# ----------------------------------------------------------------- parent

def run_child(*args):
    out = subprocess.run([sys.executable, os.path.abspath(__file__),
                          '--child'] + [str(a) for a in args],
                         stdout=subprocess.PIPE, check=True)
    return json.loads(out.stdout.decode().strip().splitlines()[-1])


def emit(obj):
    # loadavg1: 1-minute load average when the line is written (noise marker).
    obj['loadavg1'] = os.getloadavg()[0]
    sys.stdout.write(json.dumps(obj) + '\n')
    sys.stdout.flush()


def main(argv):
    if argv and argv[0] == '--child':
        role, db_path, sync, n = argv[1], argv[2], argv[3], int(argv[4])
        if role == 'drain':
            res = child_drain(db_path, sync, int(argv[5]), n)
        else:
            res = child_enqueue(role, db_path, sync, n)
        print(json.dumps(res))
        return 0

    drain_only = '--drain-only' in argv
    pos = [a for a in argv if not a.startswith('--')]
    sync = (pos[0] if pos else 'NORMAL').upper()
    workers = int(pos[1]) if len(pos) > 1 else 1
    n = int(pos[2]) if len(pos) > 2 else 100000
    if sync not in SYNC_CODE or workers < 1 or n < 1:
        print('usage: bench.py <NORMAL|FULL> <workers> [n] [--drain-only]',
              file=sys.stderr)
        return 2

    base = {'peer': 'huey', 'sync': sync}
    tmp = tempfile.mkdtemp(prefix='gleaner-bench-huey-')
    try:
        def line(op, w, res, **extra):
            emit(dict(base, op=op, workers=w, n=n, seconds=res['seconds'],
                      per_sec=n / res['seconds'], peak_rss_mb=res['rss'],
                      **extra))

        if not drain_only:
            line('enqueue_one', 1,
                 run_child('one', os.path.join(tmp, 'one.db'), sync, n))
            line('enqueue_batch', 1,
                 run_child('map', os.path.join(tmp, 'map.db'), sync, n),
                 note='Task.map(): huey bulk API, one transaction per job')
        # The single-transaction db is also the one the drain empties.
        db_path = os.path.join(tmp, 'drain.db')
        res = run_child('1tx', db_path, sync, n)
        if not drain_only:
            line('enqueue_batch_1tx', 1, res,
                 note='not a huey API: huey INSERT in one storage transaction')
        # The drain child raises unless exactly n SIGNAL_COMPLETE, 0 errors.
        line('drain', workers, run_child('drain', db_path, sync, n, workers),
             completed=n, failed=0, ok=True,
             note='huey Consumer, %d thread worker(s), one process' % workers)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
