-- One fresh claim in the growth section's bigint inbox: an id drawn from the same
-- range (1..2^62-1) as its preloaded ids, so that it lands anywhere in the index.
\set id random(1, 4611686018427387903)
SELECT inbox.claim('growth_inbox', :id::bigint);
