-- One fresh claim in the growth section's text inbox: a random uuid as 36 characters
-- of text, like the preloaded ids, so that it lands anywhere in the index.
SELECT inbox.claim('growth_inbox', gen_random_uuid()::text);
