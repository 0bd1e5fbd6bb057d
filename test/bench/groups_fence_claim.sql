-- The generation check for claims: inbox.fence (generation 1, the client's
-- partition of topic 'claims') and then inbox.claim of a fresh id, with the
-- effect, in one statement (the fence's CTE is evaluated before the claim that
-- reads it).  groups_claim.sql is the claim alone, groups_fence_hand.sql a fenced
-- claim by hand and groups_claim_hand.sql an unfenced one.  Fresh ids from a range so large that every one is new.
\set id random(1000000001, 999999999999999)
\set acct random(1, 1000)
WITH held AS (SELECT inbox.fence('grp_inbox', 'claims', :client_id, 1) AS took),
     fresh AS (SELECT inbox.claim('grp_claims', :id::text) AS applied FROM held)
UPDATE grp_claim_accounts SET balance = balance + 1, effects = effects + 1
  FROM fresh WHERE id = :acct AND fresh.applied;
