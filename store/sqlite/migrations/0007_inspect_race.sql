-- The playground's own races tag their sessions ("RUN_ID/LANE"), so the
-- inspector can tell them from clients' and filter them out.
ALTER TABLE inspect_sessions ADD COLUMN race TEXT NOT NULL DEFAULT '';
