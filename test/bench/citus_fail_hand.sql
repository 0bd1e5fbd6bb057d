-- One failed delivery, recorded by fail_hand (setup_citus.sql): 20000 ids over 1000
-- accounts, so that a message fails again until its fifth failure quarantines it and
-- its later deliveries answer quarantined.
\set id random(1, 20000)
\set acct 1 + :id % 1000
SELECT fail_hand(:acct, :id);
