-- An old-style arXiv id's duplicate key no longer holds its subject class (math.GT/0309136 is
-- math/0309136), so a job queued before under the old key would be queued again. Its key is
-- rewritten; OR IGNORE leaves one whose new key another job already has (both were queued).
UPDATE OR IGNORE jobs
    SET url_key = 'arxiv:' || substr(url_key, 7, instr(url_key, '.') - 7)
        || substr(url_key, instr(url_key, '/'))
    WHERE url_key LIKE 'arxiv:%/%'
      AND instr(url_key, '.') > 7
      AND instr(url_key, '.') < instr(url_key, '/');
