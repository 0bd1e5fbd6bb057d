-- Issue 9, item 2: a database owner who is not a superuser pre-creates schema inbox
-- with operators the install script would have picked over the built-in ones (no
-- built-in operator takes regtype, regclass or regprocedure exactly).  A superuser's
-- CREATE EXTENSION must fail, and the owner's function must never run.
\set SHOW_CONTEXT never
\set regress_db :DBNAME

CREATE ROLE regress_capture_owner;
CREATE DATABASE regress_inbox_capture OWNER regress_capture_owner;
\c regress_inbox_capture
SET ROLE regress_capture_owner;
CREATE TABLE public.captured (fn text, run_as name, was_superuser boolean);
GRANT INSERT ON public.captured TO PUBLIC;
CREATE SCHEMA inbox;
GRANT USAGE ON SCHEMA inbox TO PUBLIC;
-- Each records who ran it, then answers like the built-in comparison.
CREATE FUNCTION inbox.eq_regtype(regtype, regtype) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.captured
    SELECT 'eq_regtype', current_user, rolsuper FROM pg_roles WHERE rolname = current_user;
    RETURN $1::oid = $2::oid;
END $$;
CREATE FUNCTION inbox.eq_oid_regclass(oid, regclass) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.captured
    SELECT 'eq_oid_regclass', current_user, rolsuper FROM pg_roles WHERE rolname = current_user;
    RETURN $1 = $2::oid;
END $$;
CREATE FUNCTION inbox.eq_oid_regprocedure(oid, regprocedure) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.captured
    SELECT 'eq_oid_regprocedure', current_user, rolsuper FROM pg_roles WHERE rolname = current_user;
    RETURN $1 = $2::oid;
END $$;
CREATE OPERATOR inbox.= (LEFTARG = regtype, RIGHTARG = regtype, FUNCTION = inbox.eq_regtype);
CREATE OPERATOR inbox.= (LEFTARG = oid, RIGHTARG = regclass, FUNCTION = inbox.eq_oid_regclass);
CREATE OPERATOR inbox.= (LEFTARG = oid, RIGHTARG = regprocedure, FUNCTION = inbox.eq_oid_regprocedure);
-- The owner may also put the schema first on everyone's path.
ALTER DATABASE regress_inbox_capture SET search_path = inbox, public;
RESET ROLE;
\c regress_inbox_capture

-- The superuser installs the extension: refused, with the reason.
CREATE EXTENSION idempotent_inbox;
\echo :SQLSTATE
SELECT count(*) AS extensions FROM pg_extension WHERE extname = 'idempotent_inbox';

-- Had the schema been adopted, these calls would have run the owner's operators as
-- superuser (the registry's CHECK, the joins of inbox.inboxes and inbox.stats, the
-- filter of inbox.state_machines).  Here they fail: there is no extension.  (Terse:
-- the hint for a missing function differs between versions.)
\set VERBOSITY terse
SELECT inbox.create_inbox('public.victim', 'text');
SELECT count(*) FROM inbox.inboxes;
SELECT count(*) FROM inbox.stats;
SELECT count(*) FROM inbox.state_machines;
\set VERBOSITY default

-- Nothing of the owner's ran, as superuser or otherwise.
SELECT fn, run_as, was_superuser FROM public.captured;

-- Once the schema is gone, the same superuser installs the extension.  The owner
-- puts the same operators in public, first on the database's path now: the
-- extension's objects use the built-in operators all the same.
DROP SCHEMA inbox CASCADE;
SET ROLE regress_capture_owner;
ALTER DATABASE regress_inbox_capture SET search_path = public;
CREATE FUNCTION public.eq_regtype(regtype, regtype) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.captured
    SELECT 'eq_regtype', current_user, rolsuper FROM pg_roles WHERE rolname = current_user;
    RETURN $1::oid = $2::oid;
END $$;
CREATE FUNCTION public.eq_oid_regclass(oid, regclass) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.captured
    SELECT 'eq_oid_regclass', current_user, rolsuper FROM pg_roles WHERE rolname = current_user;
    RETURN $1 = $2::oid;
END $$;
CREATE FUNCTION public.eq_oid_regprocedure(oid, regprocedure) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.captured
    SELECT 'eq_oid_regprocedure', current_user, rolsuper FROM pg_roles WHERE rolname = current_user;
    RETURN $1 = $2::oid;
END $$;
CREATE OPERATOR public.= (LEFTARG = regtype, RIGHTARG = regtype, FUNCTION = public.eq_regtype);
CREATE OPERATOR public.= (LEFTARG = oid, RIGHTARG = regclass, FUNCTION = public.eq_oid_regclass);
CREATE OPERATOR public.= (LEFTARG = oid, RIGHTARG = regprocedure, FUNCTION = public.eq_oid_regprocedure);
RESET ROLE;
\c regress_inbox_capture
CREATE EXTENSION idempotent_inbox;
SELECT inbox.create_inbox('public.victim', 'text');
SELECT inbox.claim('public.victim', 'm1');
CREATE TABLE public.machine (id int PRIMARY KEY, state text);
SELECT inbox.guard_transitions('public.machine', 'state', '{"A": ["B"]}');
SELECT count(*) FROM inbox.inboxes;
SELECT count(*) FROM inbox.stats;
SELECT count(*) FROM inbox.state_machines;
DROP TABLE public.victim;
SELECT fn, run_as, was_superuser FROM public.captured;

\c :regress_db
DROP DATABASE regress_inbox_capture;
DROP ROLE regress_capture_owner;
