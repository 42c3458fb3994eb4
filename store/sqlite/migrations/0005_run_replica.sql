-- The replica that runs a race: with replicas sharing a store, a replica
-- that restarts marks only its own runs interrupted.
ALTER TABLE runs ADD COLUMN replica TEXT NOT NULL DEFAULT '';
