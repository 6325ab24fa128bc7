// What every part of Gleaner's window shares: finding elements, asking the backend, making
// elements whose text is set as text, and the status line.

const tauri = window.__TAURI__;
export const $ = (id) => document.getElementById(id);

const statusLine = $('status');

export function say(text, isError = false) {
  statusLine.textContent = text;
  statusLine.dataset.state = isError ? 'error' : 'ok';
}

/// Put `text` on the system clipboard: the Clipboard API where the webview has it, else the
/// copy command on a selected, off-screen text box.
export async function copyText(text) {
  if (navigator.clipboard?.writeText) {
    try {
      await navigator.clipboard.writeText(text);
      return;
    } catch {
      // Refused (no permission in this webview): the copy command below.
    }
  }
  const box = document.createElement('textarea');
  box.value = text;
  box.setAttribute('readonly', '');
  box.className = 'visually-hidden';
  const focused = document.activeElement;
  document.body.append(box);
  box.select();
  const copied = document.execCommand('copy');
  box.remove();
  focused?.focus?.();
  if (!copied) throw new Error('the webview refused to copy');
}

export async function call(command, args) {
  if (!tauri?.core?.invoke) {
    throw new Error('Not running inside Gleaner: there is no backend to ask.');
  }
  return tauri.core.invoke(command, args);
}

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

export function plural(n, word) {
  return `${n.toLocaleString()} ${word}${n === 1 ? '' : 's'}`;
}

export function isTextEntry(target) {
  return target instanceof HTMLElement
    && (target.closest('input, textarea, select, [contenteditable]') !== null);
}
