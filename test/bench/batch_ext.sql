-- One poll of :batch fresh messages through claim_apply_many: every id claimed,
-- one set-based UPDATE over the fresh ones.
WITH poll AS (
  SELECT array_agg(md5(random()::text)) AS ids,
         array_agg(:client_id * 1000 + 1 + (random() * 999)::int) AS accounts,
         array_agg(1 + (random() * 99)::int) AS amounts
    FROM generate_series(1, :batch))
SELECT count(*) FROM poll, inbox.claim_apply_many('batch_ext_inbox', poll.ids,
  'UPDATE batch_accounts a SET balance = a.balance + m.total
     FROM (SELECT account, sum(amount) AS total
             FROM unnest($2::int[], $3::int[]) AS u(account, amount)
            GROUP BY account) m
    WHERE a.id = m.account',
  poll.accounts, poll.amounts);
