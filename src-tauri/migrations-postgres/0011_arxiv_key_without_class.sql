-- An old-style arXiv id's duplicate key no longer holds its subject class (math.GT/0309136 is
-- math/0309136), as SQLite's 0024: a job queued before under the old key would be queued
-- again. A job whose new key another job already has is left as it is (both were queued).
UPDATE jobs j
   SET url_key = regexp_replace(j.url_key, '^arxiv:([^./]+)\.[^/]+/', 'arxiv:\1/')
 WHERE j.url_key ~ '^arxiv:[^./]+\.[^/]+/'
   AND NOT EXISTS (SELECT 1 FROM jobs o
                    WHERE o.url_key = regexp_replace(j.url_key, '^arxiv:([^./]+)\.[^/]+/', 'arxiv:\1/'));
