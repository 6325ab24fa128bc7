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
