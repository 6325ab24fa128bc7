// Peer queues on PostgreSQL for BENCHMARKS.md §14: graphile-worker and pg-boss draining N
// no-op jobs with 1 and 4 worker processes, 4 jobs in flight per process (Gleaner's default
// concurrency), on the same server as Gleaner's `queue_pg` bench.
//
//   node drain.js PEER URL N WORKERS      (PEER: graphile | pgboss)
//
// Makes a database of its own on the server at URL, enqueues N jobs in one call, starts
// WORKERS child processes, and times until every job is done. Prints one JSON line.
"use strict";
const { Client } = require("pg");
const { fork } = require("child_process");

const [peer, url, nText, workersText] = process.argv.slice(2);
const role = process.env.PEER_ROLE;

function dbUrl(base, name) {
  const u = new URL(base);
  u.pathname = "/" + name;
  return u.toString();
}

async function sql(url, text, args) {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    return await c.query(text, args);
  } finally {
    await c.end();
  }
}

async function work(url) {
  if (peer === "graphile") {
    const { run, Logger } = require("graphile-worker");
    const runner = await run({
      // A line per job would cost more than the job: warnings and errors only.
      logger: new Logger(() => (level, message) => {
        if (level === "error" || level === "warning") console.error(message);
      }),
      connectionString: url,
      concurrency: 4,
      noHandleSignals: true,
      pollInterval: 1000,
      taskList: { noop: async () => {} },
    });
    process.on("message", async () => {
      await runner.stop();
      process.exit(0);
    });
  } else {
    const PgBoss = require("pg-boss");
    const boss = new PgBoss({ connectionString: url, supervise: false, schedule: false });
    boss.on("error", (e) => console.error(e));
    await boss.start();
    // pg-boss waits its polling interval (at least 0.5 s) after every fetch, found jobs or not, so
    // its throughput is the batch size per interval: PGBOSS_BATCH (default 4, the parity).
    const batchSize = Number(process.env.PGBOSS_BATCH || 4);
    await boss.work("noop", { batchSize, pollingIntervalSeconds: 0.5 }, async () => {});
    process.on("message", async () => {
      await boss.stop({ graceful: false, wait: false });
      process.exit(0);
    });
  }
  process.send("ready");
}

async function left(url) {
  if (peer === "graphile") {
    const r = await sql(url, "SELECT count(*)::int AS n FROM graphile_worker._private_jobs");
    return r.rows[0].n;
  }
  const r = await sql(url, "SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'noop' AND state < 'completed'");
  return r.rows[0].n;
}

async function main() {
  if (role === "worker") return work(process.env.PEER_URL);
  const n = Number(nText);
  const workers = Number(workersText);
  const name = `peer_${peer}_${process.pid}_${Date.now()}`;
  await sql(url, `CREATE DATABASE ${name}`);
  const url2 = dbUrl(url, name);
  let t0 = Date.now();
  if (peer === "graphile") {
    const { runMigrations } = require("graphile-worker");
    await runMigrations({ connectionString: url2 });
    t0 = Date.now();
    // graphile-worker's own bulk insert, 10,000 jobs a call.
    for (let i = 0; i < n; i += 10000) {
      await sql(
        url2,
        "SELECT graphile_worker.add_jobs(array(SELECT ('noop', json_build_object('i', g), NULL, NULL, NULL, NULL, NULL, NULL)::graphile_worker.job_spec FROM generate_series($1::int, $2::int) g))",
        [i, Math.min(n, i + 10000) - 1],
      );
    }
  } else {
    const PgBoss = require("pg-boss");
    const boss = new PgBoss({ connectionString: url2, supervise: false, schedule: false });
    await boss.start();
    await boss.createQueue("noop");
    t0 = Date.now();
    for (let i = 0; i < n; i += 10000) {
      const jobs = [];
      for (let j = i; j < Math.min(n, i + 10000); j++) jobs.push({ name: "noop", data: { i: j } });
      await boss.insert(jobs);
    }
    await boss.stop({ graceful: false, wait: false });
  }
  const enqueueSecs = (Date.now() - t0) / 1000;
  console.log(JSON.stringify({ peer, op: "enqueue_batch", workers: 1, n, secs: enqueueSecs, jobs_per_sec: Math.round(n / enqueueSecs) }));
  const children = [];
  for (let w = 0; w < workers; w++) {
    const c = fork(__filename, [peer], { env: { ...process.env, PEER_ROLE: "worker", PEER_URL: url2 } });
    await new Promise((ok) => c.once("message", ok));
    children.push(c);
  }
  // Timed from the moment every worker is ready (connected, listening).
  const start = Date.now();
  // The count scans the peer's job table, so it is asked once a second while many jobs are
  // left and every 50 ms near the end: asked every 50 ms throughout, it cost graphile-worker
  // 80-170 µs of server CPU a job (BENCHMARKS.md §14) and slowed its drain.
  for (let n = await left(url2); n > 0; n = await left(url2)) {
    await new Promise((ok) => setTimeout(ok, n > 2000 ? 1000 : 50));
  }
  const secs = (Date.now() - start) / 1000;
  console.log(JSON.stringify({ peer, op: "drain", workers, n, secs, jobs_per_sec: Math.round(n / secs), inflight: 4 }));
  for (const c of children) c.send("stop");
  await Promise.all(children.map((c) => new Promise((ok) => c.once("exit", ok))));
  await sql(url, `DROP DATABASE ${name}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
