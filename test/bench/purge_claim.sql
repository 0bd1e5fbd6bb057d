-- A consumer of purge_inbox, which purge_fill.sql fills with expired claims: every
-- message is new, claimed and applied by claim_apply, its claim stamped with the
-- transaction's start (claimed_at), which is how run counts the claims made while
-- the purge ran and just before it.
\set id random(1000000001, 999999999999999)
\set acct random(1, 1000)
SELECT inbox.claim_apply('purge_inbox', :id::text,
    'UPDATE accounts SET balance = balance + $1 WHERE id = $2', 1, :acct::int);
