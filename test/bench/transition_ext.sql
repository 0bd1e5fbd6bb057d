-- One state change through the extension.  Rows 1..rows start PENDING; moving one
-- to PAID succeeds once and is an idempotent replay (already) after that, so the
-- number of rows sets the mix: many rows, mostly moves; few rows, mostly replays.
\set id random(1, :rows)
SELECT inbox.transition('tr_ext', jsonb_build_object('id', :id::int), 'state', '{PENDING}', 'PAID');
