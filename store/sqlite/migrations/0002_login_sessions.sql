-- Browser logins (--api-key). id is the server's HMAC of the cookie's
-- random token under the API key, never the token itself. Times are unix
-- nanoseconds; an expired row is refused and deleted when read, and swept
-- at start and at each login. Named login_sessions so as not to be taken
-- for the inspector's sessions.
CREATE TABLE login_sessions (
    id         TEXT    PRIMARY KEY,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX login_sessions_expires_at ON login_sessions (expires_at);
