-- groups_fence_claim.sql without the fence: inbox.claim alone, with the effect.
\set id random(1000000001, 999999999999999)
\set acct random(1, 1000)
WITH fresh AS (SELECT inbox.claim('grp_claims', :id::text) AS applied)
UPDATE grp_claim_accounts SET balance = balance + 1, effects = effects + 1
  FROM fresh WHERE id = :acct AND fresh.applied;
