-- One fresh claim in the growth section's uuid inbox: a random uuid, like the
-- preloaded ids (md5-derived), so that it lands anywhere in the index.
SELECT inbox.claim('growth_inbox', gen_random_uuid());
