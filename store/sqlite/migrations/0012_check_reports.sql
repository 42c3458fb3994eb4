-- Report cards of agentloop check (README "Grade your client"): the
-- report as JSON with the counts a list shows. Kept like runs: a
-- permalink, and the same retention.
CREATE TABLE check_reports (
    id            TEXT    PRIMARY KEY,
    created_at    INTEGER NOT NULL,
    client        TEXT    NOT NULL,
    passed        INTEGER NOT NULL,
    failed        INTEGER NOT NULL,
    not_exercised INTEGER NOT NULL,
    json          BLOB    NOT NULL
);
CREATE INDEX check_reports_created ON check_reports (created_at);
