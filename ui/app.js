// Gleaner's window. Loaded as an ES module from index.html (the CSP forbids inline scripts).
// Everything that comes from the backend or from fetched pages (URLs, titles, errors) is put on
// the page with textContent or as attribute values, never parsed as HTML. The one exception is
// the reader's text, rendered and sanitised in Rust (library.js).

import { $, call, copyText, el, isTextEntry, plural, say } from './common.js';
import { initExport } from './export.js';
import { initLibrary, libraryShown, readJob, refreshLibrary, resultsQuery } from './library.js';

// What each stage of a reference's resolution asked for, as the attempt history says it.
const STAGE_WORDS = {
  csl: 'metadata',
  landing: 'landing page',
  pdf: 'PDF',
  wayback: 'archive lookup',
  archived: 'archived copy',
};

// Words a person uses for the engine's error classes and attempt outcomes.
const CLASS_WORDS = {
  transient: 'temporary failure',
  rate_limited: 'rate limited',
  blocked: 'blocked page',
  fatal: 'permanent failure',
};
const OUTCOME_WORDS = {
  success: 'fetched',
  transient: 'temporary failure',
  rate_limited: 'rate limited',
  blocked: 'blocked page',
  fatal: 'permanent failure',
  interrupted: 'interrupted',
  cancelled: 'cancelled',
};

function classWords(job) {
  if (!job.error_class) return '';
  const words = CLASS_WORDS[job.error_class] ?? String(job.error_class);
  // The stored error ends with its class in brackets, which the words above already say.
  const error = String(job.error ?? '').replace(/ \((transient|rate_limited|blocked|fatal)\)$/, '');
  return error ? `${words}: ${error}` : words;
}

function humanSeconds(totalSeconds) {
  const s = Math.max(0, Math.round(totalSeconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) {
    const m = Math.floor(s / 60);
    const r = s % 60;
    return r ? `${m} min ${r} s` : `${m} min`;
  }
  const h = Math.floor(s / 3600);
  const m = Math.round((s % 3600) / 60);
  return m ? `${h} h ${m} min` : `${h} h`;
}

function countdown(iso) {
  const due = Date.parse(iso);
  if (Number.isNaN(due)) return '';
  const left = (due - Date.now()) / 1000;
  return left <= 0.5 ? 'due now' : `in ${humanSeconds(left)}`;
}

function localTime(iso) {
  if (!iso) return '';
  const t = new Date(iso);
  return Number.isNaN(t.getTime())
    ? String(iso)
    : t.toLocaleString([], { dateStyle: 'short', timeStyle: 'medium' });
}

// ---------------------------------------------------------------- header: counts and queue state

const counts = $('counts');
const queueState = $('queue-state');
const queueSpoken = $('queue-state-spoken');
const queuePlace = $('queue-place');
let wasStalled = false;
// The kind of the last stall seen, for the words said when it clears.
let stalledKind = null;

/** What the footer says when a stall of `kind` clears: what came back, in its own words. */
function goingOn(kind) {
  switch (kind) {
    case 'disk_full': return 'Going on: there is room again.';
    case 'library': return 'Going on: the library folder can be written again.';
    case 'database': return 'Going on: the database answers again.';
    default: return 'Going on: the problem has cleared.';
  }
}
const pauseButton = $('pause-queue');
let queuePaused = false;
let pausedHosts = new Set();

function renderStats(stats) {
  // "cancelled 0" says nothing, and at the window's default width a fifth chip pushes the
  // header onto two lines once counts reach tens of thousands. Cancelled jobs are only made
  // by hand, so the chip shows once there is one; the Status menu always offers them.
  const statuses = ['pending', 'running', 'done', 'dead', 'cancelled'].filter(
    (key) => key !== 'cancelled' || Number(stats[key] ?? 0) > 0,
  );
  const chips = statuses.map((key) => {
    const chip = el('button', `chip chip-${key}`);
    chip.type = 'button';
    chip.dataset.status = key;
    chip.append(el('span', 'chip-label', key), el('span', 'chip-count', Number(stats[key] ?? 0).toLocaleString()));
    chip.title = `Show ${key} jobs`;
    chip.setAttribute('aria-pressed', String(filters.status.value === key));
    chip.addEventListener('click', () => {
      filters.status.value = filters.status.value === key ? '' : key;
      reloadJobs();
    });
    return chip;
  });
  // A refresh while the queue runs must not take the keyboard's place on a chip.
  const focused = counts.contains(document.activeElement) ? document.activeElement.dataset.status : null;
  counts.replaceChildren(...chips);
  if (focused) chips.find((c) => c.dataset.status === focused)?.focus();
  queuePaused = Boolean(stats.queue_paused);
  pauseButton.textContent = queuePaused ? 'Resume queue' : 'Pause queue';
  pauseButton.setAttribute('aria-pressed', String(queuePaused));
  const place = stats.shared ? `Shared queue: ${String(stats.shared)}` : '';
  queuePlace.textContent = place;
  queuePlace.title = place ? 'This window works on the lab\'s shared PostgreSQL queue and library (Settings → Shared database).' : '';
  queuePlace.hidden = !place;
  // Each note as shown, and as spoken: without its countdown, so that the live region changes
  // only when the queue's state does.
  const notes = [];
  const note = (shown, spoken = shown) => notes.push({ shown, spoken });
  if (stats.notice) note(String(stats.notice));
  const stalled = stats.stalled;
  queueState.classList.toggle('queue-stalled', Boolean(stalled || stats.notice));
  if (stalled) {
    const reason = String(stalled.reason);
    note(
      `Paused: ${reason}. No fetch starts and no retry is spent; Gleaner checks again by itself (next ${countdown(stalled.next_probe_at)}) and goes on once this is fixed.`,
      `Paused: ${reason}. No fetch starts and no retry is spent; Gleaner checks again by itself and goes on once this is fixed.`,
    );
  }
  // The footer says it too, once, so it never keeps saying "Ready." over a stopped queue.
  if (Boolean(stalled) !== wasStalled) {
    wasStalled = Boolean(stalled);
    say(stalled ? `Paused: ${String(stalled.reason)}.` : goingOn(stalledKind), Boolean(stalled));
  }
  if (stalled) stalledKind = stalled.kind;
  if (stats.offline) {
    const offline = `Offline: ${String(stats.offline.reason)}. Nothing is fetched and no retries are spent until the network is back`;
    note(`${offline}; next check ${countdown(stats.offline.next_probe_at)}.`, `${offline}.`);
  }
  if (queuePaused) note('Queue paused: no fetch starts until you resume.');
  if (Number(stats.waiting) > 0 && stats.next_retry_at) {
    note(`${plural(Number(stats.waiting), 'job')} backing off, next ${countdown(stats.next_retry_at)}`, 'Jobs backing off before a retry');
  }
  const paused = Array.isArray(stats.paused_hosts) ? stats.paused_hosts : [];
  pausedHosts = new Set(paused.map((h) => String(h.host)));
  if (shown) renderHostPause(shown.job.host);
  if (paused.length > 0) {
    note(`Paused hosts: ${paused.map((h) => String(h.host)).join(', ')}`);
  }
  const throttled = Array.isArray(stats.throttled_hosts) ? stats.throttled_hosts : [];
  if (throttled.length > 0) {
    note(`Slowed after rate limits: ${throttled.map((h) => `${h.host} (${h.concurrency_limit})`).join(', ')}`);
  }
  queueState.textContent = notes.map((n) => n.shown).join(' · ');
  queueState.hidden = notes.length === 0;
  const spoken = notes.map((n) => n.spoken).join(' · ');
  if (queueSpoken.textContent !== spoken) queueSpoken.textContent = spoken;
}

async function refreshStats() {
  try {
    renderStats(await call('stats'));
  } catch (err) {
    say(String(err), true);
  }
}

pauseButton.addEventListener('click', async () => {
  try {
    const paused = await call('set_queue_paused', { paused: !queuePaused });
    say(paused ? 'Queue paused. Running fetches finish; no new one starts.' : 'Queue resumed.');
    refreshStats();
  } catch (err) {
    say(String(err), true);
  }
});

$('open-library').addEventListener('click', async () => {
  try {
    await call('open_library');
  } catch (err) {
    say(String(err), true);
  }
});

// ---------------------------------------------------------------- intake

const urls = $('urls');
const addButton = $('add');
const addSummary = $('add-summary');
const rejectedList = $('add-rejected');

const REJECTED_SHOWN = 300;
// A dropped file bigger than this goes to the backend in pieces of this size, each read from
// the file when it is sent: a 100 MB drop is never in the page's memory whole.
const PIECE_BYTES = 4 * 1024 * 1024;
// Reference files and bookmark exports are read as a whole (an entry spans lines), up to this.
const WHOLE_FILE_BYTES = 256 * 1024 * 1024;
const WHOLE_FILE = /\.(bib|bibtex|ris|nbib|medline|json|html?)$/i;

// What several calls of one add did, summed as one.
function mergeSummary(into, r) {
  into.batch = r.batch ?? into.batch;
  into.queued += r.queued;
  into.duplicates += r.duplicates;
  into.rejected += r.rejected;
  into.skipped += r.skipped;
  into.binary_files += r.binary_files;
  into.skipped_lines.push(...r.skipped_lines.slice(0, Math.max(0, REJECTED_SHOWN - into.skipped_lines.length)));
  into.refetch.push(...r.refetch);
  into.tagged += r.tagged;
  into.untagged_lines.push(...r.untagged_lines.slice(0, Math.max(0, REJECTED_SHOWN - into.untagged_lines.length)));
  into.rejected_lines.push(...r.rejected_lines.slice(0, Math.max(0, REJECTED_SHOWN - into.rejected_lines.length)));
  return into;
}

// A dropped file's text. UTF-16 when it starts with UTF-16's byte order mark (what Windows
// Notepad calls "Unicode"); else UTF-8, and a line that is not UTF-8 is read as Windows-1252
// (what a Western Windows program writes), as the backend reads a file it opens itself. A
// lenient UTF-8 decoder turned every accent of a Latin-1 .bib into U+FFFD before the backend
// could see the bytes.
async function utf16Of(file) {
  const head = new Uint8Array(await file.slice(0, 2).arrayBuffer());
  if (head[0] === 0xff && head[1] === 0xfe) return 'utf-16le';
  if (head[0] === 0xfe && head[1] === 0xff) return 'utf-16be';
  return null;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
const windows1252 = new TextDecoder('windows-1252');

// Bytes that end at a line break (or the file's end) as text, line by line where they are not
// all UTF-8.
function decodeLines(bytes) {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    const parts = [];
    for (let at = 0; at < bytes.length;) {
      const nl = bytes.indexOf(10, at);
      const end = nl < 0 ? bytes.length : nl + 1;
      const line = bytes.subarray(at, end);
      try {
        parts.push(strictUtf8.decode(line));
      } catch {
        parts.push(windows1252.decode(line));
      }
      at = end;
    }
    return parts.join('');
  }
}

async function fileText(file) {
  const utf16 = await utf16Of(file);
  const bytes = new Uint8Array(await file.arrayBuffer());
  return utf16 ? new TextDecoder(utf16).decode(bytes) : decodeLines(bytes);
}

// Whether a file's start shows a reference file or a bookmark export, which is read whole
// (an entry spans lines) whatever its name: the marks the backend's `files::kind_of` tells
// them by. A 5 MB RIS export named .txt was cut into pieces between its records.
function readsWhole(head) {
  const text = head.replace(/^\uFEFF/, '');
  if (/^\s*[[{]/.test(text)) return true;
  if (/^\s*(<!--[\s\S]*?-->\s*)*<!doctype\s+netscape-bookmark-file/i.test(text)) return true;
  const lines = text.split('\n').map((l) => l.trim()).filter((l) => l !== '').slice(0, 10);
  for (const line of lines) {
    if (/^TY {1,2}-(\s|$)/.test(line) || /^PMID- ?\S/.test(line)) return true;
    if (line.startsWith('%')) continue;
    if (/^@[A-Za-z][\w-]*\s*[{(]/.test(line)) return true;
    if (line.includes('://')) return false;
  }
  return false;
}

// Whether a dropped file goes to the backend whole: a small one always, a reference file by
// its name or its content up to the limit.
async function sentWhole(file) {
  if (file.size <= PIECE_BYTES) return true;
  if (file.size > WHOLE_FILE_BYTES) return false;
  if (WHOLE_FILE.test(file.name)) return true;
  const utf16 = await utf16Of(file);
  const head = await file.slice(0, 64 * 1024).arrayBuffer();
  return readsWhole(new TextDecoder(utf16 ?? 'utf-8').decode(head));
}

// Where a piece of text (UTF-16) or bytes ends: after its last line break, else whole (the
// backend cuts a line that long itself), so the page never gathers a file without line
// breaks; bytes without one end before a character's continuation bytes.
function pieceEnd(piece, last, isText) {
  if (last) return piece.length;
  const nl = isText ? piece.lastIndexOf('\n') : piece.lastIndexOf(10);
  if (nl >= 0) return nl + 1;
  let end = piece.length;
  if (!isText) while (end > piece.length - 4 && end > 0 && (piece[end - 1] & 0xc0) === 0x80) end -= 1;
  if (!isText && end > 0 && piece[end - 1] >= 0xc0) end -= 1;
  return end > 0 ? end : piece.length;
}

// Sends a big file piece by piece into the add's batch; a piece ends at a line break, so no
// line is cut in two. Later pieces say so: they are the file's text, not a paste to sniff.
async function addBigFile(file, source, summary) {
  const utf16 = await utf16Of(file);
  const decoder = utf16 ? new TextDecoder(utf16) : null;
  let carry = utf16 ? '' : new Uint8Array(0);
  for (let at = 0; at < file.size; at += PIECE_BYTES) {
    const read = await file.slice(at, at + PIECE_BYTES).arrayBuffer();
    const last = at + PIECE_BYTES >= file.size;
    let piece;
    if (decoder) {
      piece = carry + decoder.decode(read, { stream: !last });
    } else {
      piece = new Uint8Array(carry.length + read.byteLength);
      piece.set(carry);
      piece.set(new Uint8Array(read), carry.length);
    }
    const cut = pieceEnd(piece, last, Boolean(decoder));
    carry = piece.slice(cut);
    const text = decoder ? piece.slice(0, cut) : decodeLines(piece.subarray(0, cut));
    // The first piece goes as a file, so binary data is refused by name and the rest unread.
    const args = at === 0
      ? { text: '', source, files: [{ name: file.name, text }], batch: summary.batch }
      : { text, source, files: [], batch: summary.batch, piece: true };
    const r = await call('add_urls', args);
    mergeSummary(summary, r);
    if (at === 0 && r.binary_files > 0) return;
  }
  const rest = decoder ? carry : decodeLines(carry);
  if (rest) mergeSummary(summary, await call('add_urls', { text: rest, source, files: [], batch: summary.batch, piece: true }));
}

// Adds run one after another: a paste or a drop while one is running waits for it, and the
// Add button stays disabled until the last is done.
let addsWaiting = 0;
let lastAdd = Promise.resolve();
function addText(text, source, files = []) {
  if ((!text || !text.trim()) && files.length === 0) {
    addSummary.textContent = 'Nothing to add: the text holds no links.';
    return Promise.resolve();
  }
  addsWaiting += 1;
  addButton.disabled = true;
  const run = lastAdd.then(() => addNow(text, source, files)).finally(() => {
    addsWaiting -= 1;
    if (addsWaiting === 0) addButton.disabled = false;
  });
  lastAdd = run.catch(() => {});
  return run;
}

async function addNow(text, source, files) {
  try {
    const small = [];
    const big = [];
    for (const file of files) {
      if (await sentWhole(file)) small.push({ name: file.name, text: await fileText(file) });
      else big.push(file);
    }
    const result = await call('add_urls', { text: text ?? '', source, files: small, batch: null });
    for (const file of big) await addBigFile(file, source, result);
    addSummary.textContent = `${plural(result.queued, 'link')} queued, `
      + `${plural(result.duplicates, 'duplicate')}`
      + (result.tagged > 0 ? ` (${result.tagged.toLocaleString()} with new tags)` : '')
      + `, ${result.rejected.toLocaleString()} rejected`
      + (result.skipped > 0 ? `, ${result.skipped.toLocaleString()} skipped.` : '.');
    // A paste or drop on the Library view: the summary under the box is out of sight there.
    if (libraryShown()) say(addSummary.textContent);
    // Links already fetched can be fetched again; a changed page is kept as a new version.
    refetchIds = result.refetch;
    refetchButton.hidden = refetchIds.length === 0;
    refetchButton.textContent = refetchIds.length === 1
      ? 'Already fetched: fetch again'
      : `${refetchIds.length.toLocaleString()} already fetched: fetch again`;
    // A pasted word list can reject 100,000 lines; the backend sends the first few hundred,
    // which say what went wrong, and counts the rest.
    const shown = result.rejected_lines.slice(0, REJECTED_SHOWN).map((r) => el('li', '', `${r.input}: ${r.reason}`));
    if (result.rejected > shown.length) {
      shown.push(el('li', '', `… and ${(result.rejected - shown.length).toLocaleString()} more rejected lines.`));
    }
    // Skipped items (a bookmarklet, a smart folder) are said, but they are not errors.
    shown.push(...result.skipped_lines.slice(0, REJECTED_SHOWN).map((r) => el('li', 'skipped', `skipped ${r.input}: ${r.reason}`)));
    // A duplicate's new tags that could not be added (its job was being fetched) are said too.
    shown.push(...result.untagged_lines.slice(0, REJECTED_SHOWN).map((r) => el('li', 'skipped', `tags not added to ${r.input}: ${r.reason}`)));
    rejectedList.replaceChildren(...shown);
    // Only the box's own text leaves it: a Ctrl+V elsewhere keeps the draft there.
    if (source === 'paste' && result.rejected === 0 && urls.value === text) {
      urls.value = '';
    }
    refreshAll();
    loadFilters();
  } catch (err) {
    addSummary.textContent = String(err);
    if (libraryShown()) say(addSummary.textContent, true);
  }
}

const refetchButton = $('refetch');
let refetchIds = [];
refetchButton.addEventListener('click', async () => {
  // It hides itself: the focus goes back to the box the links came from.
  if (document.activeElement === refetchButton) urls.focus();
  refetchButton.hidden = true;
  await runAction('retry_jobs', { ids: refetchIds }, 'queued to be fetched again');
  refetchIds = [];
});

addButton.addEventListener('click', () => addText(urls.value, 'paste'));
urls.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
    event.preventDefault();
    addText(urls.value, 'paste');
  }
});

// Ctrl+V outside a text box adds what the clipboard holds.
document.addEventListener('paste', (event) => {
  if (isTextEntry(event.target)) return;
  const text = event.clipboardData?.getData('text/plain') ?? '';
  event.preventDefault();
  addText(text, 'paste');
});

document.addEventListener('dragover', (event) => {
  event.preventDefault();
  document.body.classList.add('dropping');
});
document.addEventListener('dragleave', (event) => {
  if (event.relatedTarget === null) document.body.classList.remove('dropping');
});
document.addEventListener('drop', async (event) => {
  event.preventDefault();
  document.body.classList.remove('dropping');
  const data = event.dataTransfer;
  if (!data) return;
  // Files go as they are, by name (one that holds binary data is rejected whole), and are
  // read as they are sent.
  const files = Array.from(data.files ?? []);
  const text = files.length === 0 ? (data.getData('text/uri-list') || data.getData('text/plain')) : '';
  addText(text, 'drop', files);
});

// ---------------------------------------------------------------- the job table

const filters = {
  status: $('filter-status'),
  host: $('filter-host'),
  batch: $('filter-batch'),
  search: $('filter-search'),
};
const rows = $('job-rows');
const tableSummary = $('table-summary');
const loadMore = $('load-more');
const empty = $('empty');
const PAGE = 100;
const PAGE_MAX = 500;

let jobs = [];
let total = 0;
let more = false;
let selectedId = null;
let generation = 0;
// How many rows the list shows: a page, more after each click on Load more.
let wanted = PAGE;

function currentQuery() {
  return {
    status: filters.status.value || null,
    host: filters.host.value.trim() || null,
    batch_id: filters.batch.value ? Number(filters.batch.value) : null,
    search: filters.search.value.trim() || null,
  };
}

function urlCell(url) {
  const cell = el('td', 'url');
  let parsed = null;
  try {
    parsed = new URL(url);
  } catch {
    parsed = null;
  }
  // A reference (doi:…, arxiv:…, pmid:…) parses as a URL without a host: it shows as written,
  // not as "doi://doi:…".
  if (!parsed || !parsed.host) {
    cell.textContent = url;
  } else {
    const rest = url.slice(url.indexOf(parsed.host) + parsed.host.length);
    cell.append(el('span', 'scheme', `${parsed.protocol}//`), el('strong', 'host', parsed.host), el('span', 'path', rest));
  }
  cell.title = url;
  return cell;
}

function nextRetryText(job) {
  if (job.status === 'pending' && job.retry_after) return countdown(job.retry_after);
  if (job.status === 'pending') return 'queued';
  return '';
}

function retriesText(job) {
  return `${job.retries_used} of ${job.max_retries} retries used`;
}

// A reference's first author and year, as the table shows them beside its title.
function citedBy(job) {
  const r = job.reference;
  if (!r) return '';
  const first = r.authors?.[0]?.split(',')[0]?.trim();
  const who = first && r.authors.length > 1 ? `${first} et al.` : first;
  return [who, r.issued?.slice(0, 4)].filter(Boolean).join(', ');
}

function titleCell(job) {
  const cell = el('td', 'title');
  cell.title = job.title ?? '';
  // Only the title gives way to the column's ellipsis: who and when, and the archive mark, stay
  // whole after it (a paper's title fills the column on its own and hid them).
  const line = el('div', 'title-line');
  line.append(el('span', 'title-text', job.title ?? ''));
  const by = citedBy(job);
  if (by) line.append(el('span', 'cited-by', ` · ${by}`));
  // The space is not drawn (the mark has a margin) but keeps "from" a word of its own in the
  // cell's text, as a screen reader reads it.
  if (fromArchive(job)) line.append(' ', el('span', 'from-archive', 'from the archive'));
  cell.append(line);
  return cell;
}

// A snapshot's time as a person reads it, the same wherever the window runs: 2013-09-19 04:46 UTC.
function snapshotTime(at) {
  return at ? at.replace('T', ' ').replace(/:\d\dZ$/, ' UTC') : 'an unknown time';
}

// A dead link saved from the Wayback Machine's copy.
function fromArchive(job) {
  return job.status === 'done' && job.stage === 'archived';
}

// Whether a done reference's document holds the paper itself; '' where that is no question
// (a plain page).
function fullTextWords(job) {
  if (job.status !== 'done') return '';
  if (job.stage === 'pdf') return 'yes, from the PDF (kept beside the document)';
  const reference = /^(doi|arxiv|pmid|pmcid):/.test(job.url) || job.stage === 'landing';
  return reference ? 'no: the landing page and its abstract are kept' : '';
}

function jobRow(job) {
  const tr = el('tr');
  tr.dataset.id = String(job.id);
  tr.tabIndex = job.id === selectedId ? 0 : -1;
  tr.setAttribute('aria-selected', String(job.id === selectedId));
  const status = el('td', 'status-cell');
  status.append(el('span', `badge badge-${job.status}`, job.status));
  // Tries made, not tries left: rate-limit waits and offline tries spend no retry, so a
  // count "of" the budget would overrun it. The budget is in the tooltip and the details.
  const attempts = el('td', 'num col-attempts', String(job.attempts));
  attempts.title = `${job.attempts} attempt${job.attempts === 1 ? '' : 's'}; ${retriesText(job)}`;
  const next = el('td', 'next col-next', nextRetryText(job));
  if (job.status === 'pending' && job.retry_after) next.dataset.due = job.retry_after;
  tr.append(status, urlCell(job.url), titleCell(job), attempts, next,
    el('td', 'error col-error', classWords(job)));
  return tr;
}

function renderJobs() {
  // Rows are rebuilt on every refresh; a keyboard user on a row must stay on it.
  const active = document.activeElement;
  const focusedId = active && active.parentElement === rows ? Number(active.dataset.id) : null;
  rows.replaceChildren(...jobs.map(jobRow));
  // With nothing selected, the first row holds the table's tab stop.
  if (rows.firstElementChild && !jobs.some((j) => j.id === selectedId)) rows.firstElementChild.tabIndex = 0;
  if (focusedId !== null) {
    const again = rows.querySelector(`tr[data-id="${focusedId}"]`) ?? rows.firstElementChild;
    if (again) {
      for (const tr of rows.children) tr.tabIndex = -1;
      again.tabIndex = 0;
      again.focus({ preventScroll: true });
    }
  }
  empty.hidden = jobs.length > 0;
  loadMore.hidden = !more || jobs.length >= PAGE_MAX;
  const shown = jobs.length.toLocaleString();
  const summaryText = total === 0
    ? ''
    : `Showing ${shown} of ${plural(total, 'job')}, newest first.`
      + (more && jobs.length >= PAGE_MAX ? ' Narrow the filters to see older ones.' : '');
  // Written only when it changes: it is not a live region (a draining queue changes it many
  // times a second); a screen reader reads it when asked.
  if (tableSummary.textContent !== summaryText) tableSummary.textContent = summaryText;
}

// Reads the first `count` rows under the current filters; a newer request supersedes older ones.
async function fetchJobs(count) {
  const mine = ++generation;
  const page = await call('list_jobs', { query: { ...currentQuery(), limit: Math.min(Math.max(count, PAGE), PAGE_MAX) } });
  if (mine !== generation) return;
  jobs = page.jobs;
  total = page.total;
  more = page.more;
  renderJobs();
}

// The table's count is spoken after a person changes the filters, not on every refresh.
async function reloadJobs() {
  wanted = PAGE;
  try {
    await fetchJobs(PAGE);
    $('table-spoken').textContent = tableSummary.textContent;
    document.querySelectorAll('.chip').forEach((chip) => {
      chip.setAttribute('aria-pressed', String(filters.status.value === chip.dataset.status));
    });
  } catch (err) {
    say(String(err), true);
  }
}

loadMore.addEventListener('click', async () => {
  if (jobs.length === 0) return;
  const before = jobs.length;
  // Kept apart from `jobs`: a refresh that overtakes this read asks for as many rows.
  wanted = Math.min(jobs.length + PAGE, PAGE_MAX);
  try {
    await fetchJobs(wanted);
  } catch (err) {
    say(String(err), true);
  }
  // The last page hides the button that had the focus: it goes to the first row it brought.
  if (loadMore.hidden && document.activeElement === loadMore) {
    focusRow(rows.children[before] ?? rows.lastElementChild);
  }
});

let searchTimer = null;
function reloadSoon() {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(reloadJobs, 150);
}
filters.status.addEventListener('change', reloadJobs);
filters.batch.addEventListener('change', reloadJobs);
// Typing waits for a pause; Enter or leaving the field applies at once.
for (const field of [filters.host, filters.search]) {
  field.addEventListener('input', reloadSoon);
  field.addEventListener('change', () => {
    clearTimeout(searchTimer);
    reloadJobs();
  });
}

async function loadFilters() {
  try {
    const f = await call('filters');
    $('host-options').replaceChildren(...f.hosts.map((h) => {
      const option = el('option');
      option.value = h.host;
      option.label = plural(Number(h.jobs), 'job');
      return option;
    }));
    const chosen = filters.batch.value;
    const all = el('option', '', 'All');
    all.value = '';
    filters.batch.replaceChildren(all, ...f.batches.map((b) => {
      const option = el('option', '', `${b.name} (${Number(b.jobs).toLocaleString()})`);
      option.value = String(b.id);
      return option;
    }));
    filters.batch.value = chosen;
  } catch (err) {
    say(String(err), true);
  }
}

$('retry-all-dead').addEventListener('click', () => runAction('retry_dead', { host: filters.host.value.trim() || null }, 'retried'));

// Selection and keyboard: the selected row holds the tab stop; arrows move it.
function select(id, focus = false) {
  // A delete armed for one job is never carried to another.
  if (id !== selectedId && deleteArmed) {
    deleteArmed = false;
    $('d-delete').textContent = 'Delete';
  }
  selectedId = id;
  for (const tr of rows.children) {
    const on = Number(tr.dataset.id) === id;
    tr.setAttribute('aria-selected', String(on));
    tr.tabIndex = on ? 0 : -1;
    if (on && focus) tr.focus();
  }
  showDetails(id);
}

rows.addEventListener('click', (event) => {
  const tr = event.target instanceof Element ? event.target.closest('tr') : null;
  if (tr?.dataset.id) select(Number(tr.dataset.id), true);
});

rows.addEventListener('keydown', (event) => {
  const list = Array.from(rows.children);
  if (list.length === 0) return;
  const at = list.findIndex((tr) => Number(tr.dataset.id) === selectedId);
  let to = null;
  if (event.key === 'ArrowDown') to = Math.min(list.length - 1, at + 1);
  else if (event.key === 'ArrowUp') to = Math.max(0, at - 1);
  else if (event.key === 'Home') to = 0;
  else if (event.key === 'End') to = list.length - 1;
  else if (event.key === 'Enter' && selectedId !== null) {
    $('d-retry').focus();
    event.preventDefault();
    return;
  }
  if (to !== null) {
    event.preventDefault();
    select(Number(list[to].dataset.id), true);
  }
});

// Countdowns tick without asking the backend.
setInterval(() => {
  for (const cell of document.querySelectorAll('[data-due]')) {
    cell.textContent = countdown(cell.dataset.due);
  }
}, 1000);

// ---------------------------------------------------------------- details pane

const details = $('details');
let shown = null;
let deleteArmed = false;

function setText(id, text) {
  $(id).textContent = text ?? '';
}

let detailsSeq = 0;
async function showDetails(id) {
  const mine = ++detailsSeq;
  if (id === null) {
    details.hidden = true;
    document.body.classList.remove('has-details');
    shown = null;
    return;
  }
  try {
    const d = await call('job_details', { id });
    // An older answer must not overwrite a newer one (a job's status moves on meanwhile).
    if (mine !== detailsSeq || selectedId !== id) return;
    shown = d;
    renderDetails(d);
  } catch (err) {
    if (mine !== detailsSeq || selectedId !== id) return;
    say(String(err), true);
    // Deleted by the CLI or another machine: its pane and its buttons go.
    if (String(err).endsWith('no longer exists.')) select(null);
  }
}

// A fact of the details pane, hidden with its label when there is nothing to say.
function setFact(id, text) {
  const dd = $(id);
  dd.textContent = text;
  dd.hidden = !text;
  if (dd.previousElementSibling) dd.previousElementSibling.hidden = !text;
}

function renderDetails(d) {
  const job = d.job;
  details.hidden = false;
  document.body.classList.add('has-details');
  setText('details-heading', `Job ${job.id}`);
  setText('d-title', job.title || '(no title yet)');
  setText('d-status', job.status);
  setText('d-url', job.url);
  setText('d-final', job.final_url ?? '');
  setText('d-batch', job.batch ?? '');
  // What a reference file or bookmark said; a plain link shows none of these rows.
  const r = job.reference ?? {};
  setFact('d-authors', (r.authors ?? []).join('; '));
  setFact('d-issued', r.issued ?? '');
  setFact('d-container', r.container_title ?? '');
  setFact('d-key', r.citation_key ?? '');
  setFact('d-tags', (r.tags ?? []).join(', '));
  setFact('d-full-text', fullTextWords(job));
  setFact('d-archived', fromArchive(job) ? `from the archive, as of ${snapshotTime(r.archived_at)}` : '');
  setText('d-attempts', String(job.attempts));
  setText('d-retries', `${job.retries_used} of ${job.max_retries} used`);
  const next = $('d-next');
  if (job.status === 'pending' && job.retry_after) {
    next.dataset.due = job.retry_after;
    next.textContent = countdown(job.retry_after);
  } else {
    delete next.dataset.due;
    next.textContent = job.status === 'pending' ? 'queued' : '';
  }
  // A job that is not waiting has no next retry to speak of.
  next.hidden = job.status !== 'pending';
  next.previousElementSibling.hidden = next.hidden;
  setText('d-error', classWords(job));
  setText('d-type', job.content_type ?? '');
  setText('d-document', job.document ?? '');
  $('d-retry').textContent = job.status === 'pending' ? 'Fetch now' : 'Retry';
  $('d-retry').disabled = job.status === 'running';
  $('d-cancel').disabled = !(job.status === 'pending' || job.status === 'running');
  $('d-delete').disabled = job.status === 'running';
  $('d-delete').textContent = deleteArmed ? 'Confirm delete' : 'Delete';
  $('d-open').disabled = !job.document;
  $('d-read').disabled = !job.document;
  // A button that has the focus and is disabled now (Cancel once the job is cancelled, Retry
  // once it runs) hands it to the first action that is still there to press.
  const active = document.activeElement;
  if (active?.disabled && active.closest('.details-actions')) {
    document.querySelector('.details-actions button:not(:disabled):not([hidden])')?.focus();
  }
  $('d-retry-host').textContent = `Retry dead on ${job.host}`;
  renderHostPause(job.host);
  $('attempt-rows').replaceChildren(...d.attempts.map((a) => {
    const tr = el('tr');
    const waited = a.delay_ms === null || a.delay_ms === undefined ? '' : humanSeconds(Number(a.delay_ms) / 1000);
    tr.append(
      el('td', 'num', a.number),
      el('td', '', localTime(a.started_at)),
      el('td', '', (a.outcome ? (OUTCOME_WORDS[a.outcome] ?? a.outcome) : 'in flight')
        + (a.stage ? ` (${STAGE_WORDS[a.stage] ?? a.stage})` : '')),
      el('td', 'num', a.http_status ?? ''),
      el('td', 'error', a.error ?? ''),
      el('td', '', waited),
    );
    return tr;
  }));
}

/// Give `row` the table's tab stop and the focus; with no row, the links box takes it.
function focusRow(row) {
  if (!row) {
    urls.focus();
    return;
  }
  for (const tr of rows.children) tr.tabIndex = -1;
  row.tabIndex = 0;
  row.focus();
}

function closeDetails() {
  const id = selectedId;
  select(null);
  const row = rows.querySelector(`tr[data-id="${Number(id)}"]`);
  if (row) focusRow(row);
}
$('details-close').addEventListener('click', closeDetails);

// The host button follows the stored state (a host can also be paused by a rate limit or the CLI).
function renderHostPause(host) {
  const paused = pausedHosts.has(host);
  const button = $('d-pause-host');
  button.dataset.paused = String(paused);
  button.textContent = paused ? `Resume ${host}` : `Pause ${host}`;
}
// Escape closes the details pane (an open dialog handles its own Escape).
document.addEventListener('keydown', (event) => {
  const dialogOpen = document.querySelector('dialog[open]') !== null;
  // In a text box Escape is the box's own (it closes the host box's suggestions).
  if (event.key === 'Escape' && !dialogOpen && selectedId !== null && !libraryShown()
    && !isTextEntry(event.target)) closeDetails();
});

async function runAction(command, args, verb) {
  try {
    const r = await call(command, args);
    const skipped = r.skipped?.length ? ` Skipped: ${r.skipped.join('; ')}.` : '';
    say(`${plural(r.done, 'job')} ${verb}.${skipped}`, r.done === 0 && Boolean(r.skipped?.length));
    refreshAll();
  } catch (err) {
    say(String(err), true);
  }
}

$('d-retry').addEventListener('click', () => shown && runAction('retry_jobs', { ids: [shown.job.id] }, shown.job.status === 'pending' ? 'moved to the front' : 'queued again'));
$('d-cancel').addEventListener('click', () => shown && runAction('cancel_jobs', { ids: [shown.job.id] }, 'cancelled'));
$('d-delete').addEventListener('click', async () => {
  if (!shown) return;
  if (!deleteArmed) {
    deleteArmed = true;
    $('d-delete').textContent = 'Confirm delete';
    return;
  }
  deleteArmed = false;
  const id = shown.job.id;
  const row = rows.querySelector(`tr[data-id="${Number(id)}"]`);
  const nearId = (row?.nextElementSibling ?? row?.previousElementSibling)?.dataset.id;
  await runAction('delete_jobs', { ids: [id] }, 'deleted');
  // The pane closes under the focus it held: the row after the deleted one takes it.
  const active = document.activeElement;
  const lost = !active || active === document.body || $('details').contains(active);
  select(null);
  if (lost) focusRow(rows.querySelector(`tr[data-id="${Number(nearId)}"]`));
});
// The link as the table shows it: without a user name and password, which stay in the queue.
$('d-copy-url').addEventListener('click', async () => {
  if (!shown) return;
  try {
    await copyText(shown.job.url);
    say('Copied the URL.');
  } catch (err) {
    say(`Could not copy the URL: ${String(err)}`, true);
  }
});
$('d-open').addEventListener('click', async () => {
  if (!shown) return;
  try {
    await call('open_document', { id: shown.job.id });
  } catch (err) {
    say(String(err), true);
  }
});
$('d-read').addEventListener('click', () => shown && readJob(shown.job.id));
$('d-browser').addEventListener('click', async () => {
  if (!shown) return;
  try {
    await call('open_in_browser', { id: shown.job.id });
  } catch (err) {
    say(String(err), true);
  }
});
$('d-retry-host').addEventListener('click', () => shown && runAction('retry_dead', { host: shown.job.host }, 'retried'));
$('d-pause-host').addEventListener('click', async () => {
  if (!shown) return;
  const host = shown.job.host;
  const pause = $('d-pause-host').dataset.paused !== 'true';
  try {
    await call('set_host_paused', { host, paused: pause });
    if (pause) pausedHosts.add(host); else pausedHosts.delete(host);
    renderHostPause(host);
    say(pause ? `${host} paused: no fetch for it starts until you resume it.` : `${host} resumed.`);
    refreshStats();
  } catch (err) {
    say(String(err), true);
  }
});

// ---------------------------------------------------------------- settings

const dialog = $('settings');
const fields = {
  base_delay_secs: $('s-base'),
  max_delay_secs: $('s-cap'),
  max_retries: $('s-retries'),
  jitter_percent: $('s-jitter'),
  concurrency: $('s-concurrency'),
  per_host: $('s-per-host'),
  timeout_secs: $('s-timeout'),
};

$('open-settings').addEventListener('click', async () => {
  try {
    const s = await call('get_settings');
    for (const [key, input] of Object.entries(fields)) input.value = String(s[key]);
    $('s-notify').checked = Boolean(s.notifications);
    $('s-keep-binary').checked = Boolean(s.keep_binary);
    $('s-keep-raw').checked = Boolean(s.keep_raw);
    $('s-intervals').value = s.host_intervals;
    $('s-doi').value = s.doi_resolver;
    $('s-arxiv').value = s.arxiv;
    $('s-pubmed').value = s.pubmed;
    $('s-pmc').value = s.pmc;
    $('s-wayback').value = s.wayback;
    $('s-wayback-fallback').checked = Boolean(s.wayback_fallback);
    $('s-database').value = s.database ?? '';
    $('s-database').dataset.saved = s.database ?? '';
    $('settings-error').textContent = '';
    dialog.showModal();
    fields.base_delay_secs.focus();
  } catch (err) {
    say(String(err), true);
  }
});

$('settings-cancel').addEventListener('click', () => dialog.close());
// An error says what the last Save refused; once the fields change it no longer applies.
dialog.addEventListener('input', () => {
  $('settings-error').textContent = '';
});
$('settings-save').addEventListener('click', async () => {
  const settings = {
    notifications: $('s-notify').checked,
    keep_binary: $('s-keep-binary').checked,
    keep_raw: $('s-keep-raw').checked,
    host_intervals: $('s-intervals').value,
    doi_resolver: $('s-doi').value.trim(),
    arxiv: $('s-arxiv').value.trim(),
    pubmed: $('s-pubmed').value.trim(),
    pmc: $('s-pmc').value.trim(),
    wayback: $('s-wayback').value.trim(),
    wayback_fallback: $('s-wayback-fallback').checked,
    database: $('s-database').value.trim(),
  };
  for (const [key, input] of Object.entries(fields)) {
    const n = Number(input.value);
    if (input.value.trim() === '' || !Number.isFinite(n)) {
      $('settings-error').textContent = `${input.labels?.[0]?.textContent ?? key} needs a number.`;
      input.focus();
      return;
    }
    settings[key] = n;
  }
  try {
    await call('save_settings', { settings });
    dialog.close();
    // The queue this window holds open stays until it starts again.
    say(settings.database === $('s-database').dataset.saved
      ? 'Settings saved and applied.'
      : settings.database === ''
        ? 'Settings saved and applied. From the next start, the queue is in this computer\'s data folder again.'
        : 'Settings saved and applied. The shared database is used from the next start of Gleaner.');
  } catch (err) {
    $('settings-error').textContent = String(err);
  }
});

// ---------------------------------------------------------------- live updates

async function refreshAll() {
  refreshStats();
  try {
    await fetchJobs(wanted);
  } catch (err) {
    say(String(err), true);
  }
  if (selectedId !== null) showDetails(selectedId);
  refreshLibrary();
}

// The backend sends one coalesced event per burst of committed job changes.
window.__TAURI__?.event?.listen('jobs-changed', refreshAll);

refreshStats();
reloadJobs().then(() => {
  // User Timing mark: the benchmark reads how long the first table took after the page started.
  performance.mark('gleaner-ready');
  say('Ready.');
});
loadFilters();
initLibrary();
initExport({ selectedJob: () => selectedId, resultsQuery });
