// The Library view: search as you type, filters, the results list, and the reader.
//
// Results and metadata are put on the page as text. The reader's body is the one place where
// markup from the backend is inserted: HTML rendered from the document's Markdown and sanitised
// in Rust (engine/render.rs), so nothing in it can run, load or navigate.

import { $, call, el, isTextEntry, plural, say } from './common.js';

const tabs = { jobs: $('tab-jobs'), library: $('tab-library') };
const views = { jobs: $('jobs-view'), library: $('library-view') };
const search = $('library-search');
const filters = { tag: $('library-tag'), host: $('library-host'), batch: $('library-batch') };
const results = $('results');
const summary = $('library-summary');
const reader = {
  empty: $('reader-empty'),
  doc: $('reader-doc'),
  title: $('reader-title'),
  byline: $('reader-byline'),
  facts: $('reader-facts'),
  tags: $('reader-tag-list'),
  tagInput: $('reader-tag-input'),
  body: $('reader-body'),
  pdf: $('reader-pdf'),
};

// What the reader shows, and the search whose answer is the newest asked for.
let reading = null;
let searchSeq = 0;
let typingTimer = null;
let hits = [];
let hitsQuery = null;
// The most results a search shows (RESULTS_MAX in desktop/library.rs).
const RESULTS_SHOWN = 200;

/// The Export dialog's "results": the search and filters of the list shown (an export takes
/// every document they find, not only the ones shown), how many are shown, and whether the
/// list stopped at its cap; null while it shows none.
export function resultsQuery() {
  if (hits.length === 0 || hitsQuery === null) return null;
  return { query: hitsQuery, shown: hits.length, capped: hits.length >= RESULTS_SHOWN };
}

export function libraryShown() {
  return !views.library.hidden;
}

function showView(name, focus = true) {
  for (const key of Object.keys(tabs)) {
    const on = key === name;
    tabs[key].setAttribute('aria-selected', String(on));
    tabs[key].tabIndex = on ? 0 : -1;
    views[key].hidden = !on;
  }
  document.body.dataset.view = name;
  if (name === 'library') {
    loadFilters();
    runSearch();
  }
  if (focus) tabs[name].focus();
}

// ---------------------------------------------------------------- search and results

/// `spoken`: a person asked (typed, chose a filter), so the count is read out; a refresh while
/// jobs finish is not.
async function runSearch(spoken = true) {
  const seq = ++searchSeq;
  const query = {
    text: search.value,
    tag: filters.tag.value || null,
    host: filters.host.value || null,
    batch_id: filters.batch.value ? Number(filters.batch.value) : null,
  };
  try {
    const found = await call('search_library', { query });
    if (seq !== searchSeq) return;
    hits = found;
    hitsQuery = query;
    renderResults(query);
    if (spoken) $('library-spoken').textContent = summary.textContent;
  } catch (err) {
    if (seq === searchSeq) say(String(err), true);
  }
}

function searchSoon() {
  clearTimeout(typingTimer);
  typingTimer = setTimeout(runSearch, 120);
}

// A snippet marks the matched words with `**`: they become <mark> elements, the rest text.
function snippetNode(snippet) {
  const p = el('p', 'result-snippet');
  String(snippet ?? '').split('**').forEach((part, i) => {
    if (!part) return;
    p.append(i % 2 === 1 ? el('mark', '', part) : document.createTextNode(part));
  });
  return p;
}

function firstAuthor(authors) {
  if (!authors?.length) return '';
  const family = String(authors[0]).split(',')[0].trim();
  return authors.length > 1 ? `${family} et al.` : family;
}

function renderResults(query) {
  // `tag:` terms filter; only the other words rank.
  const words = query.text.replace(/tag:("[^"]*"|\S+)/g, '').trim();
  const filtered = query.text.trim() || query.tag || query.host || query.batch_id;
  summary.textContent = hits.length === 0
    ? (filtered ? 'No document matches.' : 'No documents yet: what the jobs fetch is kept here.')
    : hits.length >= RESULTS_SHOWN
      ? `The first ${plural(hits.length, 'document')}${words ? ', best match first' : ', newest first'}: add words or filters to narrow them`
      : `${plural(hits.length, 'document')}${words ? ', best match first' : ', newest first'}`;
  const items = hits.map((hit) => {
    const li = el('li');
    const button = el('button', 'result');
    button.type = 'button';
    button.dataset.id = String(hit.job_id);
    button.tabIndex = -1;
    const meta = [firstAuthor(hit.authors), hit.container || hit.host, hit.year].filter(Boolean).join(' · ');
    button.append(el('span', 'result-title', hit.title || hit.url));
    if (meta) button.append(el('span', 'result-meta', meta));
    button.append(snippetNode(hit.snippet));
    if (hit.tags?.length) {
      const tags = el('span', 'result-tags');
      tags.append(...hit.tags.map((t) => el('span', 'tag', t)));
      button.append(tags);
    }
    if (reading?.job_id === hit.job_id) button.setAttribute('aria-current', 'true');
    button.addEventListener('click', () => openReader(hit.job_id));
    li.append(button);
    return li;
  });
  // A refresh while the queue runs must not take the keyboard's place in the list.
  const focused = results.contains(document.activeElement) ? document.activeElement.dataset.id : null;
  results.replaceChildren(...items);
  const again = focused ? resultButtons().find((b) => b.dataset.id === focused) : null;
  const current = again ?? results.querySelector('button[aria-current="true"]') ?? results.querySelector('button');
  if (current) current.tabIndex = 0;
  if (again) again.focus();
}

function resultButtons() {
  return Array.from(results.querySelectorAll('button.result'));
}

function focusResult(index) {
  const buttons = resultButtons();
  if (buttons.length === 0) return;
  const i = Math.max(0, Math.min(index, buttons.length - 1));
  for (const b of buttons) b.tabIndex = -1;
  buttons[i].tabIndex = 0;
  buttons[i].focus();
  buttons[i].scrollIntoView({ block: 'nearest' });
}

results.addEventListener('keydown', (event) => {
  const buttons = resultButtons();
  const at = buttons.indexOf(document.activeElement);
  if (at < 0) return;
  const moves = { ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: buttons.length - 1 };
  if (event.key in moves) {
    event.preventDefault();
    if (event.key === 'ArrowUp' && at === 0) search.focus();
    else focusResult(moves[event.key]);
  }
});

search.addEventListener('input', searchSoon);
// The search field's own clear button.
search.addEventListener('search', searchSoon);
search.addEventListener('keydown', (event) => {
  if (event.key === 'ArrowDown') {
    event.preventDefault();
    focusResult(0);
  } else if (event.key === 'Enter') {
    event.preventDefault();
    clearTimeout(typingTimer);
    runSearch().then(() => focusResult(0));
  }
});
for (const select of Object.values(filters)) select.addEventListener('change', runSearch);

async function loadFilters() {
  try {
    const [tags, hosts, f] = await Promise.all([call('library_tags'), call('library_hosts'), call('filters')]);
    fill(filters.tag, tags.map((t) => [t.tag, `${t.tag} (${Number(t.count).toLocaleString()})`]));
    fill(filters.host, hosts.map((h) => [h.host, h.host]));
    fill(filters.batch, f.batches.map((b) => [String(b.id), b.name]));
  } catch (err) {
    say(`Could not load the library's filters: ${String(err)}`, true);
  }
}

function fill(select, pairs) {
  const chosen = select.value;
  const all = el('option', '', 'All');
  all.value = '';
  select.replaceChildren(all, ...pairs.map(([value, label]) => {
    const option = el('option', '', label);
    option.value = value;
    return option;
  }));
  // A choice that is gone (its last document deleted) falls back to All.
  select.value = pairs.some(([value]) => value === chosen) ? chosen : '';
}

// ---------------------------------------------------------------- the reader

function fact(term, value) {
  if (!value) return [];
  return [el('dt', '', term), el('dd', '', value)];
}

function fullTextWords(r) {
  if (r.full_text === true) return r.has_pdf ? 'yes, from the PDF (kept beside the document)' : 'yes';
  if (r.full_text === false) return 'no: the landing page and its abstract';
  return '';
}

function renderReading(r) {
  reading = r;
  reader.empty.hidden = true;
  reader.doc.hidden = false;
  reader.title.textContent = r.title || r.url;
  reader.byline.textContent = [r.authors.join('; '), r.container, r.published].filter(Boolean).join(' · ');
  reader.facts.replaceChildren(
    ...fact('URL', r.url),
    ...fact('DOI', r.doi),
    ...fact('arXiv', r.arxiv),
    ...fact('PubMed', r.pmid),
    ...fact('Fetched', r.fetched_at ? new Date(r.fetched_at).toLocaleString() : ''),
    ...fact('Archived copy', r.archived_at ? `from the archive, as of ${r.archived_at}` : ''),
    ...fact('Full text', fullTextWords(r)),
  );
  renderTags(r.tags);
  reader.pdf.hidden = !r.has_pdf;
  // Rendered from Markdown and sanitised in Rust: no script, handler, style, image or
  // non-http(s) link can be in it, and the CSP forbids inline scripts besides.
  // Scrolled to the top while empty: setting it after the text forced a layout of all of it.
  reader.body.replaceChildren();
  reader.body.removeAttribute('aria-busy');
  reader.body.scrollTop = 0;
  reader.body.innerHTML = r.html;
  for (const b of resultButtons()) {
    if (Number(b.dataset.id) === r.job_id) b.setAttribute('aria-current', 'true');
    else b.removeAttribute('aria-current');
  }
}

function renderTags(tags) {
  // A removed tag takes its focused button with it: keep the keyboard in the tag editor.
  const hadFocus = reader.tags.contains(document.activeElement);
  reader.tags.replaceChildren(...tags.map((tag) => {
    const li = el('li', 'tag');
    li.append(el('span', '', tag));
    const remove = el('button', 'tag-remove', '×');
    remove.type = 'button';
    remove.setAttribute('aria-label', `Remove tag ${tag}`);
    remove.addEventListener('click', () => saveTags(reading.tags.filter((t) => t !== tag)));
    li.append(remove);
    return li;
  }));
  if (hadFocus) reader.tagInput.focus();
}

async function saveTags(tags) {
  if (!reading) return;
  const id = reading.job_id;
  try {
    const stored = await call('set_document_tags', { id, tags });
    if (reading?.job_id !== id) return;
    reading.tags = stored;
    renderTags(stored);
    say(stored.length ? `Tags of job ${id}: ${stored.join(', ')}.` : `Job ${id} has no tags now.`);
    // The filters first: a tag filter whose tag is gone falls back to All before the search.
    await loadFilters();
    runSearch();
  } catch (err) {
    say(String(err), true);
  }
}

function addTag() {
  const tag = reader.tagInput.value.trim();
  if (!tag || !reading) return;
  reader.tagInput.value = '';
  saveTags([...reading.tags, tag]);
}
$('reader-tag-add').addEventListener('click', addTag);
reader.tagInput.addEventListener('keydown', (event) => {
  if (event.key === 'Enter') {
    event.preventDefault();
    addTag();
  }
});

// Each opening's number: a document that answers after a later click, or after Escape, is
// not shown.
let readSeq = 0;

async function openReader(id) {
  const started = performance.now();
  const mine = ++readSeq;
  try {
    const r = await call('read_document_of', { id });
    if (mine !== readSeq) return false;
    reader.doc.dataset.answeredMs = String(Math.round(performance.now() - started));
    renderReading(r);
    // For the benchmark (tests/benches/reader.rs): from the click to the text in the page,
    // and to the first frame painted after it.
    reader.doc.dataset.openedMs = String(Math.round(performance.now() - started));
    requestAnimationFrame(() => setTimeout(() => {
      reader.doc.dataset.paintedMs = String(Math.round(performance.now() - started));
    }, 0));
    appendRest(r).then(() => {
      if (reading === r) reader.doc.dataset.completeMs = String(Math.round(performance.now() - started));
    });
    return true;
  } catch (err) {
    if (mine === readSeq) say(String(err), true);
    return false;
  }
}

// A long document comes in pieces: the first is shown at once, and the rest is appended a
// piece a frame, so the first screen never waits for a layout of the whole text.
async function appendRest(r) {
  if (r.more === null || r.more === undefined) return;
  reader.body.setAttribute('aria-busy', 'true');
  try {
    const pieces = await call('read_document_rest', { id: r.job_id, document: r.document, from: r.more });
    for (const piece of pieces) {
      await new Promise((resolve) => requestAnimationFrame(resolve));
      if (reading !== r) return;
      // Sanitised in Rust, as the first piece is.
      reader.body.insertAdjacentHTML('beforeend', piece);
    }
  } catch (err) {
    if (reading === r) say(String(err), true);
  } finally {
    if (reading === r) reader.body.removeAttribute('aria-busy');
  }
}

/// The job details pane's Read button: the Library view, with this job's document open.
export function readJob(id) {
  showView('library', false);
  openReader(id).then((opened) => {
    if (opened) $('reader-close').focus();
    else search.focus();
  });
}

function closeReader() {
  readSeq += 1;
  const id = reading?.job_id;
  reading = null;
  reader.doc.hidden = true;
  reader.empty.hidden = false;
  reader.body.replaceChildren();
  const back = resultButtons().find((b) => Number(b.dataset.id) === id);
  for (const b of resultButtons()) b.removeAttribute('aria-current');
  if (back) {
    for (const b of resultButtons()) b.tabIndex = -1;
    back.tabIndex = 0;
    back.focus();
  } else {
    search.focus();
  }
}
$('reader-close').addEventListener('click', closeReader);

function withReading(command, args = {}) {
  return async () => {
    if (!reading) return;
    try {
      await call(command, { id: reading.job_id, ...args });
    } catch (err) {
      say(String(err), true);
    }
  };
}
$('reader-original').addEventListener('click', withReading('open_in_browser'));
$('reader-pdf').addEventListener('click', withReading('open_pdf'));
$('reader-file').addEventListener('click', withReading('open_document'));

// A link in the text opens in the system browser; the window itself never leaves the app.
reader.body.addEventListener('click', async (event) => {
  const link = event.target instanceof Element ? event.target.closest('a') : null;
  if (!link) return;
  event.preventDefault();
  const href = link.getAttribute('href') ?? '';
  if (href.startsWith('#')) {
    const target = document.getElementById(href.slice(1));
    if (target && reader.body.contains(target)) target.scrollIntoView({ block: 'start' });
    return;
  }
  try {
    await call('open_link', { url: href });
    say(`Opened ${href} in your browser.`);
  } catch (err) {
    say(String(err), true);
  }
});

// ---------------------------------------------------------------- keyboard and live updates

function onKey(event) {
  const dialogOpen = document.querySelector('dialog[open]') !== null;
  if (dialogOpen) return;
  if (event.key === '/' && !isTextEntry(event.target) && !event.ctrlKey && !event.metaKey && !event.altKey) {
    event.preventDefault();
    if (!libraryShown()) showView('library', false);
    search.focus();
    search.select();
  } else if (event.key === 'Escape' && libraryShown() && reading) {
    event.preventDefault();
    closeReader();
  }
}

// Arrows move between the two tabs, as a tab list does.
function onTabKey(event) {
  if (event.key !== 'ArrowRight' && event.key !== 'ArrowLeft') return;
  event.preventDefault();
  showView(libraryShown() ? 'jobs' : 'library');
}

let refreshTimer = null;
/// New documents show up while the view is open, at most a few times a second.
export function refreshLibrary() {
  if (!libraryShown() || refreshTimer) return;
  refreshTimer = setTimeout(() => {
    refreshTimer = null;
    runSearch(false);
  }, 500);
}

export function initLibrary() {
  tabs.jobs.addEventListener('click', () => showView('jobs'));
  tabs.library.addEventListener('click', () => showView('library'));
  tabs.jobs.addEventListener('keydown', onTabKey);
  tabs.library.addEventListener('keydown', onTabKey);
  document.addEventListener('keydown', onKey);
  document.body.dataset.view = 'jobs';
}
