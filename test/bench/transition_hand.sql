-- The same guarded UPDATE by hand.
\set id random(1, :rows)
UPDATE tr_hand SET state = 'PAID' WHERE id = :id AND state = 'PENDING';
