-- One state change PENDING -> PAID (a replay once the row moved), in a function
-- delegated to the row's worker: cw_move_ext (inbox.transition_key).
\set id random(1, 100000)
SELECT cw_move_ext(:id);
