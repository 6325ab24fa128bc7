// Gleaner placeholder window. Loaded as an ES module from index.html (the CSP forbids inline scripts).
// Everything from the backend is shown with textContent, never parsed as HTML.

const status = document.getElementById('status');

function describe(stats) {
  if (stats === null || typeof stats !== 'object') {
    return String(stats);
  }
  const parts = ['pending', 'running', 'done', 'dead', 'cancelled']
    .map((key) => `${key} ${Number(stats[key] ?? 0)}`);
  if (Array.isArray(stats.paused_hosts) && stats.paused_hosts.length > 0) {
    parts.push(`paused hosts: ${stats.paused_hosts.map((h) => String(h.host)).join(', ')}`);
  }
  return parts.join(' · ');
}

async function refreshStats() {
  const tauri = window.__TAURI__;
  if (!tauri || !tauri.core || typeof tauri.core.invoke !== 'function') {
    status.textContent = 'Not running inside Gleaner: no backend to ask for stats.';
    status.dataset.state = 'error';
    return;
  }
  try {
    const stats = await tauri.core.invoke('stats');
    status.textContent = describe(stats);
    status.dataset.state = 'ok';
  } catch (err) {
    status.textContent = `Could not load stats: ${String(err)}`;
    status.dataset.state = 'error';
  }
}

refreshStats();
// The backend sends one coalesced event per burst of committed job changes.
window.__TAURI__?.event?.listen('jobs-changed', refreshStats);

// Intake: the box, Ctrl+Enter, and drops anywhere on the window. Results are shown as text only.
const urls = document.getElementById('urls');
const addButton = document.getElementById('add');
const summary = document.getElementById('add-summary');
const rejectedList = document.getElementById('add-rejected');

function plural(n, word) {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

async function addText(text, source) {
  const tauri = window.__TAURI__;
  if (!text.trim() || !tauri?.core) {
    return;
  }
  addButton.disabled = true;
  try {
    const result = await tauri.core.invoke('add_urls', { text, source });
    summary.textContent = `${plural(result.queued.length, 'link')} queued, `
      + `${plural(result.duplicates.length, 'duplicate')}, ${result.rejected.length} rejected.`;
    rejectedList.replaceChildren(...result.rejected.map((r) => {
      const item = document.createElement('li');
      item.textContent = `${r.input}: ${r.reason}`;
      return item;
    }));
    if (source === 'paste' && result.rejected.length === 0) {
      urls.value = '';
    }
    refreshStats();
  } catch (err) {
    summary.textContent = String(err);
  } finally {
    addButton.disabled = false;
  }
}

addButton.addEventListener('click', () => addText(urls.value, 'paste'));
urls.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
    event.preventDefault();
    addText(urls.value, 'paste');
  }
});

document.addEventListener('dragover', (event) => event.preventDefault());
document.addEventListener('drop', async (event) => {
  event.preventDefault();
  const data = event.dataTransfer;
  if (!data) {
    return;
  }
  const parts = [];
  for (const file of data.files) {
    parts.push(await file.text());
  }
  if (parts.length === 0) {
    parts.push(data.getData('text/uri-list') || data.getData('text/plain'));
  }
  addText(parts.join('\n'), 'drop');
});
