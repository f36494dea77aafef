-- Ending a browser session finds the grants issued in it (to queue their clients' logout
-- tokens) among its user's grants, through `grants_by_user`: a grant's session is always one
-- of its user's. The index by session cost every grant a write to a page of its own (sids
-- are random): one of the seven log frames a code exchange wrote on SQLite
-- (docs/performance.md), for a statement that runs at sign-out.
DROP INDEX grants_by_sid;
