// The Export dialog: a format (JSON Lines, BibTeX, CSL-JSON, RIS) and which documents (the
// whole library, the Library's current results, or the selected job).

import { $, call, plural, say } from './common.js';

const dialog = $('export');
const scopes = { results: $('export-scope-results'), selected: $('export-scope-selected') };
const FORMAT_WORDS = { jsonl: 'JSON Lines', bibtex: 'BibTeX', csljson: 'CSL-JSON', ris: 'RIS' };

function chosen(name) {
  return dialog.querySelector(`input[name="${name}"]:checked`)?.value;
}

/// `selectedJob()`: the job table's selected job id, or null; `resultsQuery()`: the Library's
/// search and filters, with how many results it shows, or null.
export function initExport({ selectedJob, resultsQuery }) {
  $('export-library').addEventListener('click', () => {
    const job = selectedJob();
    const results = resultsQuery();
    scopes.selected.disabled = job === null;
    $('export-selected-words').textContent = job === null ? 'The selected job (none is selected)' : `The selected job (job ${job})`;
    scopes.results.disabled = results === null;
    $('export-results-words').textContent = results === null
      ? 'The search results (there are none)'
      : results.capped
        ? `The Library's results: every document its search finds, more than the ${results.shown} shown`
        : `The ${plural(results.shown, 'document')} of the Library's results`;
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
    const jobs = scope === 'selected' ? [selectedJob()] : null;
    const library = scope === 'results' ? resultsQuery()?.query ?? null : null;
    const button = $('export-go');
    button.disabled = true;
    say('Exporting…');
    try {
      const r = await call('export_library', { format, jobs, query: null, library });
      dialog.close();
      const left = (r.unusable ?? []).map((u) => `job ${u.job_id}: ${u.reason}`);
      const done = `Exported ${plural(r.documents, 'document')} to ${r.path} (${FORMAT_WORDS[format] ?? format}).`;
      say(left.length ? `${done} Not exported: ${left.join('; ')}.` : done, left.length > 0);
    } catch (err) {
      $('export-error').textContent = String(err);
      // The dialog may have been closed meanwhile: the status line must not stay "Exporting…".
      say(String(err), true);
    } finally {
      button.disabled = false;
    }
  });
}
