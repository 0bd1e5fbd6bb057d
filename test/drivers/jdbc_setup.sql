-- The one role the JDBC test logs in as over TCP (test/harness/suites, drivers_jdbc):
-- its password comes from the environment, never a command line, and is stored as a
-- SCRAM verifier.  listen_addresses takes effect at the restart that follows.
\set ON_ERROR_STOP on
\getenv pw INBOX_JDBC_PASSWORD
SET password_encryption = 'scram-sha-256';
CREATE ROLE :"role" LOGIN PASSWORD :'pw';
GRANT CREATE ON SCHEMA public TO :"role";
ALTER SYSTEM SET listen_addresses = '127.0.0.1';
