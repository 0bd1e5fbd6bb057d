-- Grows growth_inbox by the claims numbered :first..:last (psql -v), the id of claim g
-- given by the SQL expression :id over g, its claimed_at :base (epoch seconds) plus g
-- minutes: claims are one minute apart, in the heap in claimed_at order, as an inbox
-- fills over time, so that the section can expire an exact number of the oldest.
--
-- Inserting tens of millions of random keys into a btree one by one is what takes
-- hours; appending to the bare heap and building the indexes afterwards takes
-- minutes.  So the two indexes are dropped, the rows appended, the heap vacuumed (the
-- claims the last purge deleted are reclaimed, the rest hinted and all-visible, as
-- in an inbox autovacuum has seen), and the indexes built again.  The primary key is
-- built with fillfactor 66: random arrivals leave a btree's leaves about two-thirds
-- full (66% measured on an inbox of 1M random bigint ids inserted one by one; a
-- fresh build packs them to 90%), so its size and its rate of page splits under the
-- timed claims are those of an inbox that grew claim by claim.  The claimed_at index
-- is built at the default: claims arrive in claimed_at order, which packs it.
\set ON_ERROR_STOP 1
SET maintenance_work_mem = '1GB';
ALTER TABLE growth_inbox DROP CONSTRAINT growth_inbox_pkey;
DROP INDEX growth_inbox_claimed_at_idx;
INSERT INTO growth_inbox (message_id, claimed_at)
SELECT :id, to_timestamp(:base) + g * interval '1 minute'
  FROM generate_series(:first, :last) g;
VACUUM growth_inbox;
ALTER TABLE growth_inbox ADD CONSTRAINT growth_inbox_pkey PRIMARY KEY (message_id)
    WITH (fillfactor = 66);
CREATE INDEX growth_inbox_claimed_at_idx ON growth_inbox (claimed_at);
ANALYZE growth_inbox;
CHECKPOINT;
