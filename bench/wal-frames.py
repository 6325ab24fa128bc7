"""Which B-trees a drain writes to the WAL, per job: a replica of the drain's statements.

    python3 bench/wal-frames.py DUE PAUSED LATER
    python3 bench/wal-frames.py 9000 0 0              # a 10k-row queue
    python3 bench/wal-frames.py 400000 100000 500000  # the 1M-job queue of the claim bench

The engine itself is measured by the queue bench's `wal_frames` op
(`GLEANER_BENCH_CHILD=NORMAL,wal_frames,1 GLEANER_BENCH_N=100000 <queue bench binary>`). This
script is the model that came before it: it claims and completes in separate transactions,
where the engine does both in one.

Builds the schema from src-tauri/migrations, queues DUE jobs over 1,000 hosts (after PAUSED
jobs of one host) in one batch and LATER jobs due in an hour in another, checkpoints, turns
automatic checkpoints off, then runs 200 steps of 32 claims (in lane order, one per host)
and their completions with the engine's statements. Finally it reads the page number of every
WAL frame and maps it to its table or index with the dbstat virtual table. Uses Python's own
SQLite, so the figures are a model of the engine's writes, not a measurement of its speed.
"""
import sqlite3,glob,os,struct,sys,collections,time
N_DUE=int(sys.argv[1]); N_PAUSED=int(sys.argv[2]); N_LATER=int(sys.argv[3]); HOSTS=1000
here=os.path.dirname(os.path.abspath(__file__))
work=os.path.join(here,'results'); os.makedirs(work,exist_ok=True)
path=os.path.join(work,'wal-frames.db')
for f in glob.glob(path+'*'): os.remove(f)
c=sqlite3.connect(path, isolation_level=None)
c.execute('PRAGMA journal_mode=WAL'); c.execute('PRAGMA synchronous=NORMAL')
for f in sorted(glob.glob(os.path.join(here,'..','src-tauri','migrations','*.sql'))):
    c.executescript(open(f).read())
c.execute('PRAGMA foreign_keys=ON')
now=1000000
def enqueue(batch, rows, run_at):
    c.execute('BEGIN')
    for url,host in rows:
        c.execute("INSERT INTO jobs (url,url_key,host,batch_id,status,run_at,max_retries,budget_started_at,created_at,updated_at) VALUES (?,?,?,?, 'pending',?,5,?,?,?)",(url,url,host,batch,run_at,now,now,now))
    # The lanes, once per host, as Store::enqueue makes them (migration 0011).
    c.execute("INSERT OR IGNORE INTO lanes (batch_id, host, seq, cur_run_at, cur_id) SELECT ?1, host, "
              "(SELECT coalesce(max(seq), 0) FROM lanes WHERE batch_id = ?1) + row_number() OVER (ORDER BY min(id)), ?2, min(id) "
              "FROM jobs WHERE batch_id = ?1 GROUP BY host", (batch, run_at))
    c.execute('COMMIT')
c.execute("INSERT INTO batches (id,name,source,created_at) VALUES (1,'head','b',?),(2,'later','b',?)",(now,now))
enqueue(1, [(f'https://paused.example/{i}','paused.example') for i in range(N_PAUSED)], now)
enqueue(1, [(f'https://h{i%HOSTS}.example/due/{i}',f'h{i%HOSTS}.example') for i in range(N_DUE)], now)
enqueue(2, [(f'https://h{i%HOSTS}.example/later/{i}',f'h{i%HOSTS}.example') for i in range(N_LATER)], now+3600000)
c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
c.execute("PRAGMA wal_autocheckpoint=0")
lanes=[r[0] for r in c.execute("SELECT host FROM lanes WHERE batch_id=1 AND host!='paused.example' ORDER BY seq")]
li=0; steps=200; t=time.time()
for s in range(steps):
    c.execute('BEGIN IMMEDIATE')
    claimed=[]
    for k in range(32):
        h=lanes[li%len(lanes)]; li+=1
        cur=c.execute("SELECT cur_run_at, cur_id FROM lanes WHERE batch_id = 1 AND host = ?",(h,)).fetchone()
        r=c.execute("SELECT id, run_at FROM jobs INDEXED BY jobs_lane WHERE batch_id = 1 AND host = ? AND run_at = ? AND id >= ? AND status = 'pending' ORDER BY id LIMIT 1",(h,)+cur).fetchone() \
          or c.execute("SELECT id, run_at FROM jobs INDEXED BY jobs_lane WHERE batch_id = 1 AND host = ? AND run_at > ? AND status = 'pending' ORDER BY run_at, id LIMIT 1",(h,cur[0])).fetchone()
        c.execute("UPDATE lanes SET cur_run_at = ?3, cur_id = ?4 WHERE batch_id = ?1 AND host = ?2",(1,h,r[1],r[0]+1))
        c.execute("UPDATE jobs SET status='running', lease_owner='w', lease_until=?, attempts=attempts+1, updated_at=?, attempt_started_at=? WHERE id=? AND status='pending'",(now+600000,now,now,r[0]))
        claimed.append(r[0])
    c.execute("UPDATE batches SET served_seq = served_seq+1 WHERE id=1")
    c.execute('COMMIT')
    c.execute('BEGIN IMMEDIATE')
    for jid in claimed:
        c.execute("UPDATE jobs SET status='done', lease_owner=NULL, finished_by=lease_owner, lease_until=NULL, final_url=url, http_status=200, updated_at=?, finished_at=? WHERE id=? AND status='running' AND lease_owner='w'",(now,now,jid))
    c.execute('COMMIT')
el=time.time()-t
# parse WAL
data=open(path+'-wal','rb').read()
ps=struct.unpack('>I',data[8:12])[0]
frames=[]; off=32
while off+24+ps<=len(data):
    pg=struct.unpack('>I',data[off:off+4])[0]; frames.append(pg); off+=24+ps
owner={r[1]:r[0] for r in c.execute("SELECT name, pageno FROM dbstat")}
cnt=collections.Counter(owner.get(p,'?free') for p in frames)
print(f"{len(frames)} frames over {steps} steps ({2*steps} commits) = {len(frames)/steps/32:.2f} per job; {el:.2f}s")
for k,v in cnt.most_common(): print(f"  {v/steps/32:5.2f}/job {k}")
