-- Password recovery (issue 23): a password link is either an admin's invitation or a
-- recovery the user asked for. The audit trail names a password set through each
-- differently (`account.password_set`, `account.password_reset`). Links issued before this
-- were all invitations.
ALTER TABLE password_links ADD COLUMN purpose TEXT NOT NULL DEFAULT 'invitation'
    CHECK (purpose IN ('invitation', 'recovery'));
