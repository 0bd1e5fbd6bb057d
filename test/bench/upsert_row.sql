-- upsert_ext.sql through the typed entry point: the new row as a value of the
-- table's own row type instead of a jsonb object.
\set r random(1, 100)
\if :r <= :replay_pct
\set id random(1, 100000)
\set amt 50
\elif :r <= :replay_pct + :fresh_pct
\set id random(1000000001, 999999999999999)
\set amt random(1, 1000000)
\else
\set id random(1, 100000)
\set amt random(51, 1000000)
\endif
SELECT inbox.upsert_row(ROW(:id, 'PAID', :amt)::up_row);
