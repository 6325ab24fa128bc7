-- The index folds only the accents SQLite's FTS5 folds (those of Latin letters), not every
-- combining mark: "काम", "कमी" and "किमी" were one word, "мои" found "мой" and "かっこう"
-- found "がっこう". Every row is marked for the rebuild each member runs when it opens the
-- queue (postgres/library.rs, `split_words`, added by migration 0009).
UPDATE library SET words_split = false;
