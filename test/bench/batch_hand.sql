-- The same poll written by hand, correctly: the first occurrence of each id, its
-- claim inserted in key order (no deadlock between overlapping polls), and the
-- UPDATE over the ids the INSERT returned.
WITH poll AS (
  SELECT array_agg(md5(random()::text)) AS ids,
         array_agg(:client_id * 1000 + 1 + (random() * 999)::int) AS accounts,
         array_agg(1 + (random() * 99)::int) AS amounts
    FROM generate_series(1, :batch)),
msgs AS (
  SELECT u.* FROM poll, unnest(poll.ids, poll.accounts, poll.amounts) WITH ORDINALITY
                          AS u(id, account, amount, ord)),
firsts AS (SELECT DISTINCT ON (id) id, account, amount FROM msgs ORDER BY id, ord),
fresh AS (
  INSERT INTO batch_hand_inbox (message_id, claimed_at)
  SELECT id, now() FROM firsts ORDER BY id
  ON CONFLICT DO NOTHING RETURNING message_id)
UPDATE batch_accounts a SET balance = a.balance + m.total
  FROM (SELECT f.account, sum(f.amount) AS total
          FROM firsts f JOIN fresh ON fresh.message_id = f.id
         GROUP BY f.account) m
 WHERE a.id = m.account;
