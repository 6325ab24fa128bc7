// Peer harness: plainjob (better-sqlite3) for the Gleaner job-queue benchmark.
//
//   node bench.mjs <NORMAL|FULL> <workers:1|4> [n=100000] [--drain-only]
//
// Prints one JSON line per measurement on stdout:
//   {"peer":"plainjob","sync":..,"op":"enqueue_one|enqueue_batch|drain",
//    "workers":..,"n":..,"seconds":..,"per_sec":..,"peak_rss_mb":..}
//
// Every measured operation runs in its own freshly forked process, so the
// peak RSS (process.resourceUsage().maxRSS) belongs to that operation only.
//   enqueue_one   : queue.add() N times, each its own autocommit transaction.
//   enqueue_batch : queue.addMany() once: plainjob's bulk API, which inserts
//                   all N rows inside one better-sqlite3 transaction.
//   drain         : W forked worker processes, each with its own connection
//                   and its own defineWorker() loop -- the multi-process
//                   pattern plainjob's README prescribes (a plainjob worker
//                   runs one job at a time; there is no in-process
//                   concurrency option). W=1 is one such process.
//                   peak_rss_mb = SUM of the worker processes' maxRSS
//                   (peak_rss_mb_max_proc = the largest single one).
// The drain is timed from the parent's "go" to the moment every worker has
// reported that it has no pending job left. The workers count onCompleted /
// onFailed callbacks; these must add up to N and match the db's Done / Failed
// rows (none may be left pending or processing). A run in which plainjob
// marked some no-op jobs Failed, or a worker process crashed, is still
// reported, with ok=false and the counts (see the drain line below).
//
// Durability: plainjob's defineQueue() itself runs
//   journal_mode = WAL; synchronous = 1 (NORMAL); busy_timeout = 5000
// on every connection it is given, so for FULL the harness re-sets
// `synchronous` on each connection right after defineQueue() and reads it
// back to verify.

import { fork } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { better, defineQueue, defineWorker, JobStatus } from "plainjob";

const SELF = fileURLToPath(import.meta.url);
const JOB_TYPE = "noop";
const SYNC_CODE = { OFF: 0, NORMAL: 1, FULL: 2, EXTRA: 3 };

// plainjob's default logger is `console`, and its worker calls log.debug()
// several times per job -- console.debug writes to stdout. A silent logger is
// what any real deployment passes; errors are still surfaced.
const quietLogger = {
  debug() {},
  info() {},
  warn(...a) { console.error(...a); },
  error(...a) { console.error(...a); },
};

const now = () => performance.now();
const maxRssMb = () => process.resourceUsage().maxRSS / 1024; // maxRSS is KiB

function openQueue(dbPath, sync) {
  const db = new Database(dbPath);
  const queue = defineQueue({ connection: better(db), logger: quietLogger });
  db.pragma(`synchronous = ${sync}`);
  const got = db.pragma("synchronous", { simple: true });
  const mode = db.pragma("journal_mode", { simple: true });
  if (got !== SYNC_CODE[sync] || mode !== "wal") {
    throw new Error(`pragma check failed: synchronous=${got} journal_mode=${mode}`);
  }
  return { db, queue };
}

// ---------------------------------------------------------------- children

async function childEnqueue(kind, dbPath, sync, n) {
  const { queue } = openQueue(dbPath, sync);
  let seconds;
  if (kind === "one") {
    const t0 = now();
    for (let i = 0; i < n; i++) queue.add(JOB_TYPE, null);
    seconds = (now() - t0) / 1000;
  } else {
    const payload = new Array(n).fill(null);
    const t0 = now();
    const { ids } = queue.addMany(JOB_TYPE, payload);
    seconds = (now() - t0) / 1000;
    if (ids.length !== n) throw new Error(`addMany returned ${ids.length} ids`);
  }
  const count = queue.countJobs({ type: JOB_TYPE, status: JobStatus.Pending });
  if (count !== n) throw new Error(`expected ${n} pending jobs, found ${count}`);
  queue.close();
  process.send({ seconds, rss: maxRssMb() });
}

async function childWorker(dbPath, sync) {
  const { queue } = openQueue(dbPath, sync);
  let completed = 0;
  let failed = 0;
  const errors = {};
  let worker;
  // Observe (not replace) the queue's own claim call: when it finds no
  // pending job, every job has been claimed (all were enqueued before the
  // drain started), so this worker is finished once its current job is done.
  const claim = queue.getAndMarkJobAsProcessing;
  queue.getAndMarkJobAsProcessing = (type) => {
    const r = claim(type);
    if (!r) void worker.stop();
    return r;
  };
  worker = defineWorker(
    JOB_TYPE,
    () => {}, // the no-op job
    {
      queue,
      logger: quietLogger,
      onCompleted: () => { completed++; },
      onFailed: (_job, error) => {
        failed++;
        // plainjob stores "<stack>\n<message>"; keep the first line.
        const first = String(error).split("\n")[0];
        errors[first] = (errors[first] || 0) + 1;
      },
    },
  );
  await new Promise((resolve) => {
    process.once("message", (m) => { if (m === "go") resolve(); });
    process.send({ ready: true });
  });
  let crash = null;
  try {
    await worker.start();
  } catch (e) {
    // plainjob's worker loop rethrows errors from its own claim transactions
    // (e.g. SQLITE_BUSY after its 5 s busy_timeout); its README's worker
    // script then exits the process. Report it and exit non-zero likewise.
    crash = String(e).split("\n")[0];
  }
  const rss = maxRssMb();
  process.send({ done: true, completed, failed, errors, crash, rss }, () => {
    if (crash) process.exit(1);
    queue.close();
  });
}

// ------------------------------------------------------------------ parent

function runChild(args, onMessage) {
  return new Promise((resolve, reject) => {
    const cp = fork(SELF, args, { stdio: ["ignore", "inherit", "inherit", "ipc"] });
    let last;
    cp.on("message", (m) => { last = m; if (onMessage) onMessage(m, cp); });
    cp.on("error", reject);
    cp.on("exit", (code) => (code === 0 ? resolve(last) : reject(new Error(`child ${args[0]} exited ${code}`))));
  });
}

function emit(o) {
  // loadavg1: 1-minute load average when the line is written (noise marker).
  process.stdout.write(JSON.stringify({ ...o, loadavg1: loadavg()[0] }) + "\n");
}

async function drain(dbPath, sync, workers, n) {
  const children = [];
  let ready = 0;
  let t0 = 0;
  let t1 = 0;
  let doneCount = 0;
  const results = [];
  let goResolve;
  const allReady = new Promise((r) => { goResolve = r; });
  const exits = [];
  for (let i = 0; i < workers; i++) {
    exits.push(runChild(["worker", dbPath, sync], (m, cp) => {
      if (m.ready) {
        children.push(cp);
        if (++ready === workers) goResolve();
      } else if (m.done) {
        results.push(m);
        if (++doneCount === workers) t1 = now();
      }
    }));
  }
  await allReady;
  t0 = now();
  for (const cp of children) cp.send("go");
  // Wait for every worker process, crashed or not, before looking at the db.
  await Promise.allSettled(exits);
  if (results.length !== workers) throw new Error(`drain: only ${results.length} of ${workers} workers reported`);
  const seconds = (t1 - t0) / 1000;

  // Every job must have reached a terminal state through the workers, and
  // the db must agree with the workers' own callback counts.
  const completed = results.reduce((a, m) => a + m.completed, 0);
  const failed = results.reduce((a, m) => a + m.failed, 0);
  const errors = {};
  const count = (k) => { errors[k] = (errors[k] || 0) + 1; };
  for (const m of results) {
    for (const [k, v] of Object.entries(m.errors)) errors[k] = (errors[k] || 0) + v;
  }
  const crashed = results.filter((m) => m.crash);
  for (const m of crashed) count(`worker process crashed: ${m.crash}`);
  const db = new Database(dbPath, { readonly: true });
  const rows = db.prepare("SELECT status, COUNT(*) c FROM plainjob_jobs GROUP BY status").all();
  db.close();
  const byStatus = Object.fromEntries(rows.map((r) => [r.status, r.c]));
  const st = (s) => byStatus[s] || 0;
  if (st(JobStatus.Done) !== completed || st(JobStatus.Failed) !== failed) {
    throw new Error(`drain: workers counted ${completed} done + ${failed} failed, ` +
                    `db has ${JSON.stringify(byStatus)}`);
  }
  if (!crashed.length && completed + failed !== n) {
    throw new Error(`drain: ${completed + failed} of ${n} jobs finished, no worker crashed`);
  }
  if (failed || crashed.length) {
    console.error(`plainjob drain: NOT OK: ${JSON.stringify(errors)}; db by status ${JSON.stringify(byStatus)}`);
  }
  const rssList = results.map((m) => m.rss);
  return {
    seconds,
    completed,
    failed,
    errors,
    crashed: crashed.length,
    pending: st(JobStatus.Pending),
    processing: st(JobStatus.Processing),
    rssSum: rssList.reduce((a, b) => a + b, 0),
    rssMax: Math.max(...rssList),
  };
}

async function main() {
  const [role, ...rest] = process.argv.slice(2);
  if (role === "enqueue-one" || role === "enqueue-batch") {
    const [dbPath, sync, n] = rest;
    return childEnqueue(role === "enqueue-one" ? "one" : "batch", dbPath, sync, Number(n));
  }
  if (role === "worker") {
    const [dbPath, sync] = rest;
    return childWorker(dbPath, sync);
  }

  const args = process.argv.slice(2);
  const drainOnly = args.includes("--drain-only");
  const pos = args.filter((a) => !a.startsWith("--"));
  const sync = (pos[0] || "NORMAL").toUpperCase();
  const workers = Number(pos[1] || 1);
  const n = Number(pos[2] || 100000);
  if (!(sync in SYNC_CODE) || !(workers >= 1) || !(n >= 1)) {
    console.error("usage: node bench.mjs <NORMAL|FULL> <workers> [n] [--drain-only]");
    process.exit(2);
  }
  const base = { peer: "plainjob", sync };
  const dir = mkdtempSync(join(tmpdir(), "gleaner-bench-plainjob-"));
  try {
    if (!drainOnly) {
      const one = await runChild(["enqueue-one", join(dir, "one.db"), sync, String(n)]);
      emit({ ...base, op: "enqueue_one", workers: 1, n, seconds: one.seconds,
             per_sec: n / one.seconds, peak_rss_mb: one.rss });
    }
    // The batch-enqueued db is also the one the drain empties.
    const dbPath = join(dir, "drain.db");
    const batch = await runChild(["enqueue-batch", dbPath, sync, String(n)]);
    if (!drainOnly) {
      emit({ ...base, op: "enqueue_batch", workers: 1, n, seconds: batch.seconds,
             per_sec: n / batch.seconds, peak_rss_mb: batch.rss });
    }
    const d = await drain(dbPath, sync, workers, n);
    // completed = jobs plainjob marked Done; failed = jobs it marked Failed
    // (only possible if its own bookkeeping throws -- the handler is a no-op);
    // crashed_workers = worker processes whose plainjob loop threw. ok=false
    // when any of those happened: then per_sec is completed jobs / seconds and
    // the run is not a clean drain (pending/processing = jobs left behind).
    const ok = d.failed === 0 && d.crashed === 0 && d.completed === n;
    emit({ ...base, op: "drain", workers, n, seconds: d.seconds,
           per_sec: d.completed / d.seconds,
           peak_rss_mb: d.rssSum, peak_rss_mb_max_proc: d.rssMax,
           completed: d.completed, failed: d.failed, ok,
           ...(ok ? {} : { crashed_workers: d.crashed, pending: d.pending,
                           processing: d.processing, errors: d.errors }) });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
