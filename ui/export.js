// The Export dialog: a format (JSON Lines, BibTeX, CSL-JSON, RIS) and which documents (the
// whole library, the Library's current results, or the selected job).

import { $, call, plural, say } from './common.js';

const dialog = $('export');
const scopes = { results: $('export-scope-results'), selected: $('export-scope-selected') };
const FORMAT_WORDS = { jsonl: 'JSON Lines', bibtex: 'BibTeX', csljson: 'CSL-JSON', ris: 'RIS' };

function chosen(name) {
  return dialog.querySelector(`input[name="${name}"]:checked`)?.value;
}

/// `selectedJob()`: the job table's selected job id, or null; `resultIds()`: the ids the
/// Library's results list shows.
export function initExport({ selectedJob, resultIds }) {
  $('export-library').addEventListener('click', () => {
    const job = selectedJob();
    const ids = resultIds();
    scopes.selected.disabled = job === null;
    $('export-selected-words').textContent = job === null ? 'The selected job (none is selected)' : `The selected job (job ${job})`;
    scopes.results.disabled = ids.length === 0;
    $('export-results-words').textContent = ids.length === 0
      ? 'The search results (there are none)'
      : `The ${plural(ids.length, 'document')} of the Library's results`;
    if (dialog.querySelector('input[name="export-scope"]:checked')?.disabled) {
      dialog.querySelector('input[name="export-scope"][value="all"]').checked = true;
    }
    $('export-error').textContent = '';
    dialog.showModal();
  });
  $('export-cancel').addEventListener('click', () => dialog.close());
  $('export-go').addEventListener('click', async () => {
    const format = chosen('export-format') ?? 'jsonl';
    const scope = chosen('export-scope') ?? 'all';
    const jobs = scope === 'selected' ? [selectedJob()] : scope === 'results' ? resultIds() : null;
    const button = $('export-go');
    button.disabled = true;
    say('Exporting…');
    try {
      const r = await call('export_library', { format, jobs, query: null });
      dialog.close();
      say(`Exported ${plural(r.documents, 'document')} to ${r.path} (${FORMAT_WORDS[format] ?? format}).`);
    } catch (err) {
      $('export-error').textContent = String(err);
      // The dialog may have been closed meanwhile: the status line must not stay "Exporting…".
      say(String(err), true);
    } finally {
      button.disabled = false;
    }
  });
}
