-- transition_ext.sql through the typed entry point: the primary key's value as an
-- int instead of a jsonb object.
\set id random(1, :rows)
SELECT inbox.transition_key('tr_key', :id::int, 'state', '{PENDING}', 'PAID');
