# The payment consumer the replication tests (test/t/030, 031) deliver to: message
# m<n> credits account 1 with n through claim_apply on the inbox "payments", and
# notes in the ledger which message did it, so that a double application shows per
# message and not only in the sum.
package Payments;

use strict;
use warnings;
use Exporter 'import';

our @EXPORT = qw(deliver_sql sum_of);

my $effect =
  'WITH credit AS (UPDATE accounts SET balance = balance + $2 WHERE id = 1) '
  . 'INSERT INTO ledger VALUES ($1, $2)';

# The SQL that delivers message m<n>.
sub deliver_sql
{
	my ($n) = @_;
	return "SELECT inbox.claim_apply('payments', 'm$n', '$effect', 'm$n', $n)";
}

sub sum_of { my $s = 0; $s += $_ foreach @_; return $s; }

1;
