-- A 200 that is really a block page (challenge, CAPTCHA) is retried a few times on a budget of
-- its own.
ALTER TABLE jobs ADD COLUMN blocked_failures INTEGER NOT NULL DEFAULT 0;
